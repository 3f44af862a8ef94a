"""Seeded Monte Carlo of the adaptive baseline and the sized, curtailed payload gate.

Whole reductions through ``execute()`` with default options (the harness of
:mod:`tests.montecarlo`) at source rates 0.2, 0.6 and 1.0: a one-in-five failure is reduced to
its exact payload; the boundary deletion (to exactly θ) stays within α. And the gate's power,
measured with the policy's own code: ``Oracle.run_baseline`` learns θ and the final runs from a
baseline at rate ``p``, ``Oracle.final_validation`` runs the stopped test on a payload at the
baseline's estimated rate (and at ``p``).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from scipy.stats import binom

from repomin.errors import BaselineError
from repomin.sampling import stats
from repomin.sampling.policy import GATE_POWER, SamplingConfig, SamplingPolicy
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle
from tests.montecarlo import reduce_once, run_trials

ALPHA = 0.05


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A RAM-backed directory when there is one (see test_payload_montecarlo.py)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="repomin-lr-") as d:
            yield Path(d)
    else:
        yield tmp_path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_one_in_five_failure_is_reduced_with_default_options(root: Path, seed: int) -> None:
    """Twelve irrelevant files around ``keep.txt``, the failure shows in one run in five: the
    baseline looks until its bound reaches 0.1 (the old 20-run baseline refused 63% of
    these), the gate passes, and the payload is ``keep.txt`` alone."""
    trial = reduce_once(root / "t", seed, 0, rate=0.2, junk=12, bad=False)
    ex = trial.execution
    assert ex is not None
    assert trial.exit_code == 0 and ex["final_validation_passed"] is True
    assert trial.payload == {"keep.txt"}
    assert ex["baseline_policy"] == "adaptive-clopper-pearson-v1"
    assert stats.lower_bound(ex["baseline_passes"], ex["baseline_runs"], 0.95) >= 0.1
    assert ex["final_runs"] <= ex["final_planned_runs"]


@pytest.mark.parametrize(("rate", "seeds"), [(0.2, 80), (0.6, 60), (1.0, 60)])
def test_the_boundary_deletion_stays_within_alpha(root: Path, rate: float, seeds: int) -> None:
    """Deleting ``bad.txt`` drops the rate to exactly θ: exported without it at most at the
    binomial 99% quantile of α (the slow test below asserts the rate itself)."""
    trials = run_trials(root, range(30_000, 30_000 + seeds), 0, rate=rate)
    reduced = [t for t in trials if t.exit_code != 2]
    false = sum(t.bad_deleted for t in reduced)
    assert false <= binom.ppf(0.99, len(reduced), ALPHA), (false, len(reduced))
    assert len(reduced) >= 0.9 * seeds  # refusals (exit 2) only at the low rate, and few


@pytest.mark.parametrize(("rate", "seeds"), [(0.2, 60), (0.6, 40), (1.0, 40)])
def test_the_boundary_deletion_stays_within_alpha_across_kills_and_resume(
    root: Path, rate: float, seeds: int
) -> None:
    """The same with two kills at random samples, each followed by ``--resume`` (the
    adaptive baseline's looks and the curtailed gate are restored from the session, not
    restarted with fresh indexes)."""
    trials = run_trials(root, range(50_000, 50_000 + seeds), 2, rate=rate)
    reduced = [t for t in trials if t.exit_code != 2]
    false = sum(t.bad_deleted for t in reduced)
    assert false <= binom.ppf(0.99, len(reduced), ALPHA), (false, len(reduced))
    assert len(reduced) >= 0.9 * seeds
    kills = sum(t.interruptions for t in reduced)
    assert kills >= 0.75 * 2 * len(reduced), kills  # the kills happened (a short one may end first)


@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.2, 0.6, 1.0])
def test_the_boundary_deletion_rate_is_at_most_alpha(root: Path, rate: float) -> None:
    """1,000 reductions per rate, the bound asserted as in test_payload_montecarlo.py."""
    trials = run_trials(root, range(40_000, 41_000), 0, rate=rate)
    reduced = [t for t in trials if t.exit_code != 2]
    false = sum(t.bad_deleted for t in reduced)
    upper = stats.upper_bound(false, len(reduced), 0.995)
    assert false / len(reduced) <= ALPHA and upper <= 1.5 * ALPHA, (false, len(reduced), upper)


# -- the gate's power, by the policy's own functions --------------------------------------------

TREE = Tree.of({"a.txt": Entry("file", b"NEEDED\n")})


def gate_passes(p: float, seed: int, payload: float | None) -> bool | None:
    """A baseline at ``p``, then the first payload gate of a tree at ``payload`` (default: the
    baseline's own estimate passes/runs): did it pass? None: the baseline was refused."""
    runner = FakeRunner(lambda t: True, rate=p, seed=seed)
    oracle = fake_oracle(runner, SamplingConfig(), jobs=1)
    try:
        baseline = oracle.run_baseline(TREE)
    except BaselineError:
        return None
    runner.rate = baseline.passes / baseline.runs if payload is None else payload
    planned = oracle.planned_final_runs()
    _gate, alpha = oracle.take_gate()
    sample = oracle.final_validation(TREE, planned, alpha=alpha)
    return oracle.policy.final_passed(sample.passes, sample.runs, alpha)


def exact_power(p: float) -> float:
    """P(first gate passes | payload at p), averaged over the adaptive baseline's outcomes."""
    config = SamplingConfig()
    odds = stats.baseline_odds(p, config.baseline_looks, 0.95, 0.1)
    total = 0.0
    alpha = stats.spend_alpha(ALPHA, 1)
    for k, n, prob in odds.stops:
        policy = SamplingPolicy.learn(config, k, n, stats.lower_bound(k, n, 0.95))
        total += prob * stats.gate_power(policy.final_runs(None), policy.theta, alpha, p)
    return total / odds.pass_probability


@pytest.mark.parametrize("p", [0.2, 0.6])
def test_gate_power_at_the_baselines_rate(p: float) -> None:
    """>= 0.95 at the baseline's estimated rate (by construction: sized at its 80% lower
    bound), and at the true rate the exact average (0.957 at 0.2, 0.977 at 0.6,
    statistics.md §2a) within Monte Carlo error."""
    at_estimate = [r for seed in range(300) if (r := gate_passes(p, seed, None)) is not None]
    assert len(at_estimate) >= 280 and sum(at_estimate) >= GATE_POWER * len(at_estimate)
    at_truth = [r for seed in range(300, 600) if (r := gate_passes(p, seed, p)) is not None]
    n, exact = len(at_truth), exact_power(p)
    assert exact >= GATE_POWER
    sd = math.sqrt(exact * (1 - exact) / n)
    assert abs(sum(at_truth) / n - exact) <= 4 * sd, (sum(at_truth) / n, exact)
