"""Ctrl-C and SIGKILL at the points where a reduction used to mishandle them, on real
``repomin reduce`` processes.

* SIGINT in the baseline: the runs ReproMin killed itself are not diagnosed as runs that "did
  not reproduce"; one "interrupted" line, exit 130.
* SIGINT in the final test (the payload gate): "interrupted; rerun ... --resume", exit 130, no
  traceback, nothing exported; ``--resume`` then finishes. With ``--export-on-interrupt`` the
  best tree is exported without final runs (exit 130).
* SIGKILL after a failed payload gate, while the search backtracks: the resumed reduction
  backtracks first instead of searching on from the tree that failed its gate.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import reduce_argv
from tests.e2e._reduce import search_case, write_tree


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"{path.name} never appeared; exit {proc.returncode}: {err}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"{path.name} never appeared in {seconds} s")


def _start(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _interrupt(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return err


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _counter(state: Path) -> str:
    """Shell: ``n`` = how often this tree's content has run (counted outside the tree)."""
    return (
        "key=$( (find . -type f | sort; cat keep.txt 2>/dev/null) | md5sum | cut -c1-16); "
        f"n=$(flock {state}/lock sh -c 'f={state}/$0; n=$(cat $f 2>/dev/null || echo 0); "
        'n=$((n+1)); echo $n > $f; echo $n\' "$key"); '
    )


# -- SIGINT in the baseline -------------------------------------------------------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigint_in_the_baseline_is_not_diagnosed_as_a_failed_run(tmp_path: Path, jobs: str) -> None:
    src = write_tree(tmp_path / "repo", {"keep.txt": "NEEDED\n", "junk.txt": "x\n"})
    started = tmp_path / "started"
    command = f"touch {started}; sleep 60; echo BUG; exit 1"
    argv = reduce_argv(src, tmp_path / "out", command, "BUG", "--jobs", jobs)
    proc = _start([*argv, "--baseline-runs", "4", "--passes", "files"])
    _wait_for(started, proc)
    time.sleep(0.3)  # every slot's sample is running
    err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert "did not reproduce" not in err and "SIGKILL" not in err and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0] and "--resume" in lines[0], err
    assert not (tmp_path / "out").exists()


# -- SIGINT in the final test -----------------------------------------------------------------


def _final_blocking(tmp_path: Path) -> tuple[Path, Path, str]:
    """A tree whose payload ({keep.txt}) runs fast when the search decides it, then -- while
    ``block`` exists -- touches ``started`` and sleeps in its final runs."""
    src = write_tree(
        tmp_path / "repo", {"keep.txt": "NEEDED\n", **{f"junk{i}.txt": f"{i}\n" for i in range(4)}}
    )
    state = tmp_path / "state"
    state.mkdir()
    block, started = tmp_path / "block", tmp_path / "started"
    block.touch()
    command = (
        _counter(state)
        + "[ -f keep.txt ] || exit 0; "
        + f'if [ "$(ls | wc -l)" -eq 1 ] && [ "$n" -gt 1 ] && [ -f {block} ]; then '
        + f"touch {started}; sleep 60; fi; echo BUG; exit 1"
    )
    return src, started, command


def _final_argv(src: Path, out: Path, command: str, *extra: str) -> list[str]:
    return reduce_argv(
        src, out, command, "BUG", "--jobs", "1", "--baseline-runs", "3", "--final-runs", "3",
        "--passes", "files", "--user-shell-runs", "0", "-q", *extra,
    )  # fmt: skip


def test_sigint_in_the_final_test_exits_130_and_resumes(tmp_path: Path) -> None:
    src, started, command = _final_blocking(tmp_path)
    out = tmp_path / "out"
    proc = _start(_final_argv(src, out, command))
    _wait_for(started, proc)
    err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "StopSearch" not in err and "did not reproduce" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0] and "--resume" in lines[0], err
    assert not out.exists() and not (tmp_path / "out.repomin").exists()
    assert (tmp_path / "out.repomin-session" / "journal.jsonl").exists()

    (tmp_path / "block").unlink()
    done = subprocess.run(_final_argv(src, out, command, "--resume"), capture_output=True)
    assert done.returncode == 0, done.stderr
    assert _files(out) == ["keep.txt"]
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["execution"]["resumed"] is True
    assert report["execution"]["final_validation_passed"] is True


