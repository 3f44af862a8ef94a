"""The host runner measures each sample's CPU time (``Outcome.cpu_seconds``) with ``wait4``.

The busy loops below burn a known amount of CPU time (``time.process_time``), so the expected
value holds on a loaded machine too: load stretches their wall time, not their CPU time.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from repomin.runners import sandbox
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree

TREE = Tree.of({"a.txt": Entry("file", b"x\n", text=True)})
needs_namespace = pytest.mark.skipif(
    sandbox.bwrap_problem() is not None, reason=f"no namespace: {sandbox.bwrap_problem()}"
)
MODES = [pytest.param("namespace", marks=needs_namespace), "supervisor"]
#: What the sandbox's own processes and two Python start-ups may add (measured: ~0.03 s).
OVERHEAD = 0.35


def burn(seconds: float, then_sleep: float = 0.0) -> str:
    """A shell word list: a Python process that burns ``seconds`` of CPU time, prints
    ``burnt``, then sleeps ``then_sleep`` seconds."""
    code = (
        "import sys, time\n"
        "t = time.process_time()\n"
        f"while time.process_time() - t < {seconds}: pass\n"
        "print('burnt', flush=True)\n"
        f"time.sleep({then_sleep})\n"
    )
    return f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(code)}"


def run(tmp_path: Path, mode: str, command: str, timeout: float = 60.0) -> Outcome:
    runner = HostRunner(base_dir=tmp_path, isolation=mode)
    try:
        return runner.run(TREE, RunRequest(command, {}, timeout))
    finally:
        runner.close()


@pytest.mark.parametrize("mode", MODES)
def test_cpu_of_a_child_and_a_grandchild_is_counted(tmp_path: Path, mode: str) -> None:
    # A child of the shell and a grandchild (under a second shell), both waited for.
    out = run(tmp_path, mode, f"{burn(0.3)} & sh -c {shlex.quote(burn(0.3))}; wait")
    assert out.exit_code == 0 and out.stdout.count(b"burnt") == 2, out.stderr
    assert out.cpu_seconds is not None
    assert 0.6 <= out.cpu_seconds <= 0.6 + OVERHEAD
    assert out.duration >= 0.3  # wall is measured separately (two cores may halve it)


@pytest.mark.parametrize("mode", MODES)
def test_a_sleeping_sample_costs_almost_no_cpu(tmp_path: Path, mode: str) -> None:
    out = run(tmp_path, mode, "sleep 0.6")
    assert out.exit_code == 0 and out.duration >= 0.6
    assert out.cpu_seconds is not None and out.cpu_seconds < 0.15


@pytest.mark.parametrize("mode", MODES)
def test_a_timed_out_sample_keeps_the_cpu_time_of_every_process(tmp_path: Path, mode: str) -> None:
    # Both processes are killed in their sleep, after burning: only an orderly stop (every
    # process reaped below the sample's leader) keeps their CPU time.
    busy = burn(0.3, then_sleep=60)
    out = run(tmp_path, mode, f"{busy} & sh -c {shlex.quote(busy)}", timeout=4.0)
    assert out.timed_out and out.exit_code == -signal.SIGKILL
    assert out.stdout.count(b"burnt") == 2, "the machine was too loaded to burn 0.3 s in 4 s"
    assert out.cpu_seconds is not None
    assert 0.6 <= out.cpu_seconds <= 0.6 + OVERHEAD
    assert 4.0 <= out.duration < 4.0 + 5.0


@pytest.mark.parametrize("mode", MODES)
def test_samples_get_default_sigpipe_and_sigxfsz(tmp_path: Path, mode: str) -> None:
    # The supervisor is Python, which ignores both; a command must not inherit that.
    out = run(tmp_path, mode, "grep SigIgn /proc/self/status; yes | head -n 1")
    mask = int(out.stdout.split()[1], 16)
    assert not mask & (1 << (signal.SIGPIPE - 1)) and not mask & (1 << (signal.SIGXFSZ - 1))
    assert out.stdout.split()[2:] == [b"y"] and b"Broken pipe" not in out.stderr


def test_namespace_init_is_read_from_bwraps_info() -> None:
    info = b'{\n    "child-pid": 4242,\n    "pid-namespace": 4026532189\n}\n'
    assert sandbox.namespace_init(info) == 4242
    assert sandbox.namespace_init(info[:20]) is None  # not yet completely written
    assert sandbox.namespace_init(b'{"child-pid": 1}') is None


def test_only_a_child_of_the_given_parent_is_signalled() -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        assert not sandbox.signal_child(os.getppid(), other.pid, signal.SIGKILL)
        assert other.poll() is None, "a process that is not the sample's was signalled"
        assert sandbox.signal_child(os.getpid(), other.pid, signal.SIGKILL)
        assert other.wait(timeout=5) == -signal.SIGKILL
    finally:
        other.kill()
        other.wait()


def test_the_docker_agents_times_become_cpu_seconds() -> None:
    from repomin.runners.docker_agent import _cpu

    # dash, busybox ash and bash print `times` differently; minutes count.
    assert _cpu(["0m0.000000s", "0m0.010000s", "0m0.130000s", "0m0.170000s"]) == 0.29
    assert _cpu(["0m0.000s", "0m0.000s", "1m0.500s", "0m0.250s"]) == 60.75
    assert _cpu(["0m0.000s", "-", "0m0.100s", "0m0.000s"]) is None


@pytest.mark.parametrize("mode", MODES)
def test_a_sample_that_does_not_stop_in_time_has_no_cpu_figure(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stop is lost (SIGUSR1 to the supervisor never arrives) and there is no grace: the
    # sample is killed outright and its (incomplete) CPU time is unknown rather than short.
    # (With the signal delivered, a stop on an idle core can finish before even a zero grace
    # looks; its CPU time is then complete, which is the other branch.)
    monkeypatch.setattr("repomin.runners.host.STOP_GRACE", 0.0)
    monkeypatch.setattr("repomin.runners.sandbox.signal_child", lambda *_args: True)
    real_kill = os.kill

    def kill(pid: int, signum: int) -> None:
        if signum != signal.SIGUSR1:
            real_kill(pid, signum)

    monkeypatch.setattr(os, "kill", kill)
    out = run(tmp_path, mode, "sleep 30", timeout=0.5)
    assert out.timed_out and out.exit_code == -signal.SIGKILL
    assert out.cpu_seconds is None and out.duration < 5
