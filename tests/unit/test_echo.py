"""Which output lines ``--match`` counts, on real Python, pytest and unittest output made in
tmp_path: the source lines a traceback or a pytest failure section echoes (and their carets) do
not count; what the program and the exception say does. (Compiler and Node code frames are
checked next to their facets: test_identity_compilers.py, test_identity_java.py,
test_identity_node.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.failure.echo import counted_text, echoed_lines
from repomin.runners.base import Outcome
from tests.unit._tool_runs import pytest_run, python, write

MATCH = "invoice total mismatch"

PROGRAM = {
    "billing.py": """\
        def check(total):
            if total != 1.26:
                raise ValueError("invoice total mismatch")


        def check_silently(total):
            return {"invoice total mismatch": total}["invoice total"]
        """,
    "main.py": """\
        import sys

        from billing import check, check_silently

        if sys.argv[1] == "message":
            check(1.25)
        elif sys.argv[1] == "echo-only":
            check_silently(1.25)
        elif sys.argv[1] == "group":
            errors = []
            for total in (1.25, 1.27):
                try:
                    check_silently(total)
                except KeyError as exc:
                    errors.append(exc)
            raise ExceptionGroup("checks failed", errors)
        elif sys.argv[1] == "printed":
            print("    invoice total mismatch (indented program output)")
            print("^^^ not a caret line: it has words")
            sys.exit(1)
        """,
    "syntax.py": """\
        total = 1.25
        assert total == 1.26, ("invoice total mismatch"
        """,
}


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("echo"), PROGRAM)


def counted_lines(outcome: Outcome) -> list[str]:
    return counted_text(outcome.output).split("\n")


def test_message_of_a_plain_traceback_counts(tree: Path) -> None:
    outcome = python(tree, "main.py", "message")
    counted = counted_lines(outcome)
    assert "ValueError: invoice total mismatch" in counted
    # The raising line (echoed under its File line) does not.
    assert '    raise ValueError("invoice total mismatch")' in outcome.output
    assert '    raise ValueError("invoice total mismatch")' not in counted
    assert any(line.startswith('  File "') for line in counted)


def test_text_only_in_traceback_source_and_carets_does_not_count(tree: Path) -> None:
    outcome = python(tree, "main.py", "echo-only")
    assert "KeyError: 'invoice total'" in outcome.output
    assert MATCH in outcome.output
    assert MATCH not in counted_text(outcome.output)
    # Python 3.11's carets under the subscript are echoed with their line.
    lines = outcome.output.split("\n")
    carets = [i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= {"~", "^"}]
    assert carets and set(carets) <= echoed_lines(lines)
    assert not FailureContract(FailureSpec(match=MATCH, identity="off")).reproduces(outcome)
    whole = FailureSpec(match=MATCH, identity="off", match_scope="whole_output")
    assert FailureContract(whole).reproduces(outcome)


def test_exception_group_margins(tree: Path) -> None:
    outcome = python(tree, "main.py", "group")
    assert "| KeyError: 'invoice total'" in outcome.output
    assert MATCH in outcome.output and MATCH not in counted_text(outcome.output)
    assert any("| KeyError: 'invoice total'" in line for line in counted_lines(outcome))


def test_syntax_error_source_and_caret(tree: Path) -> None:
    outcome = python(tree, "syntax.py")
    assert "SyntaxError: '(' was never closed" in outcome.output
    assert MATCH in outcome.output and MATCH not in counted_text(outcome.output)
    assert "SyntaxError: '(' was never closed" in counted_lines(outcome)


def test_indented_lines_of_an_exception_message_count(tmp_path: Path) -> None:
    script = (
        "raise ValueError(\n"
        "    \"Failed validating type in schema:\\n    {'type': 'number'}\\n\"\n"
        "    \"On instance:\\n    '1.25'\"\n"
        ")\n"
    )
    outcome = python(write(tmp_path, {"schema.py": script}), "schema.py")
    assert "\n    {'type': 'number'}\n" in outcome.output
    assert "\n    {'type': 'number'}\n" in counted_text(outcome.output)
    assert "    raise ValueError(" not in counted_text(outcome.output)


def test_program_output_counts_even_when_indented(tree: Path) -> None:
    outcome = python(tree, "main.py", "printed")
    assert counted_text(outcome.output) == outcome.output
    assert FailureContract(FailureSpec(match=MATCH, identity="off")).reproduces(outcome)


def test_output_with_nothing_echoed_is_returned_as_is() -> None:
    text = "collected 3 items\nFAILED: invoice total mismatch\n"
    assert echoed_lines(text.split("\n")) == set()
    assert counted_text(text) is text


# --- pytest --------------------------------------------------------------------------------

SUITE = {
    "tests/test_x.py": """\
        def compute_total(items):
            return round(sum(items), 2)


        def test_total():
            print("    invoice total mismatch (captured, indented)")
            total = compute_total([0.5, 0.75])
            assert total == 1.26, "invoice total mismatch"


        def test_echo_only():
            assert {"invoice total mismatch": 1.25}["invoice total"] == 1.26
        """,
}


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("echo_pytest"), SUITE)


@pytest.mark.parametrize("mode", ["--tb=long", "--tb=short", "--tb=native", "-q"])
def test_pytest_sections(suite: Path, mode: str) -> None:
    outcome = pytest_run(suite, mode)
    counted = counted_text(outcome.output)
    # The failing lines as pytest prints them (">" marker, short's indented source, native's
    # traceback source) are echoed; the exception and pytest's explanation are not.
    assert 'assert total == 1.26, "invoice total mismatch"' in outcome.output
    assert 'assert total == 1.26, "invoice total mismatch"' not in counted
    assert "AssertionError: invoice total mismatch" in counted
    assert '{"invoice total mismatch": 1.25}["invoice total"]' not in counted
    # Summary lines and the test's captured output count.
    assert "FAILED tests/test_x.py::test_total - AssertionError: invoice total mismatch" in counted
    if mode != "--tb=native":
        assert "E       assert 1.25 == 1.26" in counted or "E   assert 1.25 == 1.26" in counted
    assert "    invoice total mismatch (captured, indented)" in counted


@pytest.mark.parametrize("mode", ["--tb=long", "--tb=short", "--tb=native", "-q"])
def test_pytest_failure_whose_text_is_only_in_its_source(tmp_path: Path, mode: str) -> None:
    source = SUITE["tests/test_x.py"]
    source = source.replace('assert total == 1.26, "invoice total mismatch"', "assert total")
    source = source.replace('print("    invoice total mismatch (captured, indented)")', "")
    outcome = pytest_run(write(tmp_path, {"tests/test_x.py": source}), mode)
    assert "FAILED tests/test_x.py::test_echo_only - KeyError: 'invoice total'" in outcome.output
    assert MATCH in outcome.output
    assert MATCH not in counted_text(outcome.output)


@pytest.mark.parametrize("mode", ["--tb=long", "--tb=short", "--tb=native"])
def test_pytest_collection_syntax_error_source_is_echoed(tmp_path: Path, mode: str) -> None:
    source = (
        'def test_total():\n    total = 1.25\n    assert total == 1.26, ("invoice total mismatch"\n'
    )
    outcome = pytest_run(write(tmp_path, {"tests/test_x.py": source}), mode)
    assert "E   SyntaxError: '(' was never closed" in outcome.output
    assert MATCH not in counted_text(outcome.output)


def test_pytest_native_keeps_indented_message_lines(tmp_path: Path) -> None:
    source = (
        "def test_schema():\n"
        "    raise ValueError(\n"
        "        \"Failed validating type in schema:\\n    {'type': 'number'}\\n\"\n"
        "        \"On instance:\\n    '1.25'\"\n"
        "    )\n"
    )
    outcome = pytest_run(write(tmp_path, {"tests/test_s.py": source}), "--tb=native")
    assert "\n    {'type': 'number'}\n" in outcome.output
    assert "\n    {'type': 'number'}\n" in counted_text(outcome.output)


# --- unittest ------------------------------------------------------------------------------


def test_unittest_traceback_source_is_echoed(tmp_path: Path) -> None:
    module = """\
        import unittest


        class T(unittest.TestCase):
            def test_total(self):
                self.assertEqual({"invoice total mismatch": 1.25}["invoice total"], 1.26)
        """
    outcome = python(write(tmp_path, {"test_u.py": module}), "-m", "unittest", "test_u")
    assert "ERROR: test_total (test_u.T.test_total)" in outcome.output
    assert MATCH in outcome.output
    counted = counted_text(outcome.output)
    assert MATCH not in counted
    assert "KeyError: 'invoice total'" in counted
