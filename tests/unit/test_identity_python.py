"""The python facet on real tracebacks of plain ``python`` runs in tmp_path: class, normalised
message, the innermost frame inside the tree (relative), and chained exceptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.identity import infer_identity, observe
from repomin.runners.base import Outcome
from tests.unit._tool_runs import Runs, facet, python, write

APP = {
    "app/__init__.py": "",
    "app/config.py": """\
        import json
        from pathlib import Path


        class ConfigError(Exception):
            pass


        def load(text):
            try:
                return json.loads(text)
            except ValueError as exc:
                raise ConfigError(f"bad config at {id(text)}: {text!r}") from exc


        def lookup(table, key):
            try:
                return table[key]
            except KeyError:
                raise RuntimeError("lookup of " + key + " failed")


        def read(name):
            return Path(__file__).parent.joinpath("..", "data", name).resolve().read_text()
        """,
    "main.py": """\
        import sys

        from app.config import load, lookup, read

        mode = sys.argv[1]
        if mode == "cause":
            load("{broken")
        elif mode == "context":
            lookup({}, "price")
        elif mode == "missing":
            read("orders.csv")
        elif mode == "group":
            raise ExceptionGroup("checks failed", [ValueError("a"), KeyError("b")])
        else:
            int("x")
        """,
}


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("plain"), APP)


@pytest.fixture(scope="session")
def runs(tree: Path) -> Runs:
    return Runs(lambda mode: python(tree, "main.py", mode))


def only(outcome: Outcome) -> dict[str, str]:
    [value] = facet(outcome, "python")
    return value


def test_plain_traceback(runs: Runs) -> None:
    assert only(runs["plain"]) == {
        "runner": "",
        "test": "",
        "exception_class": "ValueError",
        "message": "invalid literal for int() with base 10: 'x'",
        "file": "main.py",
    }
    assert set(observe(runs["plain"])) == {"python"}


def test_explicit_cause_is_the_outer_exception_raised_in_the_package(
    runs: Runs,
) -> None:
    outcome = runs["cause"]
    assert "The above exception was the direct cause" in outcome.output
    assert only(outcome) == {
        "runner": "",
        "test": "",
        "exception_class": "app.config.ConfigError",
        # id() is a volatile number: normalised.
        "message": "bad config at <n>: '{broken'",
        # The innermost frames of the cause are the stdlib's json; of the raise, app/config.py.
        "file": "app/config.py",
    }


def test_implicit_context(runs: Runs) -> None:
    outcome = runs["context"]
    assert "During handling of the above exception, another exception occurred" in outcome.output
    value = only(outcome)
    assert (value["exception_class"], value["message"], value["file"]) == (
        "RuntimeError",
        "lookup of price failed",
        "app/config.py",
    )


def test_chained_failures_are_told_apart(runs: Runs) -> None:
    identity = infer_identity([runs["cause"]])
    assert identity.matches(runs["cause"])
    assert not identity.matches(runs["context"])
    assert not identity.matches(runs["plain"])
    reason = identity.mismatch(runs["context"])
    assert reason == (
        "identity python app.config.ConfigError: bad config at <n>: '{broken' in app/config.py "
        "not shown (RuntimeError: lookup of price failed in app/config.py)"
    )


def test_same_failure_in_another_workdir_matches(tmp_path: Path, runs: Runs) -> None:
    """Paths inside the tree and ids differ between two copies; the identity does not."""
    elsewhere = python(write(tmp_path, APP), "main.py", "cause")
    assert elsewhere.output != runs["cause"].output
    assert only(elsewhere) == only(runs["cause"])
    assert infer_identity([runs["cause"]]).matches(elsewhere)


def test_workdir_in_the_message_is_a_placeholder(tree: Path, tmp_path: Path) -> None:
    first = python(tree, "main.py", "missing")
    second = python(write(tmp_path, APP), "main.py", "missing")
    assert str(tree) in first.output
    value = only(first)
    assert value["exception_class"] == "FileNotFoundError"
    assert value["message"] == ("[Errno 2] No such file or directory: '<workdir>/data/orders.csv'")
    # The innermost frame is pathlib's (outside the tree); the innermost inside is the package.
    assert value["file"] == "app/config.py"
    assert only(second) == value


def test_no_frame_inside_the_tree_gives_an_empty_file(tmp_path: Path) -> None:
    outcome = python(tmp_path, "-c", "import json; json.loads('{')")
    value = only(outcome)
    assert value["exception_class"] == "json.decoder.JSONDecodeError"
    assert value["file"] == ""


def test_exception_group(tree: Path) -> None:
    outcome = python(tree, "main.py", "group")
    assert "Exception Group Traceback" in outcome.output
    value = only(outcome)
    assert value["exception_class"] == "ExceptionGroup"
    assert value["message"] == "checks failed (2 sub-exceptions)"
    assert value["file"] == "main.py"


def test_success_shows_no_facet(tree: Path) -> None:
    outcome = python(tree, "-c", "print('fine')")
    assert outcome.exit_code == 0
    assert observe(outcome) == {}
