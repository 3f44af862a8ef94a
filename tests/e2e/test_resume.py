"""Interrupt a reduction (SIGINT, then SIGKILL), resume it, and get the uninterrupted payload."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import make_repo

NEEDED = ["d2/f0.txt", "f1.txt"]
COMMAND = (
    "sleep 0.02; cat d2/f0.txt f1.txt 2>/dev/null | grep -c NEEDED | grep -qx 2 "
    "&& { echo BUG; exit 1; }; exit 0"
)


def _cmd(src: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "repomin",
        "reduce",
        str(src),
        "-o",
        str(out),
        "--command",
        COMMAND,
        "--match",
        "BUG",
        "--jobs",
        "1",
        "--baseline-runs",
        "5",
        "--final-runs",
        "3",
        "-q",
        *extra,
    ]


def _payload(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _wait_for_journal(journal: Path, lines: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= lines:
            return
        time.sleep(0.05)
    pytest.fail(f"journal never reached {lines} lines (exit {proc.poll()})")


@pytest.mark.slow
def test_sigint_sigkill_resume_matches_uninterrupted(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 150, NEEDED, seed=4)
    ref = tmp_path / "ref"
    subprocess.run(_cmd(src, ref, "--no-session"), check=True, capture_output=True)

    out = tmp_path / "out"
    session = tmp_path / "out.repomin-session"
    journal = session / "journal.jsonl"
    proc = subprocess.Popen(_cmd(src, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for_journal(journal, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"--resume" in err and not out.exists()
    first = len(journal.read_text().splitlines())

    proc = subprocess.Popen(
        _cmd(src, out, "--resume"), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _wait_for_journal(journal, first + 2, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert not out.exists()
    decided = [
        json.loads(line)["tree"]
        for line in (session / "ledger.jsonl").read_text().splitlines()
        if line.endswith("}")
    ]
    assert len(decided) == len(set(decided)), "a resumed session re-decided a known tree"

    done = subprocess.run(_cmd(src, out, "--resume"), capture_output=True)
    assert done.returncode == 0, done.stderr
    assert _payload(out) == _payload(ref)
    report = json.loads((tmp_path / "out.repomin/report.json").read_text())
    assert report["execution"]["resumed"] is True
    assert report["phase_statistics"]["coverage"] == "partial"
    assert not session.exists(), "a finished session is removed"


def test_resume_refuses_a_different_configuration(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 10, NEEDED, seed=2)
    session = tmp_path / "s"
    session.mkdir()
    (session / "config.json").write_text(json.dumps({"format": 1, "command": "other"}))
    res = subprocess.run(
        _cmd(src, tmp_path / "out", "--resume", "--session", str(session)),
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2
    assert "configuration differs" in res.stderr and "command" in res.stderr
    fresh = subprocess.run(
        _cmd(src, tmp_path / "out", "--session", str(session)), capture_output=True, text=True
    )
    assert fresh.returncode == 2 and "--resume" in fresh.stderr
