"""The python facet on real ``python -m unittest`` runs in tmp_path: FAIL and ERROR blocks, the
``name (module.Class.name)`` test id, and a reduction that leaves the assertion's message only
in echoed source."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.failure.echo import counted_text
from repomin.failure.identity import infer_identity
from repomin.runners.base import Outcome
from tests.unit._tool_runs import by_test, facet, python, write

MATCH = "invoice total mismatch"
FAIL_ID = "test_total (test_calc.CalcTest.test_total)"
ERROR_ID = "test_zero (test_calc.CalcTest.test_zero)"

TEST_CALC = """\
import unittest

from pkg.calc import divide


class CalcTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(divide(5, 4), 1.26, "invoice total mismatch")

    def test_zero(self):
        divide(1, 0)

    def test_ok(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
"""

FILES = {"pkg/__init__.py": "", "pkg/calc.py": "def divide(a, b):\n    return a / b\n"}


def project(root: Path, test_calc: str = TEST_CALC) -> Path:
    return write(root, {**FILES, "test_calc.py": test_calc})


@pytest.fixture(scope="session")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return python(project(tmp_path_factory.mktemp("unittest")), "-m", "unittest", "test_calc")


def test_fail_and_error_blocks(baseline: Outcome) -> None:
    assert "FAIL: " + FAIL_ID in baseline.output and "ERROR: " + ERROR_ID in baseline.output
    assert by_test(baseline) == {
        FAIL_ID: {
            "runner": "unittest",
            "test": FAIL_ID,
            "exception_class": "AssertionError",
            "message": "1.25 != 1.26 : invoice total mismatch",
            "file": "test_calc.py",
        },
        ERROR_ID: {
            "runner": "unittest",
            "test": ERROR_ID,
            "exception_class": "ZeroDivisionError",
            "message": "division by zero",
            # The innermost frame inside the tree is the code under test, not the test.
            "file": "pkg/calc.py",
        },
    }


def test_verbose_run_reads_the_same(tmp_path: Path, baseline: Outcome) -> None:
    verbose = python(project(tmp_path), "-m", "unittest", "-v", "test_calc")
    assert "test_ok (test_calc.CalcTest.test_ok) ... ok" in verbose.output
    assert by_test(verbose) == by_test(baseline)
    assert infer_identity([baseline]).matches(verbose)


def test_script_entry_point_names_the_main_module(tmp_path: Path) -> None:
    outcome = python(project(tmp_path), "test_calc.py")
    assert set(by_test(outcome)) == {
        "test_total (__main__.CalcTest.test_total)",
        "test_zero (__main__.CalcTest.test_zero)",
    }


def test_one_failure_left_still_matches(tmp_path: Path, baseline: Outcome) -> None:
    reduced = python(
        project(tmp_path, TEST_CALC.replace("divide(1, 0)", "pass")), "-m", "unittest", "test_calc"
    )
    assert set(by_test(reduced)) == {FAIL_ID}
    assert infer_identity([baseline]).matches(reduced)


def test_message_only_in_echoed_source_does_not_reproduce(tmp_path: Path) -> None:
    """A baseline failing test_total alone; the reduction turns its assertion into a call that
    raises NameError and whose source (echoed by the traceback) still holds the message."""
    single = TEST_CALC.replace("divide(1, 0)", "pass")
    baseline = python(project(tmp_path / "base", single), "-m", "unittest", "test_calc")
    mutated = single.replace(
        'self.assertEqual(divide(5, 4), 1.26, "invoice total mismatch")',
        'total ("invoice total mismatch")',
    )
    sample = python(project(tmp_path / "reduced", mutated), "-m", "unittest", "test_calc")
    assert set(by_test(baseline)) == {FAIL_ID}
    [value] = by_test(sample).values()
    assert (value["test"], value["exception_class"]) == (FAIL_ID, "NameError")
    assert MATCH in sample.output and MATCH not in counted_text(sample.output)
    identity = infer_identity([baseline])
    assert not identity.matches(sample)
    assert not FailureContract(FailureSpec(match=MATCH, identity="off")).reproduces(sample)
    whole = FailureSpec(match=MATCH, identity="off", match_scope="whole_output")
    assert FailureContract(whole).reproduces(sample)
    assert not FailureContract(FailureSpec(match=MATCH)).learn([baseline]).reproduces(sample)


def test_no_failure_no_facet(tmp_path: Path) -> None:
    passing = TEST_CALC.replace("1.26", "1.25").replace("divide(1, 0)", "pass")
    outcome = python(project(tmp_path, passing), "-m", "unittest", "test_calc")
    assert outcome.exit_code == 0, outcome.output
    assert facet(outcome, "python") == []
