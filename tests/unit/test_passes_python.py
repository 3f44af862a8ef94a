"""The ``python`` pass with in-process predicates: statements, pass bodies, unwrapping,
decorators, import names; syntax guard; jobs 1 and 2; Hypothesis properties."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repomin.passes.lines import DeleteLines
from repomin.passes.python_ast import PythonReduce
from repomin.passes.textedit import compiles
from repomin.tree import Tree
from tests.unit._pass_harness import (
    PredicateProblem,
    reduce_in_process,
    reduce_with_reduction,
    text_tree,
)

MODULE = '''"""Module docstring."""
import os, sys, json
from collections import OrderedDict, defaultdict

CONSTANT = 3


def identity(f):
    return f


@identity
@identity
def helper(x):
    """Help."""
    y = x + 1
    if y > 2:
        print("big")
    return y


class Engine:
    """An engine."""

    def __init__(self, n):
        self.n = n
        self.cache = {}

    def run(self):
        try:
            value = json.loads("{")
        except KeyError:
            value = None
        return value


def main():
    engine = Engine(3)
    return engine.run()
'''


def exec_error(source: bytes) -> str | None:
    """Name of the exception ``main()`` raises (None if it compiles and returns)."""
    namespace: dict[str, Any] = {}
    try:
        exec(compile(source, "m.py", "exec"), namespace)
        namespace["main"]()
    except Exception as exc:
        return type(exc).__name__
    return None


def fails_like_original(tree: Tree) -> bool:
    return "m.py" in tree and exec_error(tree["m.py"].data) == "JSONDecodeError"


def test_reduces_to_the_failing_core() -> None:
    tree = text_tree({"m.py": MODULE})
    assert fails_like_original(tree)
    problem = reduce_in_process(PythonReduce(), tree, fails_like_original)
    out = problem.current["m.py"].data
    assert fails_like_original(problem.current)
    assert compiles(out)
    text = out.decode()
    for gone in ("helper", "CONSTANT", "OrderedDict", "docstring", "self.cache", "@identity"):
        assert gone not in text
    # try/except unwrapped, imports narrowed to the one name used
    assert "try:" not in text and "import json\n" in text
    assert len(out) < len(MODULE) // 3


def test_every_proposal_compiles() -> None:
    seen: list[bytes] = []

    def predicate(tree: Tree) -> bool:
        seen.append(tree["m.py"].data)
        return fails_like_original(tree)

    reduce_in_process(PythonReduce(), text_tree({"m.py": MODULE}), predicate)
    assert seen and all(compiles(data) for data in seen)


def test_emptied_body_becomes_pass() -> None:
    source = "def f():\n    a = 1\n    b = 2\n    return a + b\n\n\nMARK = f\n"
    tree = text_tree({"m.py": source})
    problem = reduce_in_process(
        PythonReduce(), tree, lambda t: exec_error(t["m.py"].data + b"def main(): MARK\n") is None
    )
    assert problem.current["m.py"].data == b"def f():\n    pass\n\n\nMARK = f\n"


def test_beats_line_deletion_on_pass_bodies() -> None:
    """Lines alone must keep one body line; the python pass can put ``pass`` there."""
    source = "class A:\n    x = 'a long attribute value that is not needed at all'\n\nA()\n"

    def predicate(tree: Tree) -> bool:
        data = tree["m.py"].data
        return compiles(data) and b"class A" in data and b"A()" in data

    by_python = reduce_in_process(PythonReduce(), text_tree({"m.py": source}), predicate)
    by_lines = reduce_in_process(DeleteLines(), text_tree({"m.py": source}), predicate)
    assert by_python.current.byte_count < by_lines.current.byte_count


def test_statements_on_one_line_move_together() -> None:
    source = "a = 1; b = 2\nif a: c = 3\nMARK = 1\n"
    problem = reduce_in_process(
        PythonReduce(), text_tree({"m.py": source}), lambda t: b"MARK" in t["m.py"].data
    )
    assert problem.current["m.py"].data == b"MARK = 1\n"


def test_elif_chain_deleted_without_stray_pass() -> None:
    source = "if x:\n    MARK = 1\nelif x > 1:\n    y = 2\n"
    problem = reduce_in_process(
        PythonReduce(),
        text_tree({"m.py": source}),
        lambda t: compiles(t["m.py"].data) and b"if x:\n    MARK" in t["m.py"].data,
    )
    assert problem.current["m.py"].data == b"if x:\n    MARK = 1\n"


def test_files_that_do_not_compile_are_left_alone() -> None:
    source = "def broken(:\n    pass\nMARK = 1\n"
    problem = reduce_in_process(PythonReduce(), text_tree({"m.py": source}), lambda t: True)
    assert problem.current["m.py"].data == source.encode()
    assert problem.proposed == 0


def test_non_utf8_and_protected_files_untouched() -> None:
    tree = text_tree(
        {"latin.py": b"# -*- coding: latin-1 -*-\ns = '\xe9'\nt = 1\n", "k.py": "a = 1\n"}
    )
    problem = PredicateProblem(tree, lambda t: True, protected=lambda p: p == "k.py")
    PythonReduce().run(problem)
    assert problem.current["k.py"].data == b"a = 1\n"
    assert problem.current["latin.py"].data == tree["latin.py"].data


def test_shebang_script_without_suffix_is_python() -> None:
    source = "#!/usr/bin/env python3\nimport os\nMARK = 1\n"
    problem = reduce_in_process(
        PythonReduce(), text_tree({"tool": source}), lambda t: b"MARK" in t["tool"].data
    )
    assert problem.current["tool"].data == b"#!/usr/bin/env python3\nMARK = 1\n"


@pytest.mark.parametrize("jobs", [1, 2])
def test_real_reduction_same_result_at_jobs_1_and_2(jobs: int) -> None:
    tree = text_tree({"m.py": MODULE, "other.py": "x = 1\n"})
    result, ledger = reduce_with_reduction(
        {"python": PythonReduce()}, tree, fails_like_original, jobs=jobs
    )
    reference, _ = reduce_with_reduction({"python": PythonReduce()}, tree, fails_like_original)
    assert result.digest == reference.digest
    assert fails_like_original(result)
    counters = ledger.phase("python")
    assert counters.accepted > 0
    assert counters.attempts == (
        counters.no_op + counters.rejected + counters.accepted + counters.superseded
    )


# -- properties --------------------------------------------------------------------------------

SIMPLE = ["x = 1", "y = 2", "print(1)", "import os", "z = [1,\n    2]", '"""doc"""', "MARK = 1"]


@st.composite
def modules(draw: st.DrawFn) -> str:
    def body(depth: int, indent: str) -> list[str]:
        out: list[str] = []
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(["simple", "simple", "def", "if", "class"]))
            if kind == "simple" or depth >= 2:
                stmt = draw(st.sampled_from(SIMPLE))
                out.append(indent + stmt.replace("\n", "\n" + indent))
            else:
                header = {"def": "def f():", "if": "if True:", "class": "class C:"}[kind]
                out.append(indent + header)
                out.extend(body(depth + 1, indent + "    "))
        return out

    return "\n".join(body(0, "")) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=modules())
def test_property_result_interesting_smaller_and_stable(source: str) -> None:
    def predicate(tree: Tree) -> bool:
        data = tree["m.py"].data
        return compiles(data) and data.count(b"MARK") >= min(1, source.count("MARK"))

    tree = text_tree({"m.py": source})
    assert predicate(tree)
    first = reduce_in_process(PythonReduce(), tree, predicate)
    assert predicate(first.current)
    assert first.current.byte_count <= tree.byte_count
    ast.parse(first.current["m.py"].data)
    second = reduce_in_process(PythonReduce(), first.current, predicate)
    assert second.accepted == []
    assert second.current.digest == first.current.digest


def test_an_if_whose_body_never_runs_is_replaced_by_its_else_block() -> None:
    source = (
        "import json\n\n\n"
        "def main(flag=False):\n"
        "    if flag:\n"
        "        ...\n"
        "    else:\n"
        "        value = json.loads('{')\n"
        "    for _ in ():\n"
        "        pass\n"
        "    else:\n"
        "        return value\n"
        "    if flag:\n"
        "        pass\n"
        "    elif not flag:\n"
        "        value = 2\n"
    )
    tree = text_tree({"m.py": source})
    assert fails_like_original(tree)
    problem = reduce_in_process(PythonReduce(), tree, fails_like_original)
    text = problem.current["m.py"].data.decode()
    assert "    value = json.loads('{')\n" in text  # the else, dedented
    assert "if flag" not in text and "else" not in text and "for _" not in text
    assert fails_like_original(problem.current)
