"""A whole ``repomin reduce`` through the CLI, for the end-to-end tests that only need its
report: the tree written from a mapping, the reduction run with test-sized sampling, the exit
code and the report's structure checked before the test reads what it is about."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.io import structural_errors
from tests.conftest import reduce_argv


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """``files`` (relative path -> text) written under ``root``; returns ``root``."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def reduce_ok(
    src: Path, out: Path, command: str, match: str, *extra: str, final_runs: int = 3
) -> dict[str, Any]:
    """``repomin reduce SRC -o OUT`` with 2 baseline runs, no session and ``extra`` options;
    asserts it exits 0 with a structurally valid report, and returns the report."""
    result = CliRunner().invoke(
        cli,
        [
            "reduce", str(src), "-o", str(out), "--command", command, "--match", match,
            "--baseline-runs", "2", "--final-runs", str(final_runs), "--no-session", "-q",
            *extra,
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    sidecar = out.parent / f"{out.name}.repomin"
    report: dict[str, Any] = json.loads((sidecar / "report.json").read_text())
    assert structural_errors(report) == []
    return report


def accepted_descriptions(report: Mapping[str, Any], phase: str) -> list[str]:
    """The descriptions of ``phase``'s accepted events, in order."""
    return [
        str(e.get("description", ""))
        for e in report["events"]
        if e.get("phase") == phase and e.get("decision") == "accepted"
    ]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def sigkill_at_mark(proc: subprocess.Popen[bytes], mark: Path, what: str) -> tuple[int, Path]:
    """Wait until the command wrote ``mark`` (``PID CWD`` of a ``sleep`` it started), SIGKILL
    ``repomin`` (``proc``) and check that the sleep died with it within 5 s; returns the
    sleep's PID and the directory it ran in."""
    deadline = time.monotonic() + 120
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()[1].decode()
        assert time.monotonic() < deadline, f"{what} never started"
        time.sleep(0.05)
    pid_text, _, cwd = mark.read_text().strip().partition(" ")
    sleeper = int(pid_text)
    assert alive(sleeper)
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 5
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    survived = alive(sleeper)
    if survived:
        os.kill(sleeper, signal.SIGKILL)  # never leave it behind, even when the check fails
    assert not survived, f"{what} outlived ReproMin"
    return sleeper, Path(cwd)


def search_case(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """Nine directories, one needed; ``files`` deletes the others one by one. Once ``block``
    exists, the next candidate touches ``started`` and sleeps (once), so SIGINT kills it."""
    files = {"keep/a.txt": "NEEDED\n", **{f"junk{i}/f.txt": f"{i}\n" for i in range(8)}}
    src = write_tree(tmp_path / "repo", files)
    block, started = tmp_path / "block", tmp_path / "started"
    command = (
        f"if [ -f {block} ] && [ ! -f {started} ]; then touch {started}; sleep 60; fi; "
        "grep -q NEEDED keep/a.txt 2>/dev/null && { echo BUG; exit 1; }; exit 0"
    )
    argv = reduce_argv(
        src, tmp_path / "out", command, "BUG", "--jobs", "1", "--baseline-runs", "3",
        "--final-runs", "3", "--passes", "files", "--user-shell-runs", "0",
    )  # fmt: skip
    return block, started, argv


def base_python() -> tuple[str, str]:
    """An interpreter outside any virtual environment (a venv disables the user site, where
    ``pip install --user`` puts packages) and its ``X.Y``; skips the test when it has none."""
    base = getattr(sys, "_base_executable", sys.executable)
    probe = "import site, sys; print(site.ENABLE_USER_SITE, '%d.%d' % sys.version_info[:2])"
    done = subprocess.run([base, "-c", probe], capture_output=True, text=True, check=False)
    enabled, _, version = done.stdout.strip().partition(" ")
    if done.returncode != 0 or enabled != "True":
        pytest.skip(f"{base} has no user site-packages")
    return base, version


def clean_up_after_sigkill(
    proc: subprocess.Popen[Any], sleeper: int | None, payload: Path | None
) -> None:
    """What a test that SIGKILLed ``repomin reduce`` leaves, removed whatever it asserted: the
    process if it still runs, the command's ``sleeper`` if it outlived it, and the payload
    copy's ``repomin-*`` directory."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
    if sleeper is not None and alive(sleeper):
        os.kill(sleeper, signal.SIGKILL)
    if payload is not None and payload.parent.name.startswith("repomin-"):
        shutil.rmtree(payload.parent, ignore_errors=True)
