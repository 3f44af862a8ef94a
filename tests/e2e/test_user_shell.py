"""End-to-end: a payload whose failure depends on a file under HOME is checked in the user's own
shell before export, and the check says it does not reproduce there (exit 1), naming the file.

The command fails only while ``~/.flags-cache.json`` is missing, and writes it. Every sample
gets a fresh empty HOME, so inside ReproMin it fails every time; in the user's shell the run
before the search (the same failure, so the search goes on) writes the cache and every run
after the search passes: 0 of 3. The user's HOME is a temporary directory
here (``monkeypatch``), never the real one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.validate import validate_file

COMMAND = (
    'cat main.txt >/dev/null && if [ -e "$HOME/.flags-cache.json" ]; then echo fine; '
    "else echo '{}' > \"$HOME/.flags-cache.json\"; echo 'BUG: no flags' >&2; exit 1; fi"
)


def _source(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    (src / "main.txt").write_text("needed\n")
    for n in range(6):
        (src / f"junk{n}.txt").write_text(f"junk {n}\n" * 5)
    return src


def _reduce(tmp_path: Path, *extra: str) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    args = ["reduce", str(_source(tmp_path)), "-o", str(out), "--command", COMMAND]
    args += ["--match", "BUG: no flags", "--jobs", "1", *extra]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout + result.stderr, out


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's HOME for the test: a fresh directory, never the real one."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


def test_a_failure_that_needs_an_empty_home_is_reported_as_not_reproducing_in_your_shell(
    tmp_path: Path, home: Path
) -> None:
    code, output, out = _reduce(tmp_path)
    assert code == 1, output
    report_path = tmp_path / "out.repomin" / "report.json"
    report = json.loads(report_path.read_text("utf-8"))
    shell = report["user_shell"]
    # the run before the search found the empty cache and reproduced (the failure it showed
    # is the samples'), and wrote the cache: every run after the search finds it
    assert (shell["status"], shell["runs"], shell["reproduced"]) == ("not_reproduced", 3, 0)
    assert "before the search" in output
    assert "does NOT reproduce in your own shell" in output
    notes = (tmp_path / "out.repomin" / "REPOMIN.md").read_text("utf-8")
    assert "does NOT reproduce in your own shell" in notes
    assert "env -i" in notes  # the plain-shell command that recreates the samples' environment
    if report["execution"]["trace"] == "strace":
        assert (
            "~/.flags-cache.json exists in your HOME (the samples' HOME was empty)"
            in shell["differences"]
        )
    assert (out / "main.txt").is_file()  # exported all the same
    assert not validate_file(report_path, payload=out)[1].problems
    assert (home / ".flags-cache.json").is_file()  # the check ran in this HOME


def test_the_check_can_be_skipped_for_an_environment_not_safe_to_run_in(
    tmp_path: Path, home: Path
) -> None:
    code, output, _ = _reduce(tmp_path, "--user-shell-runs", "0")
    assert code == 0, output
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text("utf-8"))
    assert report["user_shell"]["status"] == "disabled"
    assert not (home / ".flags-cache.json").exists()  # nothing ran in the user's HOME


def test_a_negative_run_count_is_a_usage_error(tmp_path: Path) -> None:
    code, output, _ = _reduce(tmp_path, "--user-shell-runs", "-1")
    assert code == 2
    assert "--user-shell-runs -1 must be 0 or more" in output
