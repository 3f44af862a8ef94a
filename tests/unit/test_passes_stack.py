"""The ``stack`` pass: the files a real failing traceback names, what they import, and the one
candidate it proposes (in-process predicates over real pytest and Python output)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import ClassVar

from repomin.passes.stack import StackCut, conftests, kept_files, stack_files
from repomin.passes.trace import TraceCut
from repomin.search.problem import Problem
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree

#: A package whose test fails three calls deep; pytest (--doctest-modules) imports every module.
PROJECT = {
    "pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
    "setup.py": "from setuptools import setup\nsetup(name='shop')\n",
    "conftest.py": "import shop.plugins\n",
    "shop/__init__.py": "",
    "shop/prices.py": "from shop.rounding import cut\n\n\ndef total(x):\n    return cut(x * 1.2)\n",
    "shop/rounding.py": "def cut(v):\n    return int(v * 100) / 100\n",
    "shop/plugins.py": "from shop import reports\n",
    "shop/reports.py": "def render():\n    return 'r'\n",
    "shop/unused.py": "def other():\n    return 1\n",
    "tests/__init__.py": "",
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef price():\n    return 0.35\n",
    "tests/test_prices.py": (
        "from shop.prices import total\n\n\ndef test_total(price):\n"
        "    assert total(price * 3) == 1.26, 'total mismatch'\n"
    ),
    "tests/test_reports.py": (
        "from shop.reports import render\n\n\ndef test_r():\n    assert render()\n"
    ),
    "README.txt": "shop\n",
}


def _run(tmp_path: Path, argv: list[str]) -> str:
    for rel, text in PROJECT.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode != 0, proc.stdout
    return proc.stdout + proc.stderr


def _pytest(tmp_path: Path, mode: str) -> str:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", mode]
    return _run(tmp_path, argv)


def test_the_stack_of_a_real_pytest_failure_in_long_short_and_native_modes(tmp_path: Path) -> None:
    tree = text_tree(PROJECT)
    for mode in ("--tb=long", "--tb=short", "--tb=native"):
        # An assertion fails in the test itself: what it called has returned.
        stack = stack_files(_pytest(tmp_path, mode), str(tmp_path), tree)
        assert stack == ["tests/test_prices.py"], mode
    deeper = _run(tmp_path, [sys.executable, "-c", "import shop.prices; shop.prices.total(None)"])
    assert stack_files(deeper, str(tmp_path), tree) == ["shop/prices.py"]


def test_what_is_kept_is_the_stack_its_imports_conftests_and_setup(tmp_path: Path) -> None:
    tree = text_tree(PROJECT)
    stack = stack_files(_pytest(tmp_path, "--tb=short"), str(tmp_path), tree)
    assert conftests(["tests/test_prices.py"], tree) == {"conftest.py", "tests/conftest.py"}
    kept = kept_files(tree, stack, [])
    python = {p for p in kept if p.endswith(".py")}
    assert python == {
        "tests/test_prices.py",
        "tests/__init__.py",
        "shop/prices.py",
        "shop/rounding.py",
        "shop/__init__.py",
        "conftest.py",
        "tests/conftest.py",
        "shop/plugins.py",  # the root conftest imports it
        "shop/reports.py",  # ... and it imports this
        "setup.py",
    }
    assert "shop/unused.py" not in kept and "tests/test_reports.py" not in kept


def _fails(tree: Tree) -> bool:
    """The failure: the test, the rounding and the price module are there."""
    return all(p in tree for p in ("tests/test_prices.py", "shop/prices.py", "shop/rounding.py"))


def test_one_candidate_drops_the_python_files_off_the_stack_and_the_cuts_follow(
    tmp_path: Path,
) -> None:
    output = _pytest(tmp_path, "--tb=auto")
    problem = PredicateProblem(text_tree(PROJECT), _fails)
    cut = StackCut([(output, str(tmp_path))])
    ran: list[str] = []

    class Cut:
        name: ClassVar[str] = "refs"

        def run(self, problem: Problem) -> None:
            ran.append("refs")

    cut.bind({"refs": Cut(), "trace": TraceCut(None)})
    cut.run(problem)
    assert problem.calls == 1
    assert problem.accepted == [
        ("stack", "keep the Python files on the failing stack (1) and what they import")
    ]
    current = set(problem.current.entries)
    assert "shop/unused.py" not in current and "tests/test_reports.py" not in current
    assert {"README.txt", "pytest.ini", "tests/conftest.py"} <= current  # not Python / fixtures
    assert ran == ["refs"]
    cut.run(problem)
    assert problem.calls == 1  # once per reduction


def test_a_protected_file_stays_and_a_rejected_candidate_changes_nothing(tmp_path: Path) -> None:
    output = _pytest(tmp_path, "--tb=short")
    guarded = PredicateProblem(
        text_tree(PROJECT), _fails, protected=lambda p: p == "shop/unused.py"
    )
    StackCut([(output, str(tmp_path))]).run(guarded)
    assert "shop/unused.py" in guarded.current
    assert "tests/test_reports.py" not in guarded.current
    refused = PredicateProblem(text_tree(PROJECT), lambda tree: "shop/unused.py" in tree)
    StackCut([(output, str(tmp_path))]).run(refused)
    assert refused.calls == 1 and refused.current == text_tree(PROJECT)


def test_nothing_is_proposed_without_a_python_stack_in_the_tree() -> None:
    problem = PredicateProblem(text_tree(PROJECT), lambda tree: True)
    StackCut([("TypeError: x\n    at f (/tmp/w/a.js:1:1)\n", "/tmp/w")]).run(problem)
    assert problem.calls == 0
