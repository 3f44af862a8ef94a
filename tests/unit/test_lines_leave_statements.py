"""The ``lines`` pass leaves a Python file's one-line statements to the ``python`` pass.

Deleting a line that is a whole statement of its own is the very candidate of the statement
search, which tests every statement alone against the tree it ends with; a line search after
it tested each such line again. With ``python`` scheduled (``DeleteLines.bind``) those lines
are not units of the line search; the lines inside multi-line statements and every line of a
file the statement search does not reduce still are. The statement search goes down the
bodies level by level, so it tries once more, at its end, a one-line binding an upper level
kept while a reader below still loaded its name, once nothing loads it. Under a flaky oracle
the one-line bindings stay line units and there is no such search (the decision before).
"""

from __future__ import annotations

import ast
from pathlib import Path

from repomin.analysis.trace import TraceResult
from repomin.app.options import ReduceOptions
from repomin.app.pass_instances import pass_instances
from repomin.failure.contract import FailureSpec
from repomin.passes.lines import DeleteLines
from repomin.passes.python_ast import PythonReduce
from repomin.passes.python_names import loaded_names
from repomin.passes.python_source import PySource
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, reduce_with_reduction, text_tree

SOURCE = b"""\
import os
os.getcwd()
VALUES = [
    1,
    2,
]
a = 1; b = 2
class Box:
    size = 3
    def area(self):
        x = self.size
        assert x
        return x * (
            x
        )
if a:
    print(a)
"""
#: The one-line statements: held for the ``python`` pass.
HELD = {
    b"import os\n",
    b"os.getcwd()\n",
    b"a = 1; b = 2\n",
    b"    size = 3\n",
    b"        x = self.size\n",
    b"        assert x\n",
    b"    print(a)\n",
}


def test_one_line_units_are_the_statements_alone_on_their_line_at_every_depth() -> None:
    src = PySource.parse(SOURCE)
    assert src is not None
    units = sorted(SOURCE[u.start : u.end].decode() for u in src.one_line_units())
    assert units == sorted(
        [
            "import os\n",
            "os.getcwd()\n",
            "a = 1; b = 2\n",
            "    size = 3\n",
            "        x = self.size\n",
            "        assert x\n",
            "    print(a)\n",
        ]
    )


def _lines(bound: bool) -> DeleteLines:
    lines = DeleteLines()
    if bound:
        lines.bind({"python": PythonReduce(), "lines": lines})
    return lines


def test_with_python_scheduled_no_candidate_deletes_a_held_line_alone() -> None:
    tree = text_tree({"m.py": SOURCE, "notes.txt": "one\ntwo\n"})
    asked: list[Tree] = []  # every candidate rejected, every one recorded
    problem = PredicateProblem(tree, lambda t: asked.append(t) or False)  # type: ignore[func-returns-value]
    _lines(True).run(problem)
    for t in asked:
        if "m.py" in t and t["m.py"].data != SOURCE:
            gone = set(SOURCE.splitlines(keepends=True)) - set(t["m.py"].data.splitlines(True))
            assert not gone & HELD, gone
    assert any(t["notes.txt"].data == b"two\n" for t in asked if "notes.txt" in t)
    assert any(b"    2,\n" not in t["m.py"].data for t in asked)  # an element line is a unit


def test_without_python_every_line_is_a_unit_as_before() -> None:
    tree = text_tree({"m.py": SOURCE})
    asked: list[Tree] = []
    problem = PredicateProblem(tree, lambda t: asked.append(t) or False)  # type: ignore[func-returns-value]
    _lines(False).run(problem)
    assert any(b"import os\n" not in t["m.py"].data for t in asked)


def test_a_file_the_statement_search_does_not_reduce_keeps_every_line_a_unit() -> None:
    broken = b"import os\nx = (\n"  # does not compile: the python pass leaves it alone
    asked: list[Tree] = []
    tree = text_tree({"m.py": broken})
    problem = PredicateProblem(tree, lambda t: asked.append(t) or False)  # type: ignore[func-returns-value]
    _lines(True).run(problem)
    assert any(t["m.py"].data == b"x = (\n" for t in asked)


def _needs(tree: Tree) -> bool:
    data = tree.entries["m.py"].data if "m.py" in tree else b""
    return all(s in data for s in (b"x = self.size", b"    2,", b"import os", b"assert x"))


