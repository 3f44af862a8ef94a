"""Two-part edits (``pairs``): linking by names and imports, and pairs no single deletion finds."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.passes.pairs import TwoPartEdits, apply_pair, linked_pairs, statement_units
from repomin.passes.textedit import compiles
from repomin.tree import Tree
from tests.unit._pass_harness import reduce_in_process, text_tree


def labels(tree: Tree) -> set[tuple[str, str]]:
    return {(a.label, b.label) for a, b in linked_pairs(tree, set())}


def test_statement_units_define_and_use_names() -> None:
    data = b"import os.path as p\ndef f(x):\n    return p.join(x)\ny = f(1); z = 2\nf(3)\n"
    units = {u.line: u for u in statement_units("m.py", data)}
    assert units[1].defines == {"p"} and units[2].defines == {"f"}
    assert "p" in units[2].uses and "p" in units[3].uses  # the return inside f is a unit too
    assert 4 not in units  # shares its line with another statement
    assert units[5].uses == {"f"} and units[5].span == (data.index(b"f(3)"), len(data))


def test_pairs_link_uses_to_definitions_and_imports_to_files() -> None:
    tree = text_tree(
        {
            "pkg/main.py": "from . import helper\nfrom .util import g\ndef f():\n    pass\nf()\n",
            "pkg/helper.py": "X = 1\n",
            "pkg/util.py": "def g():\n    pass\n",
            "other.py": "import pkg.util\n",
        }
    )
    found = labels(tree)
    assert ("line 5 of pkg/main.py", "line 3 of pkg/main.py") in found  # call + callee
    assert ("line 1 of pkg/main.py", "pkg/helper.py") in found  # relative import + file
    assert ("line 2 of pkg/main.py", "pkg/util.py") in found
    assert ("line 1 of other.py", "pkg/util.py") in found
    # nested units never pair with what contains them
    assert ("line 4 of pkg/main.py", "line 3 of pkg/main.py") not in found


def _collects_everything(tree: Tree) -> bool:
    """A model of a test runner that imports every module: the failure (BUG in main.py) needs
    every import to resolve, and a module that nothing imports breaks collection."""
    if "main.py" not in tree.entries or b"BUG" not in tree.entries["main.py"].data:
        return False
    imported: set[str] = set()
    for entry in tree.entries.values():
        module = ast.parse(entry.data)
        for node in ast.walk(module):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if f"{alias.name}.py" not in tree.entries:
                        return False
                    imported.add(f"{alias.name}.py")
    return all(p == "main.py" or p in imported for p in tree.entries)


def test_an_import_and_its_file_go_together_where_neither_goes_alone() -> None:
    tree = text_tree({"main.py": "import helper\nBUG = 1\n", "helper.py": "A = 1\n"})
    assert _collects_everything(tree)
    alone = [tree.without(["helper.py"]), tree.replace("main.py", b"BUG = 1\n")]
    assert not any(_collects_everything(t) for t in alone)
    problem = reduce_in_process(TwoPartEdits(), tree, _collects_everything)
    assert set(problem.current.entries) == {"main.py"}
    assert problem.current.entries["main.py"].data == b"BUG = 1\n"
    assert problem.calls == 1


def test_large_trees_are_left_alone() -> None:
    tree = text_tree({f"m{i}.py": f"import m{i + 1}\n" for i in range(80)})
    problem = reduce_in_process(TwoPartEdits(), tree, lambda t: True)
    assert problem.proposed == 0


NAMES = ["a", "b", "c"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["def", "call", "assign", "import"]), st.sampled_from(NAMES)),
        min_size=1,
        max_size=8,
    )
)
def test_property_pairs_are_disjoint_and_candidates_compile(parts: list[tuple[str, str]]) -> None:
    lines = []
    for kind, name in parts:
        lines.append(
            {
                "def": f"def {name}():\n    return {name}\n",
                "call": f"{name}()\n",
                "assign": f"{name} = {NAMES[0]}\n",
                "import": f"import {name}\n",
            }[kind]
        )
    files = {"main.py": "".join(lines), **{f"{n}.py": "" for n in NAMES}}
    tree = text_tree(files)
    for first, second in linked_pairs(tree, set()):
        assert first is not second
        candidate = apply_pair(tree, (first, second))
        if candidate is not None and "main.py" in candidate.entries:
            assert compiles(candidate.entries["main.py"].data)
            assert candidate.byte_count < tree.byte_count or len(candidate) < len(tree)
