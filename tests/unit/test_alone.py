"""The ``alone`` pass: which test failed, read from real pytest and unittest output, and the one
candidate that keeps it alone in its file (the edit run again under the real runner)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from repomin.passes import DEFAULT_SCHEDULE
from repomin.passes.alone import (
    MAX_BYTES,
    MAX_TESTS,
    AloneCut,
    FailingTest,
    alone_edit,
    failing_tests,
    pytest_test,
    unittest_test,
)
from repomin.search.problem import Problem
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree

#: Five tests (one parametrised, one a unittest case that pytest runs too), one failing: the
#: parametrised method ``TestA::test_four[1-2]``; a fixture, a helper and ``setup_method`` the
#: failing test needs.
PYTEST_FILE = """\
import unittest

import pytest


def helper():
    return 3


@pytest.fixture
def base():
    return helper()


def test_one(base):
    assert base == 3


@pytest.mark.parametrize("v", [1])
def test_two(v):
    assert v


class TestA:
    def setup_method(self):
        self.extra = 1

    def test_three(self):
        assert self.extra

    @pytest.mark.parametrize("a,b", [(1, 2)])
    def test_four(self, base, a, b):
        assert base + a + b + self.extra == 8, "sum mismatch"


class OtherCase(unittest.TestCase):
    def test_five(self):
        self.assertTrue(True)
"""

#: Five unittest tests, one failing (``TestU.test_b``), a ``setUp`` it needs.
UNITTEST_FILE = """\
import unittest


class TestU(unittest.TestCase):
    def setUp(self):
        self.v = 2

    def test_a(self):
        self.assertEqual(self.v, 2)

    def test_b(self):
        self.assertEqual(self.v + 1, 4, "off by one")

    def test_c(self):
        self.assertTrue(self.v)


class MoreCase(unittest.TestCase):
    def test_d(self):
        pass

    def test_e(self):
        pass


if __name__ == "__main__":
    unittest.main()
