"""The ``pyexpr`` pass: element deletion, hoisting, unwrapping definitions, body joins (in-process
predicates)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.passes.pyexpr import (
    PythonExpressions,
    element_edits,
    hoist_edits,
    join_edits,
    unwrap_edits,
)
from repomin.passes.textedit import compiles, splice
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, reduce_in_process, text_tree


def applied(data: bytes, edits: Iterable[object]) -> set[bytes]:
    return {splice(data, [(e.start, e.end, e.text)]) for e in edits}  # type: ignore[attr-defined]


def test_element_deletion_of_lists_dicts_calls_and_singletons() -> None:
    data = b'E = ["add 1 2", "root 16"]\nD = {"a": 1, "b": [2]}\nf(1, k=2)\nT = (x,)\n'
    out = applied(data, element_edits(data, ast.parse(data)))
    assert b'E = ["root 16"]\nD = {"a": 1, "b": [2]}\nf(1, k=2)\nT = (x,)\n' in out
    assert b'E = ["add 1 2"]\nD = {"a": 1, "b": [2]}\nf(1, k=2)\nT = (x,)\n' in out
    assert b'E = ["add 1 2", "root 16"]\nD = {"b": [2]}\nf(1, k=2)\nT = (x,)\n' in out
    assert b'E = ["add 1 2", "root 16"]\nD = {"a": 1, "b": []}\nf(1, k=2)\nT = (x,)\n' in out
    assert b'E = ["add 1 2", "root 16"]\nD = {"a": 1, "b": [2]}\nf(1)\nT = (x,)\n' in out
    assert b'E = ["add 1 2", "root 16"]\nD = {"a": 1, "b": [2]}\nf(k=2)\nT = (x,)\n' in out
    assert b'E = ["add 1 2", "root 16"]\nD = {"a": 1, "b": [2]}\nf(1, k=2)\nT = ()\n' in out
    assert all(compiles(candidate) for candidate in out)


def test_hoisting_conditional_boolean_and_binary_expressions() -> None:
    data = b"v = R[() if False else name]\nw = a or b\nz = -(p + q)\n"
    out = applied(data, hoist_edits(data, ast.parse(data)))
    assert b"v = R[name]\nw = a or b\nz = -(p + q)\n" in out
    assert b"v = R[()]\nw = a or b\nz = -(p + q)\n" in out
    assert b"v = R[() if False else name]\nw = b\nz = -(p + q)\n" in out
    assert b"v = R[() if False else name]\nw = a or b\nz = p + q\n" in out
    assert len(out) == 5  # arithmetic is not hoisted (p + q stays whole)


def test_join_only_bodies_of_simple_one_line_statements() -> None:
    data = (
        b"def f(x):\n    y = x\n    return y\n"
        b"class C:\n    def g(self):\n        pass\n"
        b"if a:\n    b()\nelse:\n    c()\n"
        b"for i in r:  # note\n    print(i)\n"
    )
    out = applied(data, join_edits(data, ast.parse(data)))
    assert b"def f(x): y = x; return y\n" + data[data.index(b"class") :] in out
    joined_method = data.replace(b"def g(self):\n        pass", b"def g(self): pass")
    assert joined_method in out
    assert len(out) == 2  # not the class (compound body), the if/else, or the commented header
    assert all(compiles(candidate) for candidate in out)


def test_definitions_unwrap_into_their_dedented_bodies_decorators_and_all() -> None:
    data = (
        b"import inspect\n"
        b"@cache\n"
        b"def sig(func):\n"
        b"    inspect.formatargspec(\n"
        b"        func)\n"
        b"class C:\n"
        b"    async def m(self): pass\n"
        b"    def n(self):\n"
        b"        return 1\n"
        b"def one(): pass\n"
    )
    edits = unwrap_edits(data, ast.parse(data))
    assert [e.what for e in edits] == [
        "unwrap def sig at line 3",
        "unwrap class C at line 6",
        "unwrap def n at line 8",
    ]  # not m or one: their bodies sit on the header's line
    out = applied(data, edits)
    assert (
        data.replace(
            b"@cache\ndef sig(func):\n    inspect.formatargspec(\n    ", b"inspect.formatargspec(\n"
        )
        in out
    )
    assert (
        data.replace(
            b"class C:\n    async def m(self): pass\n    def n(self):\n        return 1\n",
            b"async def m(self): pass\ndef n(self):\n    return 1\n",
        )
        in out
    )
    assert data.replace(b"    def n(self):\n        return 1\n", b"    return 1\n") in out
    # a candidate that would not compile (return outside a function) is never proposed
    seen: list[bytes] = []
    reduce_in_process(
        PythonExpressions(),
        text_tree({"m.py": data}),
        lambda t: seen.append(t["m.py"].data) and False,
    )
    assert len(seen) > 3 and all(compiles(candidate) for candidate in seen)


def test_unwrapping_hoists_a_failing_call_out_of_its_function() -> None:
    """mock 1.0.1's shape: the failing call sits in a function that an import-time call
    reaches; unwrapped, the call fails at import, and the definitions around it can go."""
    mod = b"import inspect\ndef _sig(f):\n    inspect.formatargspec(\n        )\nX = 1\n"

    def fails(tree: Tree) -> bool:
        data = tree.entries["mock.py"].data if "mock.py" in tree.entries else b""
        try:
            module = ast.parse(data)
        except SyntaxError:
            return False
        top = [n for n in module.body if isinstance(n, ast.Expr)]
        return any(b"formatargspec" in ast.unparse(n).encode() for n in top) or b"def _sig" in data

    problem = reduce_in_process(PythonExpressions(), text_tree({"mock.py": mod}), fails)
    assert (
        problem.current.entries["mock.py"].data
        == b"import inspect\ninspect.formatargspec(\n    )\nX = 1\n"
    )


def test_fstring_nodes_are_not_edited() -> None:
    data = b'x = f"{a or b}"\n'
    assert hoist_edits(data, ast.parse(data)) == []


CLI = b"""import calc.ops
from registry import lookup
EXPRESSIONS = ["add 1 2", "root 16"]
def main():
    for text in EXPRESSIONS:
        lookup(text.split()[0])
