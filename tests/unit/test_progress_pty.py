"""The live display under a real pseudo-terminal: it redraws while a run is in flight."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path

import pexpect
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]")
_CLOCK = re.compile(r"^(\d+):(\d\d)  ")

CHILD = r"""
import sys
from repomin.app.progress import LiveProgress, ObservedRunner
from repomin.runners.base import RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Tree

progress = LiveProgress()
progress.start()
progress.update(files=0, bytes=0, jobs=1)
progress.stage("baseline", 1)
runner = ObservedRunner(HostRunner(), progress)
try:
    runner.run(Tree.of({}), RunRequest("sleep 5", {}, 30.0, "baseline-1"))
finally:
    runner.close()
    progress.stop()
print("CHILD-DONE", flush=True)
"""


def last_frame(raw: str) -> str:
    """The last status line drawn: control sequences removed, last non-empty segment."""
    text = _CONTROL.sub("", raw)
    segments = [s.strip() for s in re.split(r"[\r\n]", text) if s.strip()]
    return segments[-1] if segments else ""


class Screen:
    def __init__(self, child: pexpect.spawn) -> None:  # type: ignore[type-arg]
        self.child = child
        self.raw = ""

    def capture_at(self, deadline: float) -> str:
        """Read everything drawn until ``deadline`` (monotonic) and return the last frame."""
        while (left := deadline - time.monotonic()) > 0:
            with contextlib.suppress(pexpect.TIMEOUT):
                self.raw += self.child.read_nonblocking(65536, timeout=min(left, 0.05))
        return last_frame(self.raw)


def seconds(frame: str) -> int:
    match = _CLOCK.search(frame)
    assert match, frame
    return int(match.group(1)) * 60 + int(match.group(2))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a Linux pty and sh")
def test_clock_moves_and_run_in_flight_under_a_pty() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC), "TERM": "xterm", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    child = pexpect.spawn(
        sys.executable, ["-c", CHILD], env=env, dimensions=(24, 200), encoding="utf-8"
    )
    try:
        screen = Screen(child)
        child.expect("in flight 1/1", timeout=20)
        start = time.monotonic()
        first = screen.capture_at(start + 1.5)
        second = screen.capture_at(start + 2.5)
        assert "baseline 0/1" in first and "baseline 0/1" in second
        assert "in flight 1/1 oldest" in first and "in flight 1/1 oldest" in second
        assert seconds(second) > seconds(first), (first, second)
        child.expect("CHILD-DONE", timeout=30)
    finally:
        child.close(force=True)
