"""Monte Carlo check of screened designs: simulate the rule through ``decide`` at p = θ.

The simulation uses only :meth:`SequentialDesign.decide` (tabulated once per design) and a
seeded numpy generator, so it checks the dynamic programme independently: the empirical
acceptance rate given a passing screen must stay within α + 3 standard errors, and agree with
the exact size and expected run count.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from repomin.sampling.stats import (
    Decision,
    SequentialDesign,
    design,
    spend_alpha,
    zero_failure_design,
)

PATHS = 200_000
CODES = {Decision.CONTINUE: 0, Decision.ACCEPT: 1, Decision.REJECT: 2}


def _decision_table(d: SequentialDesign, horizon: int) -> npt.NDArray[np.int8]:
    """``table[t, k]`` = code of ``d.decide(k, t)`` for the states a screened walk can visit."""
    table = np.full((horizon + 1, horizon + 1), -1, dtype=np.int8)
    for runs in range(1, horizon + 1):
        for passes in range(1, runs + 1):
            table[runs, passes] = CODES[d.decide(passes, runs)]
    return table


def _simulate(d: SequentialDesign, p: float, seed: int) -> tuple[float, float, float]:
    """Acceptance rate, mean and standard deviation of the run count of ``PATHS`` screened
    walks whose first run passed."""
    horizon = d.max_runs()
    rng = np.random.default_rng(seed)
    outcomes = rng.random((PATHS, horizon), dtype=np.float32) < p
    outcomes[:, 0] = True  # conditional on the screening run passing
    passes = np.cumsum(outcomes, axis=1)
    runs = np.arange(1, horizon + 1)
    codes = _decision_table(d, horizon)[runs[None, :], passes]
    stopped = codes != CODES[Decision.CONTINUE]
    assert stopped[:, -1].all(), "a path ran past max_runs()"
    stop = np.argmax(stopped, axis=1)
    verdicts = codes[np.arange(PATHS), stop]
    accepted = float(np.mean(verdicts == CODES[Decision.ACCEPT]))
    return accepted, float(np.mean(stop + 1)), float(np.std(stop + 1))


SCREENED = [
    design(0.5, 0.05, 60, 2, True),
    design(0.3, spend_alpha(0.05, 3), 40, 3, True),
    design(0.5, 0.05, 30, None, True),
    zero_failure_design(0.8, spend_alpha(0.05, 1), screened=True),
]


@pytest.mark.parametrize("case", range(len(SCREENED)), ids=[d.identifier() for d in SCREENED])
def test_screened_size_holds_by_simulation(case: int) -> None:
    d = SCREENED[case]
    accepted, mean_runs, spread = _simulate(d, d.theta, seed=20260101 + case)
    standard_error = math.sqrt(d.alpha * (1 - d.alpha) / PATHS)
    assert accepted <= d.alpha + 3 * standard_error
    size_error = math.sqrt(d.size * (1 - d.size) / PATHS)
    assert abs(accepted - d.size) <= 4 * size_error
    assert abs(mean_runs - d.expected_runs(d.theta)) <= 4 * spread / math.sqrt(PATHS)
