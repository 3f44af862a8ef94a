"""The ``normalise`` pass: comments, blank lines and docstrings out, per language, batched by
ddmin."""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repomin.passes.normalise import Normalise, normalised, without_docstrings
from repomin.tree import Tree, materialise
from tests.unit._pass_harness import PredicateProblem, text_tree


def test_python_keeps_shebang_coding_and_string_contents() -> None:
    source = (
        b"#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\nx = 1  # note\n\n# full line\n"
        b's = """a\n\n# not a comment\n"""\n'
    )
    assert normalised("a.py", source) == (
        b'#!/usr/bin/env python\n# -*- coding: utf-8 -*-\nx = 1\ns = """a\n\n# not a comment\n"""\n'
    )


def test_python_that_does_not_tokenize_is_skipped() -> None:
    assert normalised("a.py", b'x = """open\n') is None


def test_clike_comments_strings_and_token_gluing() -> None:
    source = b'/* head */\n#include <x.h>\n\nint a/**/b; // c\nchar *s = "// no";\n'
    assert normalised("a.c", source) == b'#include <x.h>\nint a b;\nchar *s = "// no";\n'


def test_js_template_literal_blank_lines_stay() -> None:
    source = b"const t = `a\n\nb`;\n\n// c\nf();\n"
    assert normalised("a.js", source) == b"const t = `a\n\nb`;\nf();\n"


def test_hash_languages() -> None:
    assert normalised("run.sh", b"#!/bin/sh\n# c\n\necho '#x'\n") == b"#!/bin/sh\necho '#x'\n"
    dockerfile = b"# syntax=docker/dockerfile:1\n# note\nFROM x\n\nRUN y\n"
    assert normalised("Dockerfile", dockerfile) == b"# syntax=docker/dockerfile:1\nFROM x\nRUN y\n"
    assert normalised("c.yaml", b"a: 1  # stays: not whole-line\n") is None


def test_unknown_and_unchanged_files() -> None:
    assert normalised("README.md", b"# Title\n\ntext\n") is None
    assert normalised("a.py", b"x = 1\n") is None


def test_one_candidate_for_all_files_when_accepted() -> None:
    tree = text_tree({"a.py": "x = 1\n\n# c\n", "b.c": "int x; // c\n", "c.sh": "# c\nls\n"})
    problem = PredicateProblem(tree, lambda t: True)
    Normalise().run(problem)
    assert problem.calls == 1 and len(problem.accepted) == 1
    assert problem.current["b.c"].data == b"int x;\n"


def test_batch_splits_on_rejection() -> None:
    tree = text_tree({"a.py": "x = 1\n\n# c\n", "b.c": "int x; // KEEP\n", "c.sh": "# c\nls\n"})
    problem = PredicateProblem(tree, lambda t: b"KEEP" in t["b.c"].data)
    Normalise().run(problem)
    assert problem.current["b.c"].data == b"int x; // KEEP\n"
    assert problem.current["a.py"].data == b"x = 1\n"
    assert problem.current["c.sh"].data == b"ls\n"


def test_kept_files_are_not_normalised() -> None:
    tree = text_tree({"a.py": "x = 1\n\n"})
    problem = PredicateProblem(tree, lambda t: True, protected=lambda p: True)
    Normalise().run(problem)
    assert problem.proposed == 0


LINES = ["x = 1", "# comment", "", "def f():", "    return 2  # trailing", 's = """\n\n#x\n"""']


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.sampled_from(LINES), max_size=12))
def test_property_python_ast_unchanged(parts: list[str]) -> None:
    source = "\n".join(p for p in parts) + "\n"
    try:
        before = ast.dump(ast.parse(source))
    except SyntaxError:
        return
    new = normalised("m.py", source.encode())
    after = source.encode() if new is None else new
    assert ast.dump(ast.parse(after)) == before
    assert len(after) <= len(source.encode())
    assert normalised("m.py", after) is None  # stable


def test_pass_is_stable() -> None:
    tree: Tree = text_tree({"a.py": "x = 1\n\n# c\n"})
    problem = PredicateProblem(tree, lambda t: True)
    Normalise().run(problem)
    before = problem.proposed
    Normalise().run(problem)
    assert problem.proposed == before


def test_refused_file_not_proposed_again_until_it_changes() -> None:
    tree = text_tree({"b.c": "int x; // KEEP\n", "other.txt": "o\n"})
    problem = PredicateProblem(tree, lambda t: b"KEEP" in t["b.c"].data)
    normalise = Normalise()
    normalise.run(problem)
    assert problem.calls == 1
    problem._current = problem.current.without(["other.txt"])  # another pass changed the tree
    normalise.run(problem)
    assert problem.calls == 1
    problem._current = problem.current.replace("b.c", b"int y; // KEEP\n")
    normalise.run(problem)
    assert problem.calls == 2


