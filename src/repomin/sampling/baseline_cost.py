"""What a baseline that ReproMin refuses would have cost to reduce, said in the refusal.

Owns :func:`refusal`: the one-line error of an adaptive baseline that reached its cap (or made
that certain) without its lower bound reaching ``--min-baseline-rate``. It states the counts,
the cost of a reduction at the observed rate -- computed exactly from the designs the policy
would use (``SequentialDesign.expected_runs`` for a dead and a live candidate,
``CurtailedTest.expected_runs`` for the final test), with the wall time at ``--jobs`` from the
baseline's mean run -- and the options that change it (docs/statistics.md §A4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from repomin.runners.base import Outcome
from repomin.sampling import stats
from repomin.sampling.policy import SamplingConfig, SamplingPolicy

#: The cost is stated per this many search decisions (a reduction makes hundreds: 389 on the
#: generated 500-file benchmark case, docs/statistics.md §5).
DECISIONS = 100


def refusal(
    outcomes: Sequence[Outcome],
    passes: int,
    config: SamplingConfig,
    jobs: int,
    stopped: str,
    *,
    matched: bool = False,
) -> str:
    """The refusal of a baseline that reproduced (``matched``: matched, before its signature
    was pinned) ``passes`` of its ``len(outcomes)`` runs; ``stopped`` says when it stopped."""
    runs, c, r = len(outcomes), config.confidence, config.min_baseline_rate
    lower = stats.lower_bound(passes, runs, c)
    verb = "matched the failure in" if matched else "reproduced"
    head = (
        f"baseline {verb} {passes}/{runs} runs ({passes / runs:.1%}), lower bound "
        f"{lower:.3g} at confidence {c}, below --min-baseline-rate {r} ({stopped})"
    )
    mean = sum(o.duration for o in outcomes) / runs if runs else 0.0
    cost = _cost(config, passes, runs, lower, mean, max(1, jobs)) if passes else ""
    accept = f"--min-baseline-rate {_floor(lower)} accepts it" if lower > 0 else ""
    options = "; ".join(
        part
        for part in (
            accept,
            f"--baseline-runs {2 * runs} lets the baseline look longer",
            "--min-candidate-rate sets the threshold these costs depend on",
        )
        if part
    )
    return f"{head}{cost}; to reduce it anyway: {options}"


def _cost(
    config: SamplingConfig, passes: int, runs: int, lower: float, mean: float, jobs: int
) -> str:
    policy = SamplingPolicy.learn(config, passes, runs, lower)
    rate = passes / runs
    _alpha, design = policy.design_for(1)
    dead, live = design.expected_runs(0.0), design.expected_runs(rate)
    planned = policy.final_runs(config.final_runs)
    final = float(planned)
    if planned and policy.final_curtailed(config.final_runs):
        final = stats.CurtailedTest(policy.theta, policy.gate_alpha(1), planned).expected_runs(rate)
    low, high = DECISIONS * min(dead, live) + final, DECISIONS * max(dead, live) + final
    return (
        f"; at this rate a search decision costs about {dead:.1f} runs (a dead candidate) to "
        f"{live:.1f} (a live one) and the final test about {final:.0f}: {DECISIONS} decisions "
        f"≈ {low:,.0f}–{high:,.0f} runs, {_duration(low * mean / jobs)}–"
        f"{_duration(high * mean / jobs)} at --jobs {jobs} (mean run {mean:.2g} s)"
    )


def _floor(value: float) -> str:
    """``value`` rounded down to two significant digits (so that it is still reached)."""
    digits = max(2, 1 - math.floor(math.log10(value)))
    scale = 10**digits
    return f"{math.floor(value * scale) / scale:.{digits}f}".rstrip("0").rstrip(".")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
