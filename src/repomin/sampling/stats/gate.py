"""The payload gate's test: the fixed-n exact binomial test, stopped once its outcome is certain.

The k-th final test of a reduction runs up to ``n`` fresh runs of one fixed tree and passes iff
``final_test_passed(K, n, θ, α_k)`` (``bounds.py``), i.e. iff the passes ``K`` reach the
*critical count* ``c``: the fewest passes whose exact p-value ``P(Bin(n, θ) >= c)`` is at most
``α_k``. That decision is often settled before the n-th run (docs/statistics.md §2a):

- once ``c`` passes are in, the test passes whatever the other runs do;
- once the passes plus the runs not yet made cannot reach ``c``, it fails whatever they do.

Stopping there (*curtailment*) changes no decision -- the test passes on exactly the same
outcomes as the fixed-n test would, had the remaining runs been made -- so its exact size at θ
is the fixed test's, ``P(Bin(n, θ) >= c) <= α_k``, and its power at every ``p`` is the fixed
test's too. Only the number of runs falls. The counts recorded after a stop are the runs
actually made; the exact test recomputed on them (what the report validator does) gives the
same verdict: fewer runs with ``c`` passes have a smaller p-value, and a p-value at most ``α_k``
on ``K`` of ``m`` runs would make ``K + (n - m)`` of ``n`` pass too.

:func:`sized_runs` picks ``n``: the fewest runs whose power at a given rate reaches a target.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from repomin.sampling.stats.bounds import binom_pvalue, final_test_passed
from repomin.sampling.stats.sequential import Decision

__all__ = ["CurtailedTest", "critical_count", "gate_power", "sized_runs"]


def _check(runs: int, theta: float, alpha: float) -> None:
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    if not 0.0 < theta < 1.0 or not 0.0 < alpha < 1.0:
        raise ValueError(f"need 0 < theta, alpha < 1, got theta={theta!r}, alpha={alpha!r}")


@functools.lru_cache(maxsize=4096)
def critical_count(runs: int, theta: float, alpha: float) -> int:
    """The fewest passes ``c`` of ``runs`` with ``final_test_passed(c, runs, θ, α)``
    (``runs + 1`` when even ``runs`` passes fail). The p-value falls as passes grow, so the
    fixed-n test passes exactly when ``K >= c``; computed with the very function the report
    writer and the validator call."""
    _check(runs, theta, alpha)
    low, high = 1, runs + 1  # the answer lies in [low, high]
    while low < high:
        middle = (low + high) // 2
        if final_test_passed(middle, runs, theta, alpha):
            high = middle
        else:
            low = middle + 1
    return low


def gate_power(runs: int, theta: float, alpha: float, p: float) -> float:
    """Exact probability that the test of ``runs`` runs passes at pass probability ``p``:
    ``P(Bin(runs, p) >= c)``. At ``p = θ`` this is the exact size (at most ``α``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    c = critical_count(runs, theta, alpha)
    if c > runs:
        return 0.0
    if p in (0.0, 1.0):
        return float(p)
    return binom_pvalue(c, runs, p)


def sized_runs(theta: float, alpha: float, rate: float, power: float, cap: int) -> int | None:
    """The fewest runs ``n <= cap`` whose test passes with probability at least ``power`` at
    ``rate`` (exact; power saw-tooths in ``n`` as ``c`` steps, so this is the *first* such
    ``n``); ``None`` when no ``n <= cap`` reaches it (always when ``rate <= θ``: the power is
    then at most the size)."""
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie strictly between 0 and 1, got {power!r}")
    if rate <= theta:
        return None
    return _first_sized(theta, alpha, rate, power, cap)


@functools.lru_cache(maxsize=1024)
def _first_sized(theta: float, alpha: float, rate: float, power: float, cap: int) -> int | None:
    for runs in range(1, cap + 1):
        if gate_power(runs, theta, alpha, rate) >= power:
            return runs
    return None


@dataclass(frozen=True, slots=True)
class CurtailedTest:
    """The gate's fixed-n test of ``runs`` runs at level ``alpha`` against ``theta``, stopped
    once its outcome is certain (see module doc)."""

    theta: float
    alpha: float
    runs: int

    def __post_init__(self) -> None:
        _check(self.runs, self.theta, self.alpha)

    @property
    def critical(self) -> int:
        return critical_count(self.runs, self.theta, self.alpha)

    def decide(self, passes: int, done: int) -> Decision:
        """After ``done`` of the runs with ``passes`` passes: ACCEPT / REJECT once the fixed
        test's outcome is certain, else CONTINUE. An early stop also requires the exact test
        on the counts so far to say the same (it always does; the check keeps float ties from
        ever letting the recorded counts disagree with the decision)."""
        if not 0 <= passes <= done <= self.runs:
            raise ValueError(f"need 0 <= passes <= done <= runs={self.runs}: {passes}/{done}")
        now = final_test_passed(passes, done, self.theta, self.alpha)
        if done == self.runs:
            return Decision.ACCEPT if now else Decision.REJECT
        if done == 0:  # a gate makes at least one run
            return Decision.CONTINUE
        c = self.critical
        if passes >= c and now:
            return Decision.ACCEPT
        if passes + (self.runs - done) < c and not now:
            return Decision.REJECT
        return Decision.CONTINUE

    def acceptance_probability(self, p: float) -> float:
        """Exact: the fixed test's, ``P(Bin(runs, p) >= c)`` (curtailment changes no
        decision)."""
        return gate_power(self.runs, self.theta, self.alpha, p)

    def expected_runs(self, p: float) -> float:
        """Exact expected runs made, one run at a time, at pass probability ``p`` (with several
        slots a run in flight when the outcome became certain still finishes)."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must lie in [0, 1], got {p!r}")
        return _expected_runs(self.theta, self.alpha, self.runs, p)


@functools.lru_cache(maxsize=4096)
def _expected_runs(theta: float, alpha: float, runs: int, p: float) -> float:
    """Dynamic programme over (runs made, passes): ``mass[k]`` is the probability of standing
    undecided with ``k`` passes; every undecided state makes one more run. The stopping rule
    is :meth:`CurtailedTest.decide`'s, as counts: stop at ``k >= c`` or ``k + (n - done) < c``
    (its float check never fires; ``tests/unit/test_gate_curtailment.py`` compares both on
    every state)."""
    c = critical_count(runs, theta, alpha)
    passes = np.arange(runs + 1)
    mass = np.zeros(runs + 1)
    mass[0] = 1.0
    expected = 0.0
    for done in range(runs):
        if done:
            mass[(passes >= c) | (passes + (runs - done) < c)] = 0.0
        alive = float(mass.sum())
        if alive == 0.0:
            break
        expected += alive
        step = mass * (1.0 - p)
        step[1:] += mass[:-1] * p
        mass = step
    return expected
