"""What ``repomin reduce`` says on stderr when stderr is not a terminal (a pipe, a log file, a
job in the background), on real ``repomin reduce`` processes.

* One plain line per stage -- the baseline (when it ends), the traced run, each pass as it
  starts, the final test, the runs in your shell, the export -- each with the elapsed time, the
  tree's size, the runs so far and the accepted mutations.
* At most one status line every ``HEARTBEAT_SECONDS`` (30 s) between
  them, so a long stage is never silent (shown here on the display itself, with a short interval).
* ``--resume`` says what it found: trees already decided, accepted mutations, the incumbent's
  size, whether a backtrack is pending.
* ``-q`` stays silent.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from repomin.app import progress as display
from tests.conftest import reduce_argv
from tests.e2e._reduce import search_case, write_tree

COMMAND = "grep -q NEEDED keep.txt 2>/dev/null && { echo BUG; exit 1; }; exit 0"

#: ``repomin: m:ss LABEL...: N files, B; R runs; A accepted`` (the stage lines' shape)
_STAGE = re.compile(
    r"^repomin: \d+:\d\d (?P<label>[^:]+): .*\d+ files?, .*; \d+ runs?; \d+ accepted"
)


def _source(tmp_path: Path) -> Path:
    junk = {f"junk{i}/f.txt": f"line {i}\n" * 3 for i in range(12)}
    return write_tree(tmp_path / "repo", {"keep.txt": "NEEDED\nfiller\n", **junk})


def _argv(src: Path, out: Path, *extra: str) -> list[str]:
    return reduce_argv(
        src, out, COMMAND, "BUG", "--jobs", "1", "--baseline-runs", "3", "--final-runs", "3",
        "--user-shell-runs", "2", "--no-session", *extra,
    )  # fmt: skip


def _labels(stderr: str) -> list[str]:
    return [m.group("label") for line in stderr.splitlines() if (m := _STAGE.match(line))]


def test_a_reduction_in_a_pipe_prints_one_line_per_stage(tmp_path: Path) -> None:
    src = _source(tmp_path)
    done = subprocess.run(_argv(src, tmp_path / "out"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    labels = _labels(done.stderr)
    assert labels, done.stderr
    passes = [label for label in labels if label.startswith("pass ")]
    assert labels[0].startswith("baseline"), labels  # said when it has ended
    assert labels[1] == "your shell (before the search) (1 run)", labels
    assert labels[2] == "traced run", labels
    assert passes and labels.index(passes[0]) == 3, labels
    assert labels[-3:] == ["final test (3 runs)", "your shell (2 runs)", "export"], labels
    assert "baseline (3 runs in " in labels[0]
    # every stage is one line: the stages after the search appear once each
    assert sum(label.startswith("final test") for label in labels) == 1
    # a reduction of a few seconds shows no status line between stages (one per 30 s at most)
    assert getattr(display, "HEARTBEAT_SECONDS", None) == 30.0
    assert not [line for line in done.stderr.splitlines() if " in flight " in line], done.stderr


def test_quiet_stays_silent_in_a_pipe(tmp_path: Path) -> None:
    src = _source(tmp_path)
    done = subprocess.run(
        _argv(src, tmp_path / "out", "-q"), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""


def test_the_status_line_comes_between_stages_at_most_once_per_interval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The pipe display's timer on its own (the default interval, 30 s, is too long for a
    test): during one long stage a status line appears, at most one per interval."""
    progress = display.NoticeProgress(heartbeat=0.25)  # type: ignore[call-arg]
    progress.start()
    progress.start()  # the CLI and the pipeline both start it: one timer
    progress.update(files=7, bytes=300, jobs=2)
    progress.stage("files")
    time.sleep(1.15)
    progress.stop()
    progress.stop()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("repomin: 0:00 pass files: 7 files, 300 B; 0 runs; 0 accepted")
    status = lines[1:]
    assert 2 <= len(status) <= 5, lines
    assert all(" files  7 files 300 B  runs 0 " in line for line in status), status
    time.sleep(0.4)
    assert capsys.readouterr().err == ""  # stopped: no timer left behind


