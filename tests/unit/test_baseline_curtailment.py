"""The baseline stops once its rejection is certain, and only then.

``stats.fewest_passes`` is checked against the exact lower bounds; a baseline that can never
reach ``--min-baseline-rate`` stops at the first run that makes that certain (one slot: after
``runs - needed + 1`` misses); a baseline that could still pass, or does, runs every run and
learns the same policy as before; a configuration no baseline can satisfy fails before any run.
"""

from __future__ import annotations

import pytest

from repomin.errors import BaselineError
from repomin.sampling.policy import SamplingConfig
from repomin.sampling.stats.bounds import fewest_passes, lower_bound
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle

TREE = Tree.of({"a.txt": Entry("file", b"NEEDED\n")})


@pytest.mark.parametrize(
    ("runs", "rate", "needed"), [(20, 0.1, 5), (10, 0.5, 9), (5, 0.1, 3), (2, 0.1, 2), (1, 0.1, 2)]
)
def test_fewest_passes_is_the_first_count_whose_bound_reaches_the_rate(
    runs: int, rate: float, needed: int
) -> None:
    assert fewest_passes(runs, 0.95, rate) == needed
    if needed <= runs:
        assert lower_bound(needed, runs, 0.95) >= rate
    if needed > 1:
        assert lower_bound(needed - 1, runs, 0.95) < rate


def test_a_baseline_that_never_reproduces_stops_when_the_rejection_is_certain() -> None:
    runner = FakeRunner(lambda t: False)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=20), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 16  # 20 - 5 + 1: after 16 misses, 4 runs cannot give 5 passes
    assert "did not reproduce the failure in any of 16 baseline runs (stopped after 16 of 20" in (
        info.value.message
    )


def test_with_two_slots_it_stops_within_one_run_of_that() -> None:
    runner = FakeRunner(lambda t: False)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=20), jobs=2)
    with pytest.raises(BaselineError):
        oracle.run_baseline(TREE, 2)
    assert 16 <= runner.calls <= 17  # a run in flight when it became certain still finishes


@pytest.mark.parametrize("rate", [1.0, 0.6, 0.35])
def test_a_baseline_that_passes_runs_every_run(rate: float) -> None:
    runner = FakeRunner(lambda t: True, rate=rate, seed=7)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=20), jobs=1)
    baseline = oracle.run_baseline(TREE)
    assert baseline.runs == 20 and runner.calls == 20
    assert oracle.policy.theta == max(baseline.lower / 2, 1e-3)


def test_a_low_rate_baseline_is_cut_only_after_it_cannot_reach_the_bound() -> None:
    # reproduces in runs 1 and 2 only: 2 matches + 18 open runs >= 5 until 16 misses are in
    hits = iter([True, True] + [False] * 30)
    runner = FakeRunner(lambda t: next(hits))
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=20), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 18  # 2 + 16 misses: 2 + (20 - 18) = 4 < 5
    assert "baseline matched the failure in 2/18 runs (stopped after 18 of 20" in (
        info.value.message
    )


def test_a_configuration_no_baseline_can_meet_fails_before_any_run() -> None:
    runner = FakeRunner(lambda t: True)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=1), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 0
    assert "--min-baseline-rate 0.1 cannot be reached with 1 baseline runs" in info.value.message