"""


def _write(root: Path, files: dict[str, str]) -> Tree:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return text_tree(files)


def _run(root: Path, *argv: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, *argv], cwd=root, capture_output=True, text=True, check=False
    )
    return proc.returncode, proc.stdout + proc.stderr


def _pytest(root: Path, *options: str) -> str:
    code, output = _run(root, "-m", "pytest", "-p", "no:cacheprovider", *options)
    assert code == 1, output
    return output


FOUR = FailingTest("tests/test_x.py", ("TestA", "test_four"))


@pytest.mark.parametrize("mode", ["-q", "--tb=auto", "--tb=short", "--tb=native"])
def test_real_pytest_output_names_the_failing_test_and_the_edit_keeps_it_alone(
    tmp_path: Path, mode: str
) -> None:
    tree = _write(tmp_path, {"tests/test_x.py": PYTEST_FILE})
    assert failing_tests(_pytest(tmp_path, mode), str(tmp_path), tree) == [FOUR]
    edited = alone_edit(PYTEST_FILE.encode(), [FOUR.chain])
    assert edited is not None and edited[1] == 4  # test_one, test_two, test_three, OtherCase
    text = edited[0].decode()
    for kept in ("def helper", "def base", "def setup_method", "def test_four", "import unittest"):
        assert kept in text
    for gone in ("test_one", "test_two", "test_three", "OtherCase", "test_five"):
        assert gone not in text


def test_the_edited_file_fails_alone_the_same_way(tmp_path: Path) -> None:
    edited = alone_edit(PYTEST_FILE.encode(), [FOUR.chain])
    assert edited is not None
    _write(tmp_path, {"tests/test_x.py": edited[0].decode()})
    again = _pytest(tmp_path, "-q")
    assert "1 failed in" in again and "FAILED tests/test_x.py::TestA::test_four[1-2]" in again


def test_real_unittest_output_names_the_failing_test_and_the_edit_keeps_it_alone(
    tmp_path: Path,
) -> None:
    files = {"pkg/__init__.py": "", "pkg/test_u.py": UNITTEST_FILE}
    tree = _write(tmp_path, files)
    code, output = _run(tmp_path, "-m", "unittest", "pkg.test_u")
    assert code == 1 and "Ran 5 tests" in output, output
    found = failing_tests(output, str(tmp_path), tree)
    assert found == [FailingTest("pkg/test_u.py", ("TestU", "test_b"))]
    # run as a script, the module is __main__: the stack's file that defines the class
    code, script = _run(tmp_path, "pkg/test_u.py")
    assert code == 1 and "__main__.TestU" in script
    assert failing_tests(script, str(tmp_path), tree) == found
    edited = alone_edit(UNITTEST_FILE.encode(), [("TestU", "test_b")])
    assert edited is not None
    (tmp_path / "pkg" / "test_u.py").write_bytes(edited[0])
    code, again = _run(tmp_path, "-m", "unittest", "pkg.test_u")
    assert code == 1 and "Ran 1 test" in again and "off by one" in again, again
    assert b"def setUp" in edited[0] and b"__main__" in edited[0]


def test_unittest_ids_before_python_3_11_and_with_a_subtest() -> None:
    tree = text_tree({"src/pkg/test_u.py": UNITTEST_FILE})
    want = FailingTest("src/pkg/test_u.py", ("TestU", "test_b"))
    assert unittest_test("test_b (pkg.test_u.TestU)", tree) == want
    assert unittest_test("test_b (pkg.test_u.TestU.test_b) (i=1)", tree) == want
    assert unittest_test("setUpClass (pkg.test_u.TestU)", tree) == FailingTest(
        "src/pkg/test_u.py", ("TestU",)
    )
    for hostile in ("test_b", "test_b (TestU)", "test_b (pkg.nope.TestU)", "x (a.b", "(a.b)"):
        assert unittest_test(hostile, tree) is None, hostile


def test_node_ids_map_to_one_tree_file_or_to_nothing() -> None:
    tree = text_tree({"tests/test_x.py": PYTEST_FILE, "a/test_y.py": "", "b/test_y.py": ""})
    assert pytest_test("tests/test_x.py::TestA::test_four[a::b]", "/w", tree) == FOUR
    assert pytest_test("/w/tests/test_x.py::TestA::test_four", "/w", tree) == FOUR
    assert pytest_test("repo/tests/test_x.py::TestA::test_four", "/w", tree) == FOUR  # rootdir
    assert pytest_test("x.py::test_a", "/w", text_tree({"sub/x.py": ""})) is not None
    for hostile in (
        "../tests/test_x.py::test_one",  # outside the tree
        "/elsewhere/tests/test_x.py::test_one",
        "tests/./test_x.py::test_one",
        "tests/nope.py::test_one",  # no such file
        "test_y.py::test_a",  # two files agree from the end
        "tests/test_x.py",  # a module's error: no test
        "tests/test_x.py::",
        "tests/test_x.py::::test_one",
        "::test_one",
        "tests/test_x.py::TestA::test four",
        "tests/test_x.py::TestA::",
    ):
        assert pytest_test(hostile, "/w", tree) is None, hostile


def test_several_failing_tests_are_all_kept_and_a_base_class_stays() -> None:
    source = (
        "import unittest\n\n\nclass Base(unittest.TestCase):\n    def test_base(self):\n"
        "        pass\n\n\nclass TestA(Base):\n    def test_a(self):\n        pass\n\n"
        "    def test_b(self):\n        pass\n\n\nclass TestB:\n    class TestInner:\n"
        "        def test_c(self):\n            pass\n\n        def test_d(self):\n"
        "            pass\n\n    def test_e(self):\n        pass\n\n\n"
        "def test_f():\n    pass\n\n\ndef test_g(test_data):\n    pass\n\n\n"
        "@pytest.fixture\ndef test_data():\n    return 1\n"
    ).replace("import unittest\n", "import unittest\nimport pytest\n")
    chains = [("TestA", "test_b"), ("TestB", "TestInner", "test_c"), ("test_g",)]
    edited = alone_edit(source.encode(), chains)
    assert edited is not None
    text = edited[0].decode()
    for kept in ("class Base", "def test_base", "test_b", "TestInner", "test_c", "def test_g"):
        assert kept in text
    assert "def test_data" in text  # a fixture, and named by test_g
    for gone in ("def test_a(", "def test_d(", "def test_e(", "def test_f("):
        assert gone not in text
    assert compile(text, "t.py", "exec")


def test_what_a_kept_test_calls_is_kept_through_a_long_chain() -> None:
    n = 2000
    source = (
        "def test_keep():\n    test_0()\n\n\n"
        + "".join(f"def test_{i}():\n    test_{i + 1}()\n\n\n" for i in range(n))
        + f"def test_{n}():\n    pass\n\n\ndef test_other():\n    pass\n"
    )
    edited = alone_edit(source.encode(), [("test_keep",)])
    assert edited is not None and edited[1] == 1
    assert edited[0] == source.removesuffix("\n\ndef test_other():\n    pass\n").encode()


def test_a_class_whose_failing_test_is_inherited_keeps_pass() -> None:
    source = (
        "from base import Checks\n\n\nclass TestX(Checks):\n    def test_a(self):\n"
        "        pass\n\n    def test_b(self):\n        pass\n"
    )
    edited = alone_edit(source.encode(), [("TestX", "test_inherited")])
    assert edited is not None
    assert edited[0] == b"from base import Checks\n\n\nclass TestX(Checks):\n    pass\n"


def test_nothing_is_proposed_for_what_cannot_be_edited() -> None:
    only = "def test_a():\n    assert 0\n"
    assert alone_edit(only.encode(), [("test_a",)]) is None  # nothing else to delete
    assert alone_edit(PYTEST_FILE.encode(), [("test_gone",)]) is None  # not defined here
    assert alone_edit(b"def test_a(:\n", [("test_a",)]) is None  # does not parse
    huge = PYTEST_FILE.encode() + b"# x\n" * (MAX_BYTES // 4)
    assert alone_edit(huge, [FOUR.chain]) is None
    deep = b"def test_a():\n    pass\n\n\ndef test_b():\n    x = " + b"(" * 5000 + b")" * 5000
    assert alone_edit(deep, [("test_a",)]) is None
    assert failing_tests("FAILED ::\nERROR\n\x00garbage::x - \n", "/w", text_tree({})) == []


def test_a_whole_suite_failing_proposes_nothing(tmp_path: Path) -> None:
    many = (
        f"import pytest\n\n\n@pytest.mark.parametrize('i', range({MAX_TESTS + 1}))\n"
        "def test_a(i):\n    assert 0\n\n\ndef test_b():\n    pass\n"
    )
    tree = _write(tmp_path, {"tests/test_x.py": many})
    output = _pytest(tmp_path, "-q", "--tb=no")
    assert f"{MAX_TESTS + 1} failed" in output
    assert failing_tests(output, str(tmp_path), tree) == []
    few = _pytest(tmp_path, "-q", "--tb=no", "-k", "test_a and (0 or 1)")
    assert len(failing_tests(few, str(tmp_path), tree)) == 1  # test_a, whatever the parameter


class _Cut:
    name: ClassVar[str] = "refs"

    def __init__(self) -> None:
        self.ran = 0

    def run(self, problem: Problem) -> None:
        self.ran += 1


def test_the_pass_proposes_one_candidate_once_and_the_cuts_follow(tmp_path: Path) -> None:
    files = {"tests/test_x.py": PYTEST_FILE, "README.txt": "x\n"}
    tree = _write(tmp_path, files)
    output = _pytest(tmp_path, "-q")
    problem = PredicateProblem(
        tree, lambda t: b"def test_four" in t.entries["tests/test_x.py"].data
    )
    cut, refs = AloneCut([(output, str(tmp_path))]), _Cut()
    cut.bind({"refs": refs})
    cut.run(problem)
    assert problem.accepted == [
        ("alone", "delete the other tests of tests/test_x.py (4 definitions)")
    ]
    assert refs.ran == 1 and "README.txt" in problem.current
    cut.run(problem)
    assert problem.calls == 1  # once per reduction
    guarded = PredicateProblem(tree, lambda t: True, protected=lambda p: p == "tests/test_x.py")
    AloneCut([(output, str(tmp_path))]).run(guarded)
    assert guarded.calls == 0
    refused = PredicateProblem(tree, lambda t: False)
    AloneCut([(output, str(tmp_path))]).run(refused)
    assert refused.calls == 1 and refused.current == tree


def test_it_runs_right_after_stack() -> None:
    assert DEFAULT_SCHEDULE.index("alone") == DEFAULT_SCHEDULE.index("stack") + 1
