"""The baseline stops once its rejection is certain, and only then.

``stats.fewest_passes`` is checked against the exact lower bounds. The baseline is adaptive
(looks every 20 runs up to 160, ``test_adaptive_baseline.py``): a baseline that can no longer
reach ``--min-baseline-rate`` at its cap stops at the first run that makes that certain (one
slot: after ``cap - needed + 1`` misses, counting its matches), and so does one that has not
matched by the time its first look could no longer pass; a baseline that could still
pass, or does, runs every run of its looks and learns the same policy as before; a
configuration no baseline can satisfy fails before any run.
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


def test_a_single_look_stops_when_the_rejection_is_certain() -> None:
    """--baseline-runs at or above the cap: one look, curtailed as before."""
    needed = fewest_passes(200, 0.95, 0.1)
    runner = FakeRunner(lambda t: False)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=200), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 200 - needed + 1
    assert f"did not reproduce the failure in any of {200 - needed + 1} baseline runs" in (
        info.value.message
    )


def test_with_two_slots_it_stops_within_one_run_of_that() -> None:
    needed = fewest_passes(200, 0.95, 0.1)
    runner = FakeRunner(lambda t: False)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=200), jobs=2)
    with pytest.raises(BaselineError):
        oracle.run_baseline(TREE, 2)
    # a run in flight when it became certain still finishes
    assert 200 - needed + 1 <= runner.calls <= 200 - needed + 2


@pytest.mark.parametrize("rate", [1.0, 0.6, 0.35])
def test_a_baseline_that_passes_runs_every_run(rate: float) -> None:
    runner = FakeRunner(lambda t: True, rate=rate, seed=7)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=20), jobs=1)
    baseline = oracle.run_baseline(TREE)
    assert baseline.runs in (20, 40) and runner.calls == baseline.runs
    assert oracle.policy.theta == max(baseline.lower / 2, 1e-3)


def test_a_low_rate_baseline_is_cut_only_after_it_cannot_reach_the_bound() -> None:
    # reproduces in runs 1 and 2 only: 2 matches + the open runs to 160 >= 23 until 140 are in
    hits = iter([True, True] + [False] * 200)
    runner = FakeRunner(lambda t: next(hits))
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=20), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 140  # 2 + (160 - 140) = 22 < 23
    assert "baseline matched the failure in 2/140 runs" in info.value.message
    assert "stopped after 140 of 160" in info.value.message


def test_a_configuration_no_baseline_can_meet_fails_before_any_run() -> None:
    runner = FakeRunner(lambda t: True)
    config = SamplingConfig(baseline_runs=1, min_baseline_rate=0.99)
    oracle = fake_oracle(runner, config, jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 0
    assert "--min-baseline-rate 0.99 cannot be reached with 160 baseline runs" in (
        info.value.message
    )