def test_python_then_lines_keep_the_same_result_with_fewer_runs() -> None:
    """The statement search then the line search, through the real reducer: the same payload
    with the lines held as without, in fewer predicate calls."""
    tree = text_tree({"m.py": SOURCE})
    results = {}
    for bound in (False, True):
        passes = {"python": PythonReduce(), "lines": _lines(bound)}
        final, ledger = reduce_with_reduction(passes, tree, _needs)  # type: ignore[arg-type]
        results[bound] = (final["m.py"].data, ledger.phases["lines"].oracle_samples)
    assert results[True][0] == results[False][0]
    assert _needs(text_tree({"m.py": results[True][0]}))
    assert results[True][1] < results[False][1], results


def test_a_reduction_tells_the_line_search_whether_python_runs(tmp_path: Path) -> None:
    def lines_of(schedule: tuple[str, ...]) -> DeleteLines:
        options = ReduceOptions(
            src=tmp_path,
            output=tmp_path / "out",
            command="true",
            spec=FailureSpec(match="BUG"),
            schedule=schedule,
        )
        instances = pass_instances(options, TraceResult("none", None, "off"))
        lines = instances["lines"]
        inner = getattr(lines, "inner", lines)  # wrapped when ``ordered`` runs too
        assert isinstance(inner, DeleteLines)
        return inner

    assert lines_of(("ordered", "python", "lines")).statements_elsewhere
    assert lines_of(("python", "lines")).statements_elsewhere
    assert not lines_of(("blocks", "lines")).statements_elsewhere


FREED = b"""\
import os
import re
def area():
    x = os.sep
    y = re.compile
    return 1
VALUE = area()
"""


def _freed_needs(tree: Tree) -> bool:
    """VALUE stays; a module that reads ``os.``/``re.`` without importing it fails (as a
    ``NameError`` would); ``re.compile`` is what the failure needs."""
    data = tree.entries["m.py"].data if "m.py" in tree else b""
    for name in (b"os", b"re"):
        if name + b"." in data and b"import " + name + b"\n" not in data:
            return False
    return b"VALUE = area()" in data and b"re.compile" in data


def test_the_statement_search_tries_a_binding_again_once_its_reader_below_is_gone() -> None:
    """``import os`` is rejected at the module level while ``area`` reads ``os.sep``; the
    level below deletes that read; the same run of the pass then deletes the import, while
    ``import re``, still read, is not tried again."""
    tree = text_tree({"m.py": FREED})
    problem = PredicateProblem(tree, _freed_needs)
    PythonReduce().run(problem)
    data = problem.current["m.py"].data
    assert b"import os" not in data and b"os.sep" not in data
    assert b"import re\n" in data and b"re.compile" in data
    tried = [d for _, d in problem.accepted]
    assert tried[-1].startswith("delete statements at line 1 ")


def test_loaded_names_count_later_bodies_attributes_and_all() -> None:
    module = ast.parse(
        "import os\n__all__ = ['exported']\nclass Box:\n    def area(self):\n"
        "        return self.size * os.sep\nx = 1\n"
    )
    names = loaded_names(module)
    assert {"os", "size", "self", "exported"} <= names
    assert "x" not in names and "Box" not in names


class _Flaky(PredicateProblem):
    """A problem whose oracle can reject a good candidate (a flaky failure)."""

    @property
    def miss_rate(self) -> float:
        return 0.4


#: The one-line statements that bind no name: under a flaky oracle the only ones held.
HELD_FLAKY = {b"os.getcwd()\n", b"        assert x\n", b"    print(a)\n"}


def test_under_a_flaky_oracle_the_line_search_keeps_the_bindings() -> None:
    """A rejection by a flaky oracle may be a miss: the one-line bindings stay line units (a
    second chance), the other one-line statements are still held."""
    tree = text_tree({"m.py": SOURCE})
    asked: list[Tree] = []
    problem = _Flaky(tree, lambda t: asked.append(t) or False)  # type: ignore[func-returns-value]
    _lines(True).run(problem)
    gone_alone = set()
    for t in asked:
        if "m.py" in t and t["m.py"].data != SOURCE:
            gone = set(SOURCE.splitlines(keepends=True)) - set(t["m.py"].data.splitlines(True))
            assert not gone & HELD_FLAKY, gone
            if len(gone) == 1:
                gone_alone |= gone
    assert {b"import os\n", b"    size = 3\n"} <= gone_alone


def test_under_a_flaky_oracle_the_statement_search_does_not_try_freed_bindings() -> None:
    """The freed-binding search is for a deterministic oracle: under a flaky one the line
    search tries the bindings again, so the statement search ends with its levels."""
    problem = _Flaky(text_tree({"m.py": FREED}), _freed_needs)
    PythonReduce().run(problem)
    data = problem.current["m.py"].data
    assert b"os.sep" not in data and b"import os\n" in data
