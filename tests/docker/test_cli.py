"""``repomin reduce --backend docker`` end to end: interrupt in the baseline or the traced run,
resume, the report.

The command is ReproMin's own CLI in a subprocess, so signals, exit codes and the report are
exactly what a user gets. The Docker limits are left at their defaults, so the report must
record them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from repomin.report.validate import validate_report
from tests.conftest import make_repo, reduce_argv
from tests.docker._support import BUSYBOX

pytestmark = pytest.mark.docker

NEEDED = ["d2/f0.txt", "f1.txt"]
#: Slow only while ``slow.txt`` is in the tree (the baseline's runs), so an interrupt lands there.
COMMAND = (
    "if [ -f slow.txt ]; then sleep 0.5; fi; "
    "cat d2/f0.txt f1.txt 2>/dev/null | grep -c NEEDED | grep -qx 2 && { echo BUG; exit 1; }; "
    "exit 0"
)


def reduce_cmd(src: Path, out: Path, *extra: str) -> list[str]:
    return reduce_argv(
        src,
        out,
        COMMAND,
        "BUG",
        "--backend",
        "docker",
        "--image",
        BUSYBOX,
        "--jobs",
        "1",
        "--baseline-runs",
        "3",
        "--final-runs",
        "3",
        "--passes",
        "trace,files",
        "-q",
        *extra,
    )


def containers_of(client: Any, pid: int) -> list[str]:
    found = client.api.containers(all=True, filters={"label": f"io.repomin.pid={pid}"})
    return [c["Id"][:12] for c in found]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("during", ["baseline", "trace"])
def test_sigint_in_the_baseline_or_trace_exits_130_and_resume_finishes_with_the_limits_recorded(
    client: Any, tmp_path: Path, during: str
) -> None:
    src = tmp_path / "repo"
    make_repo(src, 6, NEEDED, seed=3)
    (src / "slow.txt").write_text("slow\n")
    out = tmp_path / "out"
    session = tmp_path / "out.repomin-session"
    proc = subprocess.Popen(
        reduce_cmd(src, out),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_default_sigint,  # a suite started in the background ignores SIGINT
    )
    deadline = time.monotonic() + 60
    # The session exists before the baseline; baseline.json appears when the traced run starts.
    marker = session / ("config.json" if during == "baseline" else "baseline.json")
    while not marker.exists() and proc.poll() is None:
        assert time.monotonic() < deadline, f"{marker.name} never appeared"
        time.sleep(0.02)
    time.sleep(0.3)  # inside a run on the initial tree (each sleeps 0.5 s)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"--resume" in err
    assert (session / "config.json").exists()
    assert (session / "baseline.json").exists() == (during == "trace")
    assert not out.exists()
    assert containers_of(client, proc.pid) == []

    done = subprocess.run(reduce_cmd(src, out, "--resume"), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == NEEDED
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert validate_report(report).valid, validate_report(report).rules()
    execution = report["execution"]
    assert execution["backend"] == "docker"
    assert execution["sample_isolation"] == "container"
    assert execution["docker_strategy"] == "agent-per-worker"
    assert execution["docker_limit_defaults"] == ["memory", "pids_limit", "tmp_size", "work_size"]
    assert execution["docker_pids_limit"] == 512
    assert (execution["docker_tmp_size"], execution["docker_work_size"]) == ("512m", "1g")
    assert 256 << 20 <= execution["docker_memory_bytes"] <= 2 << 30
    assert execution["docker_work_mount"] == "tmpfs,nosuid,nodev"
