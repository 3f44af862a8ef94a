"""infer_identity on real outputs of several baseline runs: what every run shows is pinned; a
facet only some runs show, or on which they disagree, is not, and a note says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.failure.identity import Identity, infer_identity
from tests.unit._tool_runs import Runs, by_test, pytest_run, python, write

PROGRAM = {
    "main.py": """\
        import os
        import sys
        import traceback


        def lookup(table, key):
            return table[key]


        mode = sys.argv[1]
        if mode == "key":
            lookup({}, "price")
        elif mode == "value":
            int("x")
        elif mode == "key-then-abort":
            try:
                lookup({}, "price")
            except KeyError:
                traceback.print_exc()
                sys.stderr.flush()
                os.abort()
        """,
}

FLAKY_SUITE = {
    "tests/test_f.py": """\
        import os

        import pytest

        FAILING = os.environ["FAILING"].split(",")


        @pytest.mark.parametrize("name", ["a", "b", "c"])
        def test_item(name):
            failing = name in FAILING
            assert not failing, "invoice total mismatch"
        """,
}


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = write(tmp_path_factory.mktemp("infer"), PROGRAM)
    return Runs(lambda mode: python(root, "main.py", mode))


def test_agreeing_runs_pin_their_facets(runs: Runs, tmp_path: Path) -> None:
    again = python(write(tmp_path, PROGRAM), "main.py", "key")
    identity = infer_identity([runs["key"], again])
    assert identity.notes == ()
    assert dict(identity.facets) == {
        "python": (
            {
                "runner": "",
                "test": "",
                "exception_class": "KeyError",
                "message": "'price'",
                "file": "main.py",
            },
        )
    }
    assert identity.describe() == ["python: KeyError: 'price' in main.py"]


def test_disagreeing_runs_pin_nothing_and_say_so(runs: Runs) -> None:
    identity = infer_identity([runs["key"], runs["value"]])
    assert dict(identity.facets) == {}
    assert identity.notes == (
        "python not pinned: baseline runs disagree (KeyError: 'price' in main.py vs "
        "ValueError: invalid literal for int() with base 10: 'x' in main.py)",
    )
    # Nothing pinned: every outcome matches.
    assert identity.matches(runs["value"]) and identity.mismatch(runs["value"]) is None


def test_facet_seen_in_only_some_runs_is_not_pinned(runs: Runs) -> None:
    aborted = runs["key-then-abort"]
    assert aborted.signal == 6, aborted.output
    identity = infer_identity([runs["key"], aborted])
    assert set(identity.facets) == {"python"}
    assert identity.notes == ("signal not pinned: only 1 of 2 reproducing baseline runs show it",)
    assert identity.describe()[-1] == identity.notes[0]
    assert identity.matches(runs["key"]) and identity.matches(aborted)
    assert not identity.matches(runs["value"])


def test_only_the_failures_common_to_every_run_are_pinned(tmp_path: Path) -> None:
    root = write(tmp_path, FLAKY_SUITE)
    first = pytest_run(root, "--tb=short", env={"FAILING": "a,b"})
    second = pytest_run(root, "--tb=short", env={"FAILING": "b,c"})
    assert set(by_test(first)) == {"tests/test_f.py::test_item[a]", "tests/test_f.py::test_item[b]"}
    assert by_test(first)["tests/test_f.py::test_item[b]"]["message"] == (
        "invoice total mismatch / assert not True"
    )
    identity = infer_identity([first, second])
    assert identity.notes == ()
    assert [value["test"] for value in identity.facets["python"]] == [
        "tests/test_f.py::test_item[b]"
    ]
    only_c = pytest_run(root, "--tb=short", env={"FAILING": "c"})
    assert not identity.matches(only_c)
    only_b = pytest_run(root, "--tb=short", env={"FAILING": "b"})
    assert identity.matches(only_b)


def test_identity_survives_the_report(runs: Runs) -> None:
    identity = infer_identity([runs["key"], runs["key-then-abort"]])
    restored = Identity.from_json(identity.to_json())
    assert restored == identity
    assert restored.matches(runs["key"]) and not restored.matches(runs["value"])


def test_no_runs_pin_nothing(runs: Runs) -> None:
    identity = infer_identity([])
    assert identity == Identity()
    assert identity.matches(runs["value"])


def test_contract_learns_only_from_runs_that_satisfy_the_spec(runs: Runs) -> None:
    """A baseline run that does not show the match is not evidence for the identity."""
    contract = FailureContract(FailureSpec(match="KeyError")).learn([runs["key"], runs["value"]])
    assert contract.identity is not None
    assert contract.identity.notes == ()
    [pinned] = contract.identity.facets["python"]
    assert pinned["exception_class"] == "KeyError"


def test_identity_off_learns_nothing(runs: Runs) -> None:
    contract = FailureContract(FailureSpec(match="Error", identity="off")).learn(
        [runs["key"], runs["value"]]
    )
    assert contract.identity is None
    assert contract.reproduces(runs["key"]) and contract.reproduces(runs["value"])


def test_the_pinned_message_says_what_failed_not_where() -> None:
    from repomin.failure.facets import identity_message
    from repomin.failure.normalise import Normaliser

    norm = Normaliser()
    pug = (
        'views/about.pug:4:1\n    2| block content\n    3| p(class="about" About us\n'
        "  > 4| \n-------^\n\nThe end of the string reached with no closing bracket ) found."
    )
    assert identity_message(norm, pug) == (
        "The end of the string reached with no closing bracket ) found."
    )
    carved = 'Pug:1:24\n  > 1| p(class="about" About us\n-----------------------^\n\n'
    carved += "The end of the string reached with no closing bracket ) found."
    assert identity_message(norm, carved) == identity_message(norm, pug)
    assert identity_message(norm, "Expecting value: line 3 column 1 (char 7)") == (
        "Expecting value: line <n> column <n> (char <n>)"
    )
    assert identity_message(norm, "invoice total mismatch / assert 1.25 == 1.26") == (
        "invoice total mismatch / assert 1.25 == 1.26"
    )
    assert identity_message(norm, "assert 10 / 4 == 2") == "assert 10 / 4 == 2"