def test_sigint_in_the_final_test_with_export_on_interrupt(tmp_path: Path) -> None:
    src, started, command = _final_blocking(tmp_path)
    out = tmp_path / "out"
    proc = _start(_final_argv(src, out, command, "--export-on-interrupt", "--no-session"))
    _wait_for(started, proc)
    err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "did not reproduce" not in err
    assert _files(out) == ["keep.txt"]
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["execution"]["stop_reason"] == "interrupted"
    assert report["execution"]["final_runs"] == 0


# -- SIGKILL between a failed payload gate and its backtrack ----------------------------------


def _gate_case(tmp_path: Path) -> tuple[Path, Path, str]:
    """Without ``bad.txt`` the failure shows only in a tree's first run, so the single-run
    search accepts deleting it (and then the lines of ``keep.txt``: several accepted trees)
    and the payload gate fails (fewer acceptances than ``incumbent_check_every``: no other
    backtracking comes first). The first run after that final test -- a re-test of the
    backtracking bisection -- touches ``blocked`` and sleeps (once), so the test can SIGKILL
    ReproMin exactly between the failed gate and the revert."""
    keep = "NEEDED\n" + "".join(f"filler {i}\n" for i in range(3))
    files = {"keep.txt": keep, "bad.txt": "bad\n", **{f"junk{i}.txt": f"{i}\n" for i in range(2)}}
    src = write_tree(tmp_path / "repo", files)
    state = tmp_path / "state"
    state.mkdir()
    gate_done, blocked = state / "gate-done", tmp_path / "blocked"
    final_runs = 5
    command = (
        _counter(state)
        + f"if [ -f {gate_done} ] && [ ! -f {blocked} ]; then touch {blocked}; sleep 60; fi; "
        + "grep -q NEEDED keep.txt 2>/dev/null || exit 0; "
        + "[ -f bad.txt ] && { echo BUG; exit 1; }; "
        + f'[ "$n" -eq {1 + final_runs} ] && touch {gate_done}; '
        + '[ "$n" -eq 1 ] && { echo BUG; exit 1; }; exit 0'
    )
    return src, blocked, command


def _gate_argv(src: Path, out: Path, command: str, *extra: str) -> list[str]:
    return reduce_argv(
        src, out, command, "BUG", "--jobs", "1", "--baseline-runs", "5", "--final-runs", "5",
        "--passes", "files,lines", "--user-shell-runs", "0", "-q", *extra,
    )  # fmt: skip


@pytest.mark.slow
def test_sigkill_after_a_failed_gate_resumes_by_backtracking(tmp_path: Path) -> None:
    src, blocked, command = _gate_case(tmp_path)
    out = tmp_path / "out"
    proc = _start(_gate_argv(src, out, command))
    _wait_for(blocked, proc, 240)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert not out.exists()
    journal = (tmp_path / "out.repomin-session" / "journal.jsonl").read_text().splitlines()
    assert len(journal) >= 2, "several accepted trees: the bisection re-tests one of them"
    assert not any(json.loads(line).get("revert") for line in journal), "killed before a revert"

    done = subprocess.run(_gate_argv(src, out, command, "--resume"), capture_output=True)
    assert done.returncode == 0, done.stderr
    assert "bad.txt" in _files(out)
    ex = json.loads((tmp_path / "out.repomin" / "report.json").read_text())["execution"]
    assert ex["resumed"] is True and ex["final_validation_passed"] is True
    # the failed gate (1) and the one that passed (2): the resumed search did not first take
    # the tree that had failed its gate to another final test
    assert ex["payload_gates"] == 2, ex


# -- SIGINT in the runs in the user's own shell (after the final test, before export) ---------


