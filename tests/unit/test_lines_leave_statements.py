"""The ``lines`` pass leaves a Python file's one-line statements that bind nothing to ``python``.

Deleting a line that is a whole statement of its own is the very candidate of the statement
search, which tests every statement alone against the tree it ends with; a line search after
it tested each such line again. With ``python`` scheduled (``DeleteLines.bind``) those of them
that bind no name are not units of the line search; a binding statement (which a body the
statement search shrank later may have freed), the lines inside multi-line statements and every
line of a file the statement search does not reduce still are.
"""

from __future__ import annotations

from pathlib import Path

from repomin.analysis.trace import TraceResult
from repomin.app.options import ReduceOptions
from repomin.app.pass_instances import pass_instances
from repomin.failure.contract import FailureSpec
from repomin.passes.lines import DeleteLines
from repomin.passes.python_ast import PythonReduce
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
#: The one-line statements that bind no name: held for the ``python`` pass.
HELD = {b"os.getcwd()\n", b"        assert x\n", b"    print(a)\n"}


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
    assert any(b"import os\n" not in t["m.py"].data for t in asked)  # binds: still a unit
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