DOCUMENTED = b'''"""Module doc."""
import os  # c


class A:
    """Class doc
    on two lines."""


class B:
    "doc"
    y = 1

    def f(self):
        """f doc"""
        return 1


def g(): "inline"
def h():
    "a"; return 2
'''


def test_docstrings_go_with_their_lines_and_an_empty_body_keeps_pass() -> None:
    assert without_docstrings(DOCUMENTED) == (
        b"import os  # c\n\n\nclass A:\n    pass\n\n\nclass B:\n    y = 1\n\n"
        b"    def f(self):\n        return 1\n\n\n"
        b'def g(): "inline"\ndef h():\n    "a"; return 2\n'
    )
    assert without_docstrings(b"x = 1\n") is None
    assert without_docstrings(b"def f(:\n") is None


def test_docstrings_are_their_own_unit_kept_when_a_program_reads_them() -> None:
    """A program that prints its ``__doc__`` keeps its docstrings; its comments still go."""
    source = '"""usage: tool ARGS"""\n# a comment\nprint(__doc__)\n'
    tree = text_tree({"tool.py": source, "lib.py": '"""lib"""\n# c\nx = 1\n'})
    problem = PredicateProblem(tree, lambda t: b"usage" in t["tool.py"].data)
    normalise = Normalise()
    normalise.run(problem)
    assert problem.current["tool.py"].data == b'"""usage: tool ARGS"""\nprint(__doc__)\n'
    assert problem.current["lib.py"].data == b"x = 1\n"
    before = problem.proposed
    normalise.run(problem)  # the refused unit is not proposed again
    assert problem.proposed == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.sampled_from([*LINES, '"""doc"""', "class C:", '    "c"']), max_size=12))
def test_property_without_docstrings_compiles_and_is_stable(parts: list[str]) -> None:
    source = ("\n".join(parts) + "\n").encode()
    try:
        ast.parse(source)
    except SyntaxError:
        return
    new = without_docstrings(source)
    if new is None:
        return
    assert len(new) < len(source)
    compile(new, "m.py", "exec")

    # Only string statements went (and ``pass`` may have come): every other statement stays.
    def others(data: bytes) -> list[str]:
        return [
            type(n).__name__
            for n in ast.walk(ast.parse(data))
            if isinstance(n, ast.stmt)
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
            and not isinstance(n, ast.Pass)
        ]

    assert others(new) == others(source)


def test_a_failing_doctest_keeps_its_docstring_under_real_pytest(tmp_path: Path) -> None:
    """pytest ``--doctest-modules`` fails on a docstring's example: the docstrings of that file
    stay (without them pytest collects nothing and exits 5), its comment and the other file's
    docstring go."""
    calc = (
        '"""Arithmetic."""\n# a comment\n\n\ndef double(x):\n'
        '    """Twice x.\n\n    >>> double(2)\n    5\n    """\n    return 2 * x\n'
    )
    other = '"""Helpers."""\n\n\ndef one():\n    """One."""\n    return 1\n'
    tree = text_tree({"calc.py": calc, "other.py": other})

    def fails(candidate: Tree) -> bool:
        with tempfile.TemporaryDirectory(dir=tmp_path) as root:
            materialise(candidate, Path(root))
            run = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "--doctest-modules", "calc.py", "other.py"],
                cwd=root, capture_output=True, timeout=120,
            )  # fmt: skip
        return run.returncode == 1 and b"Expected:\n    5\nGot:\n    4" in run.stdout

    assert fails(tree)
    problem = PredicateProblem(tree, fails)
    Normalise().run(problem)
    data = problem.current["calc.py"].data
    assert b">>> double(2)" in data and b"# a comment" not in data
    assert problem.current["other.py"].data == b"def one():\n    return 1\n"
    assert fails(problem.current)


def test_variants_are_computed_once_per_content(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every round reads every text file: a file whose content did not change is not parsed
    again (its variants are kept for its current content only)."""
    import repomin.passes.normalise as module

    calls: list[str] = []
    real = module._variants

    def counting(path: str, data: bytes) -> dict[frozenset[str], bytes]:
        calls.append(path)
        return real(path, data)

    monkeypatch.setattr(module, "_variants", counting)
    tree = text_tree({"tool.py": '"""usage"""\nprint(__doc__)\n', "b.py": "x = 1\n"})
    problem = PredicateProblem(tree, lambda t: b"usage" in t["tool.py"].data)
    normalise = Normalise()
    normalise.run(problem)
    normalise.run(problem)
    assert sorted(calls) == ["b.py", "tool.py"]
    problem._current = problem.current.replace("b.py", b"y = 2\n")
    normalise.run(problem)
    assert sorted(calls) == ["b.py", "b.py", "tool.py"]
