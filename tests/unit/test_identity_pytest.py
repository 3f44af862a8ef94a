"""The python facet on real pytest runs in tmp_path, in every ``--tb`` mode: runner, node id,
exception class, message (with pytest's assertion explanation where it prints one) and file."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.identity import infer_identity, observe
from repomin.runners.base import Outcome
from tests.unit._tool_runs import Runs, by_test, facet, pytest_run, write

#: The ``--tb`` modes (and ``-q``, which keeps the long tracebacks) the facet must read.
MODES: dict[str, tuple[str, ...]] = {
    "long": ("--tb=long",),
    "short": ("--tb=short",),
    "native": ("--tb=native",),
    "line": ("--tb=line",),
    "no": ("--tb=no",),
    "quiet": ("-q",),
}
#: Modes that print the failure section with pytest's ``E`` lines (the assertion explanation).
EXPLAINED = ("long", "short", "quiet")
#: Modes whose output names a frame of the test file (long, short and -q relative to the
#: invocation directory, native as an absolute path).
FRAMED = ("long", "short", "native", "quiet")

SUITE = {
    "pyproject.toml": "[tool.pytest.ini_options]\n",
    "tests/__init__.py": "",
    "tests/test_x.py": """\
        import pytest


        def compute_total(items):
            return round(sum(items), 2)


        def test_total():
            total = compute_total([0.5, 0.75])
            expected = 1.26
            assert total == expected, "invoice total mismatch"


        def test_passes():
            assert compute_total([1]) == 1


        @pytest.mark.parametrize("n", [1, 2])
        class TestA:
            def test_b(self, n):
                assert n == 2


        @pytest.fixture
        def broken():
            raise RuntimeError("fixture exploded")


        def test_uses_fixture(broken):
            pass


        def test_key():
            {}["missing"]
        """,
}

TOTAL = "tests/test_x.py::test_total"
PARAM = "tests/test_x.py::TestA::test_b[1]"
KEY = "tests/test_x.py::test_key"
SETUP = "tests/test_x.py::test_uses_fixture"


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("pytest_suite"), SUITE)


@pytest.fixture(scope="session")
def runs(suite: Path) -> Runs:
    """The suite run once per mode (three failures and one setup error, no ``-x``)."""
    return Runs(lambda mode: pytest_run(suite, *MODES[mode]))


@pytest.mark.parametrize("mode", MODES)
def test_every_failure_is_a_candidate(runs: Runs, mode: str) -> None:
    outcome = runs[mode]
    assert outcome.exit_code == 1, outcome.output
    found = by_test(outcome)
    assert set(found) == {TOTAL, PARAM, KEY, SETUP}, outcome.output
    assert {value["runner"] for value in found.values()} == {"pytest"}
    assert {test: value["exception_class"] for test, value in found.items()} == {
        TOTAL: "AssertionError",
        PARAM: "AssertionError",
        KEY: "KeyError",
        SETUP: "RuntimeError",
    }
    assert "invoice total mismatch" in found[TOTAL]["message"]
    assert "fixture exploded" in found[SETUP]["message"]
    assert "missing" in found[KEY]["message"]
    assert found[PARAM]["message"] == "assert 1 == 2"
    # Only the facets a pytest run can show.
    assert set(observe(outcome)) == {"python"}


@pytest.mark.parametrize("mode", EXPLAINED)
def test_assert_message_carries_pytests_explanation(runs: Runs, mode: str) -> None:
    message = by_test(runs[mode])[TOTAL]["message"]
    assert "invoice total mismatch" in message
    assert "assert 1.25 == 1.26" in message


@pytest.mark.parametrize("mode", FRAMED)
def test_file_is_the_test_module_relative_to_the_tree(runs: Runs, mode: str) -> None:
    found = by_test(runs[mode])
    for test in (TOTAL, PARAM, KEY, SETUP):
        assert found[test]["file"] == "tests/test_x.py", (test, runs[mode].output)


@pytest.mark.parametrize("mode", ["line", "no"])
def test_summary_only_modes_still_give_class_and_message(runs: Runs, mode: str) -> None:
    found = by_test(runs[mode])
    assert found[TOTAL]["message"] == "invoice total mismatch"
    assert found[KEY]["message"] == "'missing'"
    assert found[SETUP]["message"].endswith("fixture exploded")


@pytest.mark.parametrize("mode", MODES)
def test_identity_pins_every_failure_and_matches_a_rerun_elsewhere(
    tmp_path: Path, runs: Runs, mode: str
) -> None:
    first = runs[mode]
    second = pytest_run(write(tmp_path, SUITE), *MODES[mode])
    assert first.workdir != second.workdir
    identity = infer_identity([first, second])
    assert identity.notes == ()
    pinned = {value["test"] for value in identity.facets["python"]}
    assert pinned == {TOTAL, PARAM, KEY, SETUP}
    assert identity.matches(first) and identity.matches(second)
    assert identity.mismatch(second) is None


def test_one_of_several_pinned_failures_is_enough(tmp_path: Path, runs: Runs) -> None:
    """A sample that keeps one of the baseline's failures (the others now pass) reproduces."""
    identity = infer_identity([runs["long"]])
    tree = write(tmp_path, SUITE)
    source = (tree / "tests/test_x.py").read_text()
    source = source.replace('{}["missing"]', "pass").replace("assert n == 2", "pass")
    source = source.replace('raise RuntimeError("fixture exploded")', "return 1")
    (tree / "tests/test_x.py").write_text(source)
    reduced = pytest_run(tree, "--tb=long")
    assert set(by_test(reduced)) == {TOTAL}
    assert identity.matches(reduced)


