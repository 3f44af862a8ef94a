"""The report's sample cost: ``execution.sample_seconds``, its basis and the samples' wall time.

``sample_seconds`` sums each sample's CPU time (user + system of its processes, as the runner
measured it) where the runner measured one, else its wall time; ``sample_seconds_basis`` says
which (``cpu``: every sample, ``wall``: none, ``mixed``); ``sample_wall_seconds`` sums the wall
time of every sample, so both are kept. The cross-field rule ``execution.sample_seconds`` lives
here too. Field meanings: ``docs/report-schema.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Recorded seconds are rounded to milliseconds.
_ROUNDING = 0.0015


def sample_basis(cpu: int, samples: int) -> str:
    """What ``sample_seconds`` sums when ``cpu`` of ``samples`` samples had a CPU time."""
    if samples and cpu == samples:
        return "cpu"
    return "mixed" if cpu else "wall"


def cost_problems(ex: Mapping[str, Any]) -> list[str]:
    """Rule ``execution.sample_seconds``: the cost fields come together (``sample_wall_seconds``
    is optional, older reports lack it), no samples cost nothing, and a ``wall`` basis sums the
    samples' wall time."""
    seconds, basis = ex.get("sample_seconds"), ex.get("sample_seconds_basis")
    wall = ex.get("sample_wall_seconds")
    if (seconds is None) != (basis is None) or (wall is not None and seconds is None):
        return [
            "sample_seconds and sample_seconds_basis come together (and with sample_wall_seconds)"
        ]
    if seconds is None:
        return []
    problems = []
    if ex.get("oracle_samples") == 0 and (seconds != 0 or basis != "wall" or (wall or 0) != 0):
        problems.append(f"no oracle samples, but sample_seconds is {seconds} with basis {basis!r}")
    elif basis == "wall" and wall is not None and abs(seconds - wall) > _ROUNDING:
        problems.append(
            f"sample_seconds_basis is 'wall' but sample_seconds {seconds} differs from "
            f"sample_wall_seconds {wall}"
        )
    return problems
