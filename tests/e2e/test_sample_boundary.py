"""Sample boundary end to end: a payload stands alone (samples cannot reach SRC) and no sample
outlives ``repomin``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.runners import sandbox
from tests.unit.test_sandbox import _pids_with, _wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(sandbox.bwrap_problem() is not None, reason="no sample namespace here")
def test_payload_reproduces_after_src_is_renamed(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "data.txt").write_text("BUG inside\n")
    for i in range(3):
        (src / f"other{i}.txt").write_text(f"other {i}\n")
    # The command falls back to SRC's copy through its absolute path when data.txt is gone:
    # a sample that could see SRC would let the reduction delete data.txt.
    command = (
        f"{{ cat data.txt 2>/dev/null || cat {src}/data.txt; }} | grep -q BUG "
        "&& { echo 'BUG: found'; exit 1; }; exit 0"
    )
    result = CliRunner().invoke(
        cli,
        [
            "reduce", str(src), "-o", str(out), "--command", command, "--match", "BUG: found",
            "--baseline-runs", "2", "--final-runs", "2", "--no-session", "-q",
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["data.txt"]
    src.rename(tmp_path / "moved")
    ran = subprocess.run(["/bin/sh", "-c", command], cwd=out, capture_output=True, check=False)
    assert ran.returncode == 1 and b"BUG: found" in ran.stdout


def test_sigkill_of_repomin_leaves_no_sample_process(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    token = f"repomin-e2e-loop-{os.getpid()}"
    command = f": {token}; (setsid sh -c ': {token}-escaped; while :; do sleep 1; done' &); "
    command += "while :; do :; done"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "repomin", "reduce", str(src), "-o", str(tmp_path / "out"),
            "--command", command, "--match", "BUG", "--timeout", "600", "--no-session", "-q",
        ],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(token)
        if sandbox.bwrap_problem() is None:
            _wait_for(f"{token}-escaped")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and _pids_with(token):
            time.sleep(0.05)
        left = _pids_with(token)
        if sandbox.bwrap_problem() is not None:  # documented: setsid escapes the supervisor
            left = [p for p in left if f"{token}-escaped".encode() not in _cmdline(p)]
        assert left == [], "a sample process outlived repomin"
    finally:
        proc.kill()
        for pid in _pids_with(token):
            os.kill(pid, signal.SIGKILL)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
