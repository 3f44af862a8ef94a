"""Interrupt a reduction (SIGINT, then SIGKILL), resume it, and get the uninterrupted payload."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from repomin.app.session import SESSION_FORMAT
from tests.conftest import make_repo, reduce_argv

NEEDED = ["d2/f0.txt", "f1.txt"]
COMMAND = (
    "sleep 0.02; cat d2/f0.txt f1.txt 2>/dev/null | grep -c NEEDED | grep -qx 2 "
    "&& { echo BUG; exit 1; }; exit 0"
)


def _cmd(src: Path, out: Path, *extra: str) -> list[str]:
    return reduce_argv(
        src,
        out,
        COMMAND,
        "BUG",
        "--jobs",
        "1",
        "--baseline-runs",
        "5",
        "--final-runs",
        "3",
        "-q",
        *extra,
    )


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
    (session / "config.json").write_text(json.dumps({"format": SESSION_FORMAT, "command": "other"}))
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


#: Slow only on trees that still hold ``slow.txt`` (the baseline's and the traced run's).
SLOW = "if [ -f slow.txt ]; then sleep 0.4; fi; " + COMMAND


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists():
            return
        time.sleep(0.02)
    pytest.fail(f"{path.name} never appeared (exit {proc.poll()})")


def _slow_cmd(src: Path, out: Path, *extra: str) -> list[str]:
    cmd = _cmd(src, out, "--baseline-runs", "3", "--passes", "trace,files", *extra)
    cmd[cmd.index(COMMAND)] = SLOW
    return cmd


@pytest.mark.parametrize("during", ["baseline", "trace"])
def test_interrupt_in_baseline_or_trace_keeps_the_session(tmp_path: Path, during: str) -> None:
    src = tmp_path / "repo"
    make_repo(src, 6, NEEDED, seed=3)
    (src / "slow.txt").write_text("slow\n")
    out = tmp_path / "out"
    session = tmp_path / "out.repomin-session"
    proc = subprocess.Popen(_slow_cmd(src, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # The session exists before the baseline; baseline.json appears when the traced run starts.
    _wait_for(session / ("config.json" if during == "baseline" else "baseline.json"), proc)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"--resume" in err
    assert (session / "config.json").exists() and not out.exists()
    assert (session / "baseline.json").exists() == (during == "trace")

    done = subprocess.run(_slow_cmd(src, out, "--resume"), capture_output=True)
    assert done.returncode == 0, done.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == NEEDED
    report = json.loads((tmp_path / "out.repomin/report.json").read_text())
    baseline = report["events"][0]
    assert baseline["phase"] == "baseline"
    assert ("restored from the session" in baseline["description"]) == (during == "trace")


def test_a_search_a_budget_stopped_goes_on_with_resume(tmp_path: Path) -> None:
    """``--max-runs`` stops the search early: the payload is exported, the warning names
    ``--max-runs`` and says how to go on, and the session is kept, so ``--resume --force`` with
    a larger budget continues from the exported tree to the fixpoint (it used to be removed,
    and the warning's own advice ended in "no session")."""
    src = tmp_path / "src"
    make_repo(src, 40, NEEDED, seed=5)
    out = tmp_path / "out"
    first = subprocess.run(
        _cmd(src, out, "--max-runs", "3", "--no-trace", "--final-runs", "10"),
        capture_output=True,
        text=True,
    )
    assert first.returncode == 0, first.stderr
    notes = (tmp_path / "out.repomin" / "REPOMIN.md").read_text("utf-8")  # -q: no summary
    assert "**Warning:** --max-runs stopped the search before it reached its fixpoint" in notes
    assert "--resume --force and a larger --max-runs" in notes
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["execution"]["stop_reason"] == "max_runs"
    early = _payload(out)
    session = tmp_path / "out.repomin-session"
    assert session.is_dir()  # kept for --resume
    again = subprocess.run(
        _cmd(
            src, out, "--max-runs", "500", "--no-trace", "--final-runs", "10", "--resume", "--force"
        ),
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["execution"]["resumed"] is True
    assert report["execution"]["stop_reason"] == "fixpoint"
    size = sum(len(data) for data in _payload(out).values())
    assert sorted(_payload(out)) == NEEDED and size < sum(len(data) for data in early.values())
    assert not session.exists()  # a search that reached its fixpoint leaves no session
