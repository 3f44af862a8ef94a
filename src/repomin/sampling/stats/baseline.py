"""The adaptive baseline: looks at a growing number of runs until the lower bound is high enough.

The baseline runs the unreduced tree ``first`` times (``--baseline-runs``) and looks: it passes
when the one-sided Clopper–Pearson lower bound of its passes reaches ``--min-baseline-rate``
``r``. When it does not but the failure showed at least once, it runs ``block`` more and looks
again, up to ``cap`` runs in all (docs/statistics.md §A4):

    looks n_1 = first < n_2 = first + block < ... < n_J = max(first, cap)
    pass at the first look j with  L(K_j, n_j; c) >= r,   i.e.  K_j >= needed(n_j)
    refuse when the first m_0 runs all failed, and at n_J when no look passed

``m_0 = first - needed(first) + 1`` (``first`` when the first look cannot pass at all) is where
a fixed ``first``-run baseline's rejection became certain for a command that had not
reproduced yet: such a command is refused there, as before the looks (16 runs at the defaults).

``needed(n) = fewest_passes(n, c, r)``. Rejection is certain, and the baseline stops, once the
passes so far plus every run left up to the cap cannot reach ``needed(cap)``: ``needed`` grows
by at most one per run (``L(k + 1, n + 1) >= L(k, n)``), so a cap out of reach puts every
earlier look out of reach too.

The repeated looks change what the baseline's lower bound means, not what the payload gate
guarantees: θ is fixed before the gate's fresh runs, so the gate's exact size at θ bounds its
error whatever θ is (docs/statistics.md §A4). :func:`baseline_odds` computes, exactly, what the
looks do change: how often a baseline at rate ``p`` passes, after how many runs, and how often
its stopped bound overshoots ``p``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from repomin.sampling.stats.bounds import fewest_passes, lower_bound

__all__ = ["BaselineOdds", "baseline_looks", "baseline_odds", "first_misses", "looks_needed"]


def baseline_looks(first: int, block: int, cap: int) -> tuple[int, ...]:
    """``first, first + block, ...`` up to ``max(first, cap)``, which is always the last look."""
    if first < 1 or block < 1:
        raise ValueError(f"need first >= 1 and block >= 1, got {first}, {block}")
    last = max(first, cap)
    looks = list(range(first, last + 1, block))
    if looks[-1] != last:
        looks.append(last)
    return tuple(looks)


@functools.lru_cache(maxsize=256)
def looks_needed(looks: tuple[int, ...], confidence: float, min_rate: float) -> tuple[int, ...]:
    """``needed(n)`` at each look: the fewest passes whose lower bound reaches ``min_rate``."""
    return tuple(fewest_passes(n, confidence, min_rate) for n in looks)


def first_misses(looks: tuple[int, ...], confidence: float, min_rate: float) -> int:
    """``m_0``: straight misses after which the baseline is refused (see module doc)."""
    first = looks[0]
    needed = looks_needed(looks, confidence, min_rate)[0]
    return first - needed + 1 if needed <= first else first


@dataclass(frozen=True, slots=True)
class BaselineOdds:
    """Exact operating characteristics of the adaptive baseline at one rate ``p`` (one run at
    a time, so the certain-refusal stop is counted run by run)."""

    p: float
    pass_probability: float
    #: E[runs] over every outcome (passed or refused)
    expected_runs: float
    #: E[runs | passed]
    expected_runs_passed: float
    #: P(passed and the stopped bound L(K, n; c) > p): the looks' effect on the bound's coverage
    overshoot: float
    #: P(passed at (K, n)) for every stop
    stops: tuple[tuple[int, int, float], ...]


@functools.lru_cache(maxsize=512)
def baseline_odds(
    p: float, looks: tuple[int, ...], confidence: float, min_rate: float
) -> BaselineOdds:
    """Dynamic programme over (runs made, passes) of the rule in the module doc."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    needed = dict(zip(looks, looks_needed(looks, confidence, min_rate), strict=True))
    misses = first_misses(looks, confidence, min_rate)
    cap = looks[-1]
    need_cap = needed[cap]
    passes = np.arange(cap + 1)
    mass = np.zeros(cap + 1)
    mass[0] = 1.0
    expected = passed = passed_runs = overshoot = 0.0
    stops: list[tuple[int, int, float]] = []
    for done in range(cap + 1):
        if done in needed:
            hit = (passes >= needed[done]) & (mass > 0)
            for k in np.flatnonzero(hit):
                prob = float(mass[k])
                stops.append((int(k), done, prob))
                passed += prob
                passed_runs += prob * done
                if lower_bound(int(k), done, confidence) > p:
                    overshoot += prob
            mass[hit] = 0.0
        if done == misses:
            mass[0] = 0.0  # the failure never showed in the first m_0 runs: refused
        mass[passes + (cap - done) < need_cap] = 0.0  # refusal certain
        if done == cap:
            break
        alive = float(mass.sum())
        if alive == 0.0:
            break
        expected += alive
        step = mass * (1.0 - p)
        step[1:] += mass[:-1] * p
        mass = step
    return BaselineOdds(
        p=p,
        pass_probability=passed,
        expected_runs=expected,
        expected_runs_passed=passed_runs / passed if passed else 0.0,
        overshoot=overshoot,
        stops=tuple(stops),
    )
