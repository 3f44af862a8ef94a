"""The scenario the identity exists for, on real pytest runs: a baseline whose assertion fails
with "invoice total mismatch", and reductions that keep that text only in echoed source, fail
in another test, or move pytest's rootdir."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.failure.echo import counted_text
from repomin.failure.identity import infer_identity, same_test
from tests.unit._tool_runs import Runs, by_test, facet, pytest_run, write

MODES: dict[str, tuple[str, ...]] = {
    "long": ("--tb=long",),
    "short": ("--tb=short",),
    "native": ("--tb=native",),
    "line": ("--tb=line",),
    "no": ("--tb=no",),
    "quiet": ("-q",),
}
#: Modes that echo the failing line's source (so a deleted assertion's text stays visible).
ECHOING = ("long", "short", "native", "quiet")

MATCH = "invoice total mismatch"
TOTAL = "tests/test_x.py::test_total"

HEADER = """\
def compute_total(items):
    return round(sum(items), 2)


"""
FAILING_TOTAL = """\
def test_total():
    total = compute_total([0.5, 0.75])
    expected = 1.26
    assert total == expected, "invoice total mismatch"


"""
PASSING_TOTAL = FAILING_TOTAL.replace("1.26", "1.25")
#: What a reduction leaves when it deletes the assignment and the ``assert ... ==``/``, ``
#: tokens: the message is now an argument of a call that raises NameError.
MUTATED_TOTAL = """\
def test_total():
    expected = 1.26
    total ("invoice total mismatch")