# -- --resume says what it found ---------------------------------------------------------------


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.01)


def test_resume_says_what_it_found(tmp_path: Path) -> None:
    block, started, argv = search_case(tmp_path)
    journal = tmp_path / "out.repomin-session" / "journal.jsonl"
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (journal.exists() and len(journal.read_text().splitlines()) >= 2):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    block.touch()
    _wait_for(started, proc)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    accepted = len(records)
    session = tmp_path / "out.repomin-session"
    manifest = json.loads((session / "trees" / f"{records[-1]['tree']}.json").read_text())
    files = sum(1 for row in manifest if row[1] != "dir")
    size = sum(len((session / "blobs" / row[4]).read_bytes()) for row in manifest)
    decided = len((session / "ledger.jsonl").read_text().splitlines())

    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = [line for line in done.stderr.splitlines() if line.startswith("repomin: resuming: ")]
    assert len(found) == 1, done.stderr
    match = re.fullmatch(
        r"repomin: resuming: baseline restored \(3/3 runs reproduced\); (\d+) trees already "
        r"decided; (\d+) accepted mutations; the incumbent has (\d+) files, (\d+) B; no "
        r"backtrack pending",
        found[0],
    )
    assert match, found[0]
    assert int(match.group(1)) == decided >= 2  # the killed candidate is not among them
    assert int(match.group(2)) == accepted >= 2
    assert (int(match.group(3)), int(match.group(4))) == (files, size)
    assert files < 9
    # the restored baseline is said as such, before the search goes on
    assert "baseline (restored from the session, θ " in done.stderr
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["execution"]["resumed"] is True


def _counter(state: Path) -> str:
    """Shell: ``n`` = how often this tree's content has run (counted outside the tree)."""
    return (
        "key=$( (find . -type f | sort; cat keep.txt 2>/dev/null) | md5sum | cut -c1-16); "
        f"n=$(flock {state}/lock sh -c 'f={state}/$0; n=$(cat $f 2>/dev/null || echo 0); "
        'n=$((n+1)); echo $n > $f; echo $n\' "$key"); '
    )


@pytest.mark.slow
def test_resume_says_a_backtrack_is_pending(tmp_path: Path) -> None:
    """SIGKILL between a failed payload gate and its revert (the case of
    ``test_interrupts.test_sigkill_after_a_failed_gate_resumes_by_backtracking``): the resume
    says it backtracks first."""
    keep = "NEEDED\n" + "".join(f"filler {i}\n" for i in range(3))
    files = {"keep.txt": keep, "bad.txt": "bad\n", **{f"junk{i}.txt": f"{i}\n" for i in range(2)}}
    src = write_tree(tmp_path / "repo", files)
    state = tmp_path / "state"
    state.mkdir()
    gate_done, blocked = state / "gate-done", tmp_path / "blocked"
    command = (
        _counter(state)
        + f"if [ -f {gate_done} ] && [ ! -f {blocked} ]; then touch {blocked}; sleep 60; fi; "
        + "grep -q NEEDED keep.txt 2>/dev/null || exit 0; "
        + "[ -f bad.txt ] && { echo BUG; exit 1; }; "
        + f'[ "$n" -eq 6 ] && touch {gate_done}; '
        + '[ "$n" -eq 1 ] && { echo BUG; exit 1; }; exit 0'
    )
    argv = reduce_argv(
        src, tmp_path / "out", command, "BUG", "--jobs", "1", "--baseline-runs", "5",
        "--final-runs", "5", "--passes", "files,lines", "--user-shell-runs", "0",
    )  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(blocked, proc, 240)
    proc.kill()
    proc.communicate(timeout=60)

    done = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = [line for line in done.stderr.splitlines() if line.startswith("repomin: resuming: ")]
    assert len(found) == 1, done.stderr
    assert found[0].endswith("; a failed final test is pending: backtracking first"), found
