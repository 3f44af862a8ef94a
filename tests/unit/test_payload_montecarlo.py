"""Seeded Monte Carlo of whole reductions through ``execute()`` with default options.

A source reproducing at 0.9 where deleting one file drops the rate to exactly θ: the exported
payload may lack that file with probability at most α = 0.05, without and with 1-3 kills at
random samples followed by ``--resume``. The harness is :mod:`tests.montecarlo`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from scipy.stats import binom

from repomin.sampling import stats
from tests.montecarlo import run_trials

ALPHA = 0.05


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A RAM-backed directory when there is one (the session appends and the report's atomic
    writes dominate a 50 ms reduction on a disk), else ``tmp_path``."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="repomin-mc-") as d:
            yield Path(d)
    else:
        yield tmp_path


def _check(root: Path, seeds: range, interruptions: int) -> None:
    trials = run_trials(root, seeds, interruptions)
    n = len(trials)
    false = sum(t.bad_deleted for t in trials)
    upper = stats.upper_bound(false, n, 0.995)  # upper end of the two-sided 99% interval
    assert false / n <= ALPHA and upper <= 1.5 * ALPHA, (false, n, upper)
    # The kills really happened (a reduction may finish before a late kill point: more often
    # since the final test stops once its outcome is certain).
    assert sum(t.interruptions for t in trials) >= 0.85 * interruptions * n


def test_default_options_small_sample_stays_below_the_binomial_quantile(root: Path) -> None:
    """Fast version (fast suite): 60 reductions, one kill each."""
    trials = run_trials(root, range(10_000, 10_060), 1)
    false = sum(t.bad_deleted for t in trials)
    assert false <= binom.ppf(0.99, len(trials), ALPHA), false


def test_several_candidates_in_flight_keep_the_bound_across_kills(root: Path) -> None:
    """``--jobs 4``: samples of several candidates in flight (lanes.py), one kill each at a
    random sample -- often mid-race -- then ``--resume``: the bad deletion stays below the
    binomial 99% quantile at α, and the kills happened."""
    trials = run_trials(root, range(20_000, 20_040), 1, jobs=4)
    false = sum(t.bad_deleted for t in trials)
    assert false <= binom.ppf(0.99, len(trials), ALPHA), false
    assert sum(t.interruptions for t in trials) >= 0.9 * len(trials)
    assert all(t.exit_code in (0, 1) for t in trials)


@pytest.mark.slow
@pytest.mark.parametrize("interruptions", [0, 1, 2, 3])
@pytest.mark.parametrize("half", [0, 1])
def test_default_options_keep_the_bad_deletion_out(
    root: Path, interruptions: int, half: int
) -> None:
    """2,000 reductions per interruption count, in two halves of 1,000 so that parallel
    workers share them; each half must meet the bound on its own (stricter than on 2,000)."""
    start = 1_000_000 * interruptions + 1_000 * half
    _check(root, range(start, start + 1_000), interruptions)