"""
FAILING_OTHER = FAILING_TOTAL.replace("test_total", "test_other")
PASSING_OTHER = PASSING_TOTAL.replace("test_total", "test_other")


def tree(root: Path, body: str, *, pyproject: bool = True) -> Path:
    files = {"tests/test_x.py": HEADER + body, "tests/pyproject.toml": "[tool.black]\n"}
    if pyproject:
        files["pyproject.toml"] = "[tool.pytest.ini_options]\n"
    return write(root, files)


@pytest.fixture(scope="session")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tree(tmp_path_factory.mktemp("baseline"), FAILING_TOTAL + PASSING_OTHER)
    return Runs(lambda mode: pytest_run(root, *MODES[mode]))


@pytest.fixture(scope="session")
def mutated(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tree(tmp_path_factory.mktemp("mutated"), MUTATED_TOTAL + PASSING_OTHER)
    return Runs(lambda mode: pytest_run(root, *MODES[mode]))


@pytest.fixture(scope="session")
def other_test(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tree(tmp_path_factory.mktemp("other"), PASSING_TOTAL + FAILING_OTHER)
    return Runs(lambda mode: pytest_run(root, *MODES[mode]))


@pytest.mark.parametrize("mode", MODES)
def test_baseline_reproduces_under_its_own_identity(baselines: Runs, mode: str) -> None:
    baseline = baselines[mode]
    contract = FailureContract(FailureSpec(match=MATCH)).learn([baseline])
    assert contract.identity is not None
    [pinned] = contract.identity.facets["python"]
    assert pinned["test"] == TOTAL
    assert pinned["exception_class"] == "AssertionError"
    assert contract.reproduces(baseline)


@pytest.mark.parametrize("mode", MODES)
def test_nameerror_mutant_does_not_match_the_identity(
    baselines: Runs, mutated: Runs, mode: str
) -> None:
    sample = mutated[mode]
    [value] = facet(sample, "python")
    assert (value["test"], value["exception_class"]) == (TOTAL, "NameError")
    assert value["message"].endswith("name 'total' is not defined")
    identity = infer_identity([baselines[mode]])
    assert not identity.matches(sample)
    reason = identity.mismatch(sample)
    assert reason is not None
    assert "NameError" in reason and "AssertionError" in reason


@pytest.mark.parametrize("mode", ECHOING)
def test_nameerror_mutant_matches_only_in_echoed_source(
    baselines: Runs, mutated: Runs, mode: str
) -> None:
    sample = mutated[mode]
    assert MATCH in sample.output  # the echoed source line: `total ("invoice total mismatch")`
    assert MATCH not in counted_text(sample.output)
    # The learnt contract refuses it (the match fails, and so does the identity) ...
    learnt = FailureContract(FailureSpec(match=MATCH)).learn([baselines[mode]])
    assert not learnt.reproduces(sample)
    # ... and so does the match alone, without any identity ...
    assert not FailureContract(FailureSpec(match=MATCH, identity="off")).reproduces(sample)
    # ... while a match over the whole output (reports from before the scope) accepts it.
    whole = FailureSpec(match=MATCH, identity="off", match_scope="whole_output")
    assert FailureContract(whole).reproduces(sample)
    # The identity alone catches it too, even when the match searches the whole output.
    whole_auto = FailureSpec(match=MATCH, match_scope="whole_output")
    assert not FailureContract(whole_auto).learn([baselines[mode]]).reproduces(sample)


@pytest.mark.parametrize("mode", ["line", "no"])
def test_modes_without_source_do_not_show_the_text_at_all(mutated: Runs, mode: str) -> None:
    assert MATCH not in mutated[mode].output
    whole = FailureSpec(match=MATCH, identity="off", match_scope="whole_output")
    assert not FailureContract(whole).reproduces(mutated[mode])


@pytest.mark.parametrize("mode", MODES)
def test_same_exception_in_another_test_does_not_match(
    baselines: Runs, other_test: Runs, mode: str
) -> None:
    base, sample = by_test(baselines[mode]), by_test(other_test[mode])
    assert set(base) == {TOTAL}
    assert set(sample) == {"tests/test_x.py::test_other"}
    [mine], [theirs] = base.values(), sample.values()
    assert {k: v for k, v in mine.items() if k != "test"} == {
        k: v for k, v in theirs.items() if k != "test"
    }
    identity = infer_identity([baselines[mode]])
    assert not identity.matches(other_test[mode])
    reason = identity.mismatch(other_test[mode])
    assert reason is not None and "test_other" in reason
    # The text is really there (not echoed): only the identity refuses the sample.
    learnt = FailureContract(FailureSpec(match=MATCH)).learn([baselines[mode]])
    assert learnt.base_matches(other_test[mode])
    assert not learnt.reproduces(other_test[mode])


@pytest.mark.parametrize("mode", ["long", "native", "no"])
def test_rootdir_moved_by_deleting_the_config_still_matches(
    tmp_path: Path, baselines: Runs, mode: str
) -> None:
    """Deleting the top-level pyproject.toml (a reduction step) moves pytest's rootdir to
    tests/ (where another tool's pyproject.toml lives); the failure is the same."""
    root = tree(tmp_path, FAILING_TOTAL + PASSING_OTHER, pyproject=False)
    sample = pytest_run(root, *MODES[mode], "tests/test_x.py")
    assert re.search(r"^rootdir: .*/tests$", sample.output, re.M), sample.output
    assert re.search(r"^rootdir: .*baseline\d*$", baselines[mode].output, re.M)
    contract = FailureContract(FailureSpec(match=MATCH)).learn([baselines[mode]])
    assert contract.reproduces(sample), contract.identity and contract.identity.mismatch(sample)


def test_node_id_spelt_from_another_directory_is_the_same_test(
    tmp_path: Path, baselines: Runs
) -> None:
    """pytest writes node ids relative to where it was started: ``test_x.py::test_total`` from
    tests/ and ``tests/test_x.py::test_total`` from the top are the same test."""
    root = tree(tmp_path, FAILING_TOTAL + PASSING_OTHER)
    sample = pytest_run(root, "--tb=native", "test_x.py", cwd=root / "tests")
    [value] = facet(sample, "python")
    assert value["test"] == "test_x.py::test_total"
    assert value["file"] == "tests/test_x.py"
    assert same_test(TOTAL, value["test"]) and same_test(value["test"], TOTAL)
    assert not same_test("other/test_x.py::test_total", TOTAL)
    assert not same_test(TOTAL, "tests/test_x.py::test_other")
    assert infer_identity([baselines["native"]]).matches(sample)


COLLECTION = """\
import json

CONFIG = json.loads("{broken")


def test_never():
    assert CONFIG
"""


def test_collection_error_with_rootdir_moved_still_matches(tmp_path: Path) -> None:
    files = {
        "pyproject.toml": "[tool.pytest.ini_options]\n",
        "tests/pyproject.toml": "[tool.black]\n",
        "tests/test_c.py": COLLECTION,
    }
    base_root = write(tmp_path / "base", files)
    baseline = pytest_run(base_root, "tests/test_c.py")
    reduced_root = write(tmp_path / "reduced", files)
    (reduced_root / "pyproject.toml").unlink()
    sample = pytest_run(reduced_root, "tests/test_c.py")
    assert "ERROR collecting tests/test_c.py" in baseline.output
    assert "ERROR collecting test_c.py" in sample.output
    identity = infer_identity([baseline])
    assert identity.matches(sample), identity.mismatch(sample)
