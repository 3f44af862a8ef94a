"""Diagnostics of a set-up that does not reproduce (real host runs, real selection)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from repomin.app.diagnose import (
    BaselineWatch,
    brief_run,
    check_command,
    check_ignored,
    describe_run,
    ignored_by_rule,
    output_tail,
    provisionally_reproduces,
)
from repomin.app.selection import DEFAULT_IGNORED_NAMES, SelectionOptions, select
from repomin.errors import UsageError
from repomin.failure.contract import FailureContract, FailureSpec
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree


@pytest.fixture
def runner() -> Iterator[HostRunner]:
    r = HostRunner()
    yield r
    r.close()


def run(runner: HostRunner, command: str, tree: Tree | None = None) -> Outcome:
    return runner.run(tree or Tree.of({}), RunRequest(command, {}, 20.0, "diag"))


def test_typo_in_match_shows_status_check_and_escaped_tail(runner: HostRunner) -> None:
    outcome = run(
        runner,
        r"printf 'line %s\n' 1 2 3 4 5 6 7 8 9 10 11 12 13; "
        r"printf 'KeyError: \033[31mroot\n' >&2; exit 1",
    )
    contract = FailureContract(FailureSpec(match="KeyErorr"))
    lines = describe_run("baseline run 1", contract, outcome)
    assert lines[0] == (
        "baseline run 1 did not reproduce: exit code 1; --match 'KeyErorr' not found in the output"
    )
    assert lines[1] == "last 12 lines of its output (stdout then stderr):"
    assert lines[-1] == "  | KeyError: \\x1b[31mroot"
    assert lines[2] == "  | line 3"  # bounded: the first two lines are cut
    assert len(lines) == 14
    assert brief_run(contract, outcome) == (
        "exit code 1, --match 'KeyErorr' not found in the output, "
        "last output line 'KeyError: \\\\x1b[31mroot'"
    )


def test_exit_code_and_signal(runner: HostRunner) -> None:
    contract = FailureContract(FailureSpec(exit_code=3))
    outcome = run(runner, "echo hi; exit 4")
    assert describe_run("r", contract, outcome)[0] == (
        "r did not reproduce: exit code 4; --exit-code 3 differs (got 4)"
    )
    killed = run(runner, "kill -SEGV $$")
    assert describe_run("r", contract, killed)[0].startswith(
        "r did not reproduce: killed by SIGSEGV"
    )
    assert describe_run("r", contract, killed)[1] == "it printed nothing"


def test_long_lines_are_cut() -> None:
    outcome = Outcome(exit_code=1, stdout=b"x" * 500)
    assert output_tail(outcome) == ["x" * 200 + " [...]"]


def test_signature_mode_before_pinning(runner: HostRunner) -> None:
    contract = FailureContract(FailureSpec(python_exception=True))
    crash = run(runner, "python3 -c 'raise KeyError(1)'")
    clean = run(runner, "python3 -c 'print(1)'")
    assert provisionally_reproduces(contract, crash)
    assert not provisionally_reproduces(contract, clean)
    assert (
        "--python-exception: no such failure in the output" in describe_run("r", contract, clean)[0]
    )


def test_watch_reports_the_first_failing_run_once(runner: HostRunner) -> None:
    contract = FailureContract(FailureSpec(match="BUG"))
    shown: list[str] = []
    watch = BaselineWatch(lambda: contract, shown.append)
    watch(run(runner, "echo BUG"))
    assert shown == [] and watch.note is None
    watch(run(runner, "echo fine; exit 1"))
    watch(run(runner, "echo other; exit 1"))
    assert len(shown) == 1
    assert shown[0].startswith("baseline run 2 did not reproduce: exit code 1; --match 'BUG'")
    assert "  | fine" in shown[0]
    assert watch.note == (
        "first failing baseline run: exit code 1, --match 'BUG' not found in the output, "
        "last output line 'fine'"
    )
    assert (watch.runs, watch.reproduced) == (3, 1)


def test_check_command() -> None:
    with pytest.raises(UsageError, match="--command is empty"):
        check_command("  ")
    check_command("true")


def make_npm_like(root: Path) -> None:
    (root / "node_modules" / "lib").mkdir(parents=True)
    (root / "node_modules" / "lib" / "index.js").write_text("throw 'BUG inside node_modules'\n")
    (root / "node_modules" / "lib" / "package.json").write_text("{}\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_text("obj\n")
    (root / "notes").mkdir()
    (root / "notes" / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "app.js").write_text("require('lib')\n")


def test_rules_are_attributed_with_counts(tmp_path: Path) -> None:
    make_npm_like(tmp_path)
    options = SelectionOptions(
        ignored_names=(*DEFAULT_IGNORED_NAMES, "*.txt"), ignored_paths=("notes",)
    )
    (tmp_path / "readme.txt").write_text("r\n")
    kept = select(tmp_path, options).tree
    full = select(tmp_path, SelectionOptions(ignored_names=(), use_gitignore=False)).tree
    rules = {r.rule: (r.files, r.keep_option) for r in ignored_by_rule(kept, full, options)}
    assert rules == {
        "node_modules (default ignore)": (2, "--no-default-ignores"),
        ".gitignore": (1, "--no-gitignore"),
        "--ignore *.txt": (1, "drop --ignore *.txt"),
        "--ignore-path notes": (1, "drop --ignore-path notes"),  # the outer rule wins
    }


def test_failure_inside_node_modules_names_it(tmp_path: Path, runner: HostRunner) -> None:
    make_npm_like(tmp_path)
    selection = select(tmp_path, SelectionOptions())
    contract = FailureContract(FailureSpec(match="BUG inside"))
    command = "cat node_modules/lib/index.js 2>/dev/null || echo missing"
    runs: list[int] = []

    def once(tree: Tree) -> Outcome:
        runs.append(tree.file_count)
        return run(runner, command, tree)

    with pytest.raises(UsageError) as err:
        check_ignored(tmp_path, selection, once, contract)
    assert runs == [6]
    assert err.value.message == (
        "the failure reproduces only with files the selection ignored (node_modules (default "
        "ignore): 2 files (e.g. node_modules/lib/index.js, node_modules/lib/package.json); "
        ".gitignore: 1 file (e.g. build/out.o)); rerun with --no-default-ignores, "
        "--no-gitignore to keep them (and --ignore what is not needed)"
    )
    # not needed: a note for the final error, no exception
    note = check_ignored(tmp_path, selection, lambda t: run(runner, "exit 0", t), contract)
    assert note == "one run with the 3 ignored files included did not reproduce either"
    nothing_ignored = select(tmp_path / "notes", SelectionOptions())
    assert check_ignored(tmp_path / "notes", nothing_ignored, once, contract) == ""
    assert runs == [6]


def test_a_match_only_in_echoed_source_and_a_different_identity_are_named(
    runner: HostRunner,
) -> None:
    tree = Tree.of(
        {
            "t.py": Entry("file", b"def f():\n    x(('needle mismatch'))\n\n\nf()\n"),
            "good.py": Entry("file", b"raise KeyError('needle mismatch')\n"),
        }
    )
    echoed = run(runner, "python3 t.py", tree)
    contract = FailureContract(FailureSpec(match="needle mismatch"))
    text = " ".join(describe_run("baseline run 1", contract, echoed))
    assert "found only in source lines the tool echoed" in text
    learnt = contract.learn([run(runner, "python3 good.py", tree)])
    assert learnt.identity is not None and set(learnt.identity.facets) == {"python"}
    phrases = " ".join(describe_run("run", learnt, echoed))
    assert "identity python KeyError" in phrases and "NameError" in phrases
