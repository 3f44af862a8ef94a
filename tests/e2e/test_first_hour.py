"""The first hour of a new user, end to end through the real ``repomin`` process:
a wrong set-up is diagnosed at the first baseline run, ignored paths that hide the failure are
named, the live display moves under a pty, and the summary's commands work."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.conftest import reduce_argv

ROOT = Path(__file__).resolve().parents[2]
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")


def env() -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TERM": "xterm"}
    out.pop("NO_COLOR", None)
    return out


def repomin(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "repomin", *args],
        env=env(),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_empty_command_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a\n")
    done = repomin(
        "reduce",
        str(tmp_path / "src"),
        "-o",
        str(tmp_path / "out"),
        "--command",
        " ",
        "--match",
        "x",
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("repomin: error: --command is empty")
    assert not (tmp_path / "out").exists()


def test_typo_in_match_is_shown_at_the_first_run(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.sh").write_text('echo "Traceback"; echo "KeyError: \'root\'" >&2; exit 1\n')
    count = tmp_path / "count"
    # runs after the first are slow: the diagnosis must not wait for them
    command = (
        f"n=$(cat {shlex.quote(str(count))} 2>/dev/null || echo 0); "
        f"echo $((n + 1)) > {shlex.quote(str(count))}; "
        '[ "$n" -ge 1 ] && sleep 2; sh main.sh'
    )
    with subprocess.Popen(
        reduce_argv(
            src,
            tmp_path / "out",
            command,
            "KeyErorr",
            "--baseline-runs",
            "5",
            "--jobs",
            "1",
        ),
        env=env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        runs_when_shown = int(count.read_text())
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 2
    assert first == (
        "repomin: baseline run 1 did not reproduce: exit code 1; --match 'KeyErorr' not found in "
        "the output\n"
    )
    assert runs_when_shown < 5  # shown before the baseline finished
    assert "repomin:   | KeyError: 'root'\n" in rest
    final = rest.strip().splitlines()[-1]
    # 3 of 5 passes are needed for a lower bound of 0.1: the baseline stops after 3 misses
    assert final.startswith(
        "repomin: error: the command did not reproduce the failure in any of 3 baseline runs "
        "(stopped after 3 of 5"
    )
    assert "first failing baseline run: exit code 1, --match 'KeyErorr' not found" in final
    assert not (tmp_path / "out").exists()


def test_failure_inside_node_modules_names_it(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    (src / "node_modules" / "lib").mkdir(parents=True)
    (src / "node_modules" / "lib" / "index.sh").write_text("echo 'Error: BUG in lib' >&2; exit 1\n")
    for i in range(5):
        (src / "node_modules" / "lib" / f"m{i}.js").write_text(f"module {i}\n")
    (src / "app.sh").write_text("sh node_modules/lib/index.sh\n")
    done = repomin(
        "reduce",
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        "sh app.sh",
        "--match",
        "BUG in lib",
        "--baseline-runs",
        "2",
    )
    assert done.returncode == 2, done.stderr
    final = done.stderr.strip().splitlines()[-1]
    assert "node_modules (default ignore): 6 files" in final
    assert "--no-default-ignores" in final
    assert not (tmp_path / "out").exists()


def last_frame(raw: str) -> str:
    segments = [s.strip() for s in re.split(r"[\r\n]", _CONTROL.sub("", raw)) if s.strip()]
    return segments[-1] if segments else ""


def read_until(child: pexpect.spawn, deadline: float, raw: list[str]) -> str:  # type: ignore[type-arg]
    while (left := deadline - time.monotonic()) > 0:
        with contextlib.suppress(pexpect.TIMEOUT):
            raw.append(child.read_nonblocking(65536, timeout=min(left, 0.05)))
    return last_frame("".join(raw))


@pytest.mark.slow
def test_live_display_moves_during_a_5s_run(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    argv = reduce_argv(
        src,
        tmp_path / "out",
        "sleep 5; echo BUG",
        "BUG",
        "--baseline-runs",
        "1",
        "--min-baseline-rate",  # one run can reach a lower bound of 0.05, not the default 0.1
        "0.05",
        "--jobs",
        "1",
        "--no-trace",
        "--no-session",
    )
    child = pexpect.spawn(
        argv[0],
        argv[1:],
        env=env(),
        dimensions=(24, 200),
        encoding="utf-8",
    )
    try:
        child.expect("in flight 1/1", timeout=30)
        raw: list[str] = []
        start = time.monotonic()
        first = read_until(child, start + 1.0, raw)
        second = read_until(child, start + 2.5, raw)  # a loaded machine refreshes late
        for frame in (first, second):
            assert "baseline 0/1" in frame and "in flight 1/1 oldest" in frame, frame
        clocks = [re.match(r"(\d+):(\d\d)  ", f) for f in (first, second)]
        assert all(clocks), (first, second)
        assert first.split(" ", 1)[0] != second.split(" ", 1)[0], (first, second)
    finally:
        child.kill(2)
        child.close(force=True)


def test_summary_and_repomin_md_commands_work_where_they_say(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "bug.txt").write_text("BUG\n")
    for i in range(4):
        (src / f"other{i}.txt").write_text(f"filler {i}\n" * 5)
    work = tmp_path / "work"
    work.mkdir()
    done = repomin(
        "reduce",
        str(src),
        "-o",
        "out",  # relative: the summary must still print absolute paths
        "--command",
        "cat bug.txt; exit 1",
        "--match",
        "BUG",
        "--baseline-runs",
        "2",
        "--no-trace",
        "--passes",
        "files",
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"repomin: payload: {work / 'out'}" in lines
    assert f"repomin: report:  {work / 'out.repomin' / 'report.json'}" in lines
    assert "repomin: kept:" in lines and "  bug.txt  4 B" in lines
    assert any(line.startswith("repomin: removed: files: 4 files, 180 B in ") for line in lines)
    md = (work / "out.repomin" / "REPOMIN.md").read_text()
    assert "bug.txt  4 B" in md
    blocks = re.findall(r"```sh\n(.*?)\n```", md, re.S)
    validate = next(b for b in blocks if b.startswith("repomin report validate"))
    # REPOMIN.md says: run from the directory holding out/ and out.repomin/ (here: work).
    argv = shlex.split(validate)[1:]
    checked = repomin(*argv, cwd=work)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    by_hand = next(b for b in blocks if b.startswith("d=$(mktemp -d)"))
    ran = subprocess.run(["sh", "-c", by_hand], cwd=work, capture_output=True, text=True)
    assert ran.returncode == 1 and "BUG" in ran.stdout
    # the replay line of the terminal summary works from any directory
    replay = next(line for line in lines if line.startswith("repomin: replay:"))
    argv = shlex.split(replay.split(":", 2)[2])[1:]
    replayed = repomin(*argv, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