def test_sigint_in_the_user_shell_runs_is_an_interruption(tmp_path: Path) -> None:
    """The your-shell runs see the whole environment (samples do not): there the command
    signals that it started and sleeps briefly; Ctrl-C then must not end in an export with
    exit 0 as if nothing had happened."""
    src = write_tree(tmp_path / "repo", {"keep.txt": "NEEDED\n", "junk.txt": "x\n"})
    started = tmp_path / "started"
    command = (
        # the payload's runs only (no junk.txt): not the run before the search, on the source
        f'if [ -n "$REPOMIN_TEST_USER_SHELL" ] && [ ! -e junk.txt ]; then touch {started}; '
        "sleep 2; fi; grep -q NEEDED keep.txt 2>/dev/null && { echo BUG; exit 1; }; exit 0"
    )
    out = tmp_path / "out"
    argv = reduce_argv(
        src, out, command, "BUG", "--jobs", "1", "--baseline-runs", "3", "--final-runs", "3",
        "--passes", "files", "--user-shell-runs", "3",
    )  # fmt: skip
    env = {**os.environ, "REPOMIN_TEST_USER_SHELL": "1"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    _wait_for(started, proc)
    err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err and "--resume" in err
    assert not out.exists()
    assert (tmp_path / "out.repomin-session" / "journal.jsonl").exists()


def test_sigint_in_the_holdout_exits_130(tmp_path: Path) -> None:
    """Ctrl-C during the holdout (after export): the payload and a report whose holdout says
    ``interrupted`` are there, and the exit is 130 like every interruption, not 1."""
    src = write_tree(tmp_path / "repo", {"keep.txt": "NEEDED\n", "junk.txt": "x\n"})
    started = tmp_path / "started"
    command = (  # the holdout's runs are the only ones after the export
        f'if [ -e "{tmp_path}/out.repomin/report.json" ] || [ -d "{tmp_path}/out" ]; then '
        f"touch {started}; sleep 2; fi; "
        "grep -q NEEDED keep.txt 2>/dev/null && { echo BUG; exit 1; }; exit 0"
    )
    out = tmp_path / "out"
    argv = reduce_argv(
        src, out, command, "BUG", "--jobs", "1", "--baseline-runs", "3", "--final-runs", "3",
        "--passes", "files", "--user-shell-runs", "0", "--holdout-runs", "20",
    )  # fmt: skip
    proc = _start(argv)
    _wait_for(started, proc)
    err = _interrupt(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert _files(out) == ["keep.txt"]
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["holdout_certification"]["status"] == "interrupted"


# -- resuming after SIGINT in the search ------------------------------------------------------


def _interrupt_after_two_mutations(tmp_path: Path, argv: list[str], block: Path) -> None:
    journal = tmp_path / "out.repomin-session" / "journal.jsonl"
    proc = _start(argv)
    deadline = time.monotonic() + 120
    while not (journal.exists() and len(journal.read_text().splitlines()) >= 2):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    block.touch()
    _wait_for(tmp_path / "started", proc)
    err = _interrupt(proc)
    assert proc.returncode == 130, err


def test_a_candidate_killed_by_the_interrupt_is_decided_again_on_resume(tmp_path: Path) -> None:
    """The candidate running at Ctrl-C was killed by ReproMin: its verdict is no evidence, so
    the session must not keep it as a rejection (the resume would keep that directory)."""
    block, _, argv = search_case(tmp_path)
    _interrupt_after_two_mutations(tmp_path, argv, block)
    done = subprocess.run([*argv, "--resume", "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _files(tmp_path / "out") == ["keep/a.txt"]


# -- a damaged journal on resume --------------------------------------------------------------


def test_resume_reads_past_a_damaged_record_and_says_so(tmp_path: Path) -> None:
    """After an interrupt the first journal line is garbled and the ledger gets a torn last
    line (what a crash can leave). The resume uses the records after the damage, tells the
    user, and finishes with the right payload."""
    block, _, argv = search_case(tmp_path)
    _interrupt_after_two_mutations(tmp_path, argv, block)
    session = tmp_path / "out.repomin-session"
    lines = (session / "journal.jsonl").read_text().splitlines()
    lines[0] = lines[0][: len(lines[0]) // 2] + "\x00garbage"
    (session / "journal.jsonl").write_text("\n".join(lines) + "\n")
    with (session / "ledger.jsonl").open("a") as fh:
        fh.write('{"tree": "0123')

    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "journal.jsonl: skipped 1 unreadable record(s) (line 1)" in done.stderr
    assert "ledger.jsonl: dropped its last record" in done.stderr
    assert _files(tmp_path / "out") == ["keep/a.txt"]