main()
"""


def _fails(tree: Tree) -> bool:
    """The calculator's bug, modelled: names are looked up in order; ``add`` is registered only
    while ``import calc.ops`` is there; the failure is the first unknown name being ``root``."""
    data = tree.entries["cli.py"].data if "cli.py" in tree.entries else b""
    try:
        module = ast.parse(data)
    except SyntaxError:
        return False
    lists = [n for n in ast.walk(module) if isinstance(n, ast.List)]
    if len(lists) != 1 or b"lookup(" not in data or b"main()\n" not in data:
        return False
    registered = {"add"} if b"import calc.ops" in data else set()
    for element in lists[0].elts:
        if not isinstance(element, ast.Constant) or not isinstance(element.value, str):
            return False
        name = element.value.split()[0]
        if name not in registered:
            return name == "root"
    return False


def test_pass_removes_the_list_element_that_keeps_an_import_alive() -> None:
    assert _fails(text_tree({"cli.py": CLI}))
    problem = reduce_in_process(PythonExpressions(), text_tree({"cli.py": CLI}), _fails)
    final = problem.current.entries["cli.py"].data
    assert b'["root 16"]' in final and b"for text in EXPRESSIONS: lookup" in final
    # the pass itself never deletes statements: that is the python pass's job
    assert b"import calc.ops" in final


def test_each_file_content_is_swept_once() -> None:
    pass_ = PythonExpressions()
    tree = text_tree({"a.py": b"x = [1, 2]\n"})
    first = reduce_in_process(pass_, tree, lambda t: False)
    assert first.calls > 0
    again = reduce_in_process(pass_, tree, lambda t: False)
    assert again.calls == 0 and again.proposed == 0


TEMPLATES = [
    "x = [1, 'a', (2, 3)]",
    "y = {'k': [1], **z}",
    "f(a, *b, c=1, **d)",
    "v = a if b else (c or d)",
    "def g(p):\n    return -p + 1",
    "class K:\n    n = 1\n    m = n * 2",
    "for i in range(3):\n    print(i, end='')",
    "w = not (a and b)",
    "s = f'{x!r:>{w}}' + 'tail'",
    "t = (1,)",
]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=5))
def test_property_every_candidate_compiles_and_is_smaller(parts: list[str]) -> None:
    data = ("\n".join(parts) + "\n").encode()
    module = ast.parse(data)
    edits = [*element_edits(data, module), *hoist_edits(data, module), *join_edits(data, module)]
    for edit in edits:
        new = splice(data, [(edit.start, edit.end, edit.text)])
        assert len(new) < len(data) or edit.text  # deletions shrink
    seen: list[Tree] = []

    def predicate(tree: Tree) -> bool:
        seen.append(tree)
        return False

    reduce_in_process(PythonExpressions(), text_tree({"m.py": data}), predicate)
    for tree in seen:
        candidate = tree.entries["m.py"].data
        assert compiles(candidate) and len(candidate) < len(data)


class _Slots(PredicateProblem):
    """Two batch slots (as the reducer with --jobs 2 and a deterministic command): records
    which files each ``try_first`` call proposed candidates for."""

    batch_width = 2

    def __init__(self, tree: Tree, predicate: object) -> None:
        super().__init__(tree, predicate)  # type: ignore[arg-type]
        self.streams: list[set[str]] = []

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        seen: set[str] = set()

        def noted() -> Iterable[tuple[Tree, str]]:
            for tree, description in candidates:
                seen.add(description.rsplit(" in ", 1)[-1])
                yield tree, description

        try:
            return super().try_first(phase, noted())
        finally:
            self.streams.append(seen)


@settings(max_examples=25, deadline=None)
@given(
    files=st.lists(st.sampled_from(TEMPLATES), min_size=1, max_size=4),
    keep=st.integers(0, 2**16),
)
def test_with_slots_the_files_go_out_in_one_stream_with_the_one_slot_result(
    files: list[str], keep: int
) -> None:
    tree = text_tree({f"m{i}.py": src + "\n" for i, src in enumerate(files)})

    def predicate(t: Tree) -> bool:  # an arbitrary but fixed verdict per tree
        return int(t.digest[:8], 16) % 3 != keep % 3

    one = reduce_in_process(PythonExpressions(), tree, predicate)
    slots, pass_ = _Slots(tree, predicate), PythonExpressions()
    for _ in range(20):
        before = slots.current.digest
        pass_.run(slots)
        if slots.current.digest == before:
            break
    assert slots.current.digest == one.current.digest  # the same proposals in the same order
    assert slots.calls == one.calls


def test_with_slots_a_file_whose_candidates_are_rejected_hands_on_to_the_next() -> None:
    tree = text_tree({"a.py": "x = [1, 2]\n", "b.py": "y = [3, 4]\n"})
    problem = _Slots(tree, lambda t: False)
    PythonExpressions().run(problem)
    assert problem.streams == [{"a.py", "b.py"}]  # one call, both files
