"""``--keep-rate`` (``rate_guard.KeepRate``) by seeded Monte Carlo of the real hook: a candidate
whose rate equals the baseline's is vetoed with probability at most alpha (Fisher's one-sided
test is conservative), and a candidate that became deterministic is vetoed almost always."""

from __future__ import annotations

import random

import pytest

from repomin.sampling.policy import Sampling
from repomin.sampling.rate_guard import KeepRate
from repomin.sampling.verdict import Baseline, Verdict
from repomin.tree import Tree

ALPHA = 0.05
TRIALS = 800
TREE = Tree.of({"a.txt": b"a\n"})
VERDICT = Verdict(True, 3, 3, Sampling.STRICT, 0.95, "test")


def veto_rate(p_baseline: float, p_candidate: float, seed: int) -> float:
    rng = random.Random(seed)
    vetoes = 0
    for _ in range(TRIALS):
        passes = sum(rng.random() < p_baseline for _ in range(20))
        baseline = Baseline(passes, 20, 0.0, 1.0, 1, 0, ())
        keep = KeepRate(baseline, ALPHA, lambda _tree: rng.random() < p_candidate)
        vetoes += not keep(TREE, VERDICT)
    return vetoes / TRIALS


@pytest.mark.parametrize("p", [0.3, 0.5, 0.8])
def test_same_rate_is_vetoed_at_most_alpha(p: float) -> None:
    # 3 standard errors of an 800-trial estimate at 0.05 is 0.023
    assert veto_rate(p, p, seed=int(p * 100)) <= ALPHA + 0.023


def test_a_deterministic_candidate_is_vetoed_almost_always() -> None:
    assert veto_rate(0.5, 1.0, seed=7) >= 0.95


def test_a_deterministic_baseline_costs_no_runs() -> None:
    runs: list[int] = []
    keep = KeepRate(Baseline(20, 20, 0.86, 1.0, 1, 0, ()), ALPHA, lambda _t: runs.append(1) > 0)
    assert keep(TREE, VERDICT) and runs == [] and keep.to_json()["runs_per_check"] == 0
