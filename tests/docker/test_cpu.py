"""The Docker runner's agent reports each sample's CPU time (``Outcome.cpu_seconds``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.docker._support import run

pytestmark = pytest.mark.docker

#: A busybox-only busy loop in a child and a grandchild of the sample's shell.
LOOP = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"


def test_the_agent_measures_busy_and_idle_samples(module_runner: Any) -> None:
    runner = module_runner()
    assert runner.describe()["docker_strategy"] == "agent-per-worker"
    busy = run(runner, f"({LOOP}) & sh -c '{LOOP}'; wait")
    idle = run(runner, "sleep 0.5")
    assert busy.exit_code == 0 and idle.exit_code == 0
    assert busy.cpu_seconds is not None and idle.cpu_seconds is not None
    assert busy.cpu_seconds >= 0.1, "two busy loops burnt no measurable CPU time"
    assert busy.cpu_seconds <= 2 * busy.duration + 0.05  # at most two loops at once
    assert idle.cpu_seconds < 0.1 and idle.duration >= 0.5


def test_a_timed_out_container_sample_has_no_cpu_figure(module_runner: Any) -> None:
    out = run(module_runner(), f"{LOOP}; {LOOP}; {LOOP}; sleep 30", timeout=1.0)
    assert out.timed_out and out.cpu_seconds is None
