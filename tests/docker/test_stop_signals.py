"""SIGTERM and SIGINT stop ``repomin reduce --backend docker`` within seconds.

The command is ReproMin's own CLI in a subprocess with two job slots, so that while the baseline
runs, one more sample (a baseline run or the traced run) waits for a slot. On the signal the
running samples are killed, the waiting one must not start (no container starts after the
signal), the containers are removed, and the exit status is the host backend's: 130 for both
signals, with the interrupted-baseline message.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_repo, reduce_argv
from tests.docker._support import BUSYBOX

pytestmark = pytest.mark.docker

#: Each run of the baseline takes a minute unless it is killed.
COMMAND = "echo BUG; sleep 60; exit 1"


def _containers(client: Any, pid: int, *, running: bool = False) -> list[str]:
    found = client.api.containers(all=not running, filters={"label": f"io.repomin.pid={pid}"})
    return [c["Id"][:12] for c in found]


def _default_signals() -> None:
    # The test worker may ignore SIGINT; the CLI gets the disposition a shell gives it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_in_the_baseline_stops_within_seconds_without_new_samples(
    client: Any, tmp_path: Path, signum: int
) -> None:
    src = tmp_path / "repo"
    make_repo(src, 4, ["f1.txt"], seed=5)
    out = tmp_path / "out"
    argv = reduce_argv(
        src,
        out,
        COMMAND,
        "BUG",
        "--backend",
        "docker",
        "--image",
        BUSYBOX,
        "--jobs",
        "2",
        "--baseline-runs",
        "4",
        "--passes",
        "trace,files",
        "-q",
    )
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_signals
    )
    try:
        deadline = time.monotonic() + 60
        while len(_containers(client, proc.pid, running=True)) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the two job slots never ran samples"
            time.sleep(0.05)
        time.sleep(1.0)  # both slots are inside a sample; a third sample waits for a slot
        sent_ns = time.time_ns()
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=90)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    starts = client.api.events(
        since=sent_ns // 1_000_000_000,
        until=int(time.time()) + 1,
        filters={"label": f"io.repomin.pid={proc.pid}", "event": "start"},
        decode=True,
    )
    late = [e for e in starts if int(e.get("timeNano", 0)) > sent_ns]
    assert late == [], "a container started after the signal"
    assert proc.returncode == 130, err
    assert b"interrupted during the baseline" in err and b"Traceback" not in err
    assert took < 10.0, f"stopped {took:.1f} s after the signal"
    assert _containers(client, proc.pid) == []
    assert not out.exists()