# --- parametrised tests, classes, fixtures and collection ----------------------------------


def test_parametrised_method_of_a_class(runs: Runs) -> None:
    value = by_test(runs["long"])[PARAM]
    assert value == {
        "runner": "pytest",
        "test": PARAM,
        "exception_class": "AssertionError",
        "message": "assert 1 == 2",
        "file": "tests/test_x.py",
    }


def test_error_at_setup_is_the_fixtures_exception(runs: Runs) -> None:
    assert "ERROR at setup of test_uses_fixture" in runs["long"].output
    value = by_test(runs["native"])[SETUP]
    assert value == {
        "runner": "pytest",
        "test": SETUP,
        "exception_class": "RuntimeError",
        "message": "fixture exploded",
        "file": "tests/test_x.py",
    }


COLLECTION = {
    "pyproject.toml": "[tool.pytest.ini_options]\n",
    "tests/test_c.py": """\
        import json

        CONFIG = json.loads("{broken")


        def test_never():
            assert CONFIG
        """,
}


@pytest.mark.parametrize("mode", ["long", "short", "native"])
def test_collection_error(tmp_path: Path, mode: str) -> None:
    tree = write(tmp_path, COLLECTION)
    outcome = pytest_run(tree, *MODES[mode])
    assert outcome.exit_code == 2, outcome.output
    assert "ERROR collecting tests/test_c.py" in outcome.output
    [value] = facet(outcome, "python")
    assert value["runner"] == "pytest"
    assert value["test"] == "tests/test_c.py"
    assert value["exception_class"] == "json.decoder.JSONDecodeError"
    assert "Expecting property name enclosed in double quotes" in value["message"]
    # The innermost frames are the stdlib's json; the innermost one inside the tree is the test.
    assert value["file"] == "tests/test_c.py"


TEARDOWN = {
    "tests/test_t.py": """\
        import pytest


        @pytest.fixture
        def conn():
            yield 1
            raise ConnectionError("teardown failed")


        def test_teardown(conn):
            assert conn == 1
        """,
}


@pytest.fixture(scope="session")
def teardown_run(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    return pytest_run(write(tmp_path_factory.mktemp("teardown"), TEARDOWN), "--tb=long")


def test_error_at_teardown_gives_class_and_message(teardown_run: Outcome) -> None:
    outcome = teardown_run
    assert "ERROR at teardown of test_teardown" in outcome.output
    [value] = facet(outcome, "python")
    assert value["test"] == "tests/test_t.py::test_teardown"
    assert value["exception_class"] == "ConnectionError"
    assert "teardown failed" in value["message"]


def test_error_at_teardown_file_is_read_from_its_section(teardown_run: Outcome) -> None:
    outcome = teardown_run
    assert "tests/test_t.py:7: ConnectionError" in outcome.output
    [value] = facet(outcome, "python")
    assert value["file"] == "tests/test_t.py"


SPACED = {
    "tests/test_p.py": """\
        import pytest


        @pytest.mark.parametrize("text", ["plain", "two words"])
        def test_words(text):
            assert text.isalpha(), "not a word"


        def test_other():
            assert 1 == 2
        """,
}


@pytest.mark.parametrize("mode", ["native", "no"])
def test_parametrised_id_with_a_space(tmp_path: Path, mode: str) -> None:
    outcome = pytest_run(write(tmp_path, SPACED), *MODES[mode])
    assert "FAILED tests/test_p.py::test_words[two words] - AssertionError" in outcome.output
    found = by_test(outcome)
    assert set(found) == {"tests/test_p.py::test_words[two words]", "tests/test_p.py::test_other"}
