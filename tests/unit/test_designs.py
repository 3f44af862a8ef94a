"""One design object per sampling mode: which one a policy takes, its widths, and that each
decides from exactly the samples its exact design needs (the sizes are pinned by the DP tests;
here the objects)."""

from __future__ import annotations

import pytest

from repomin.sampling import stats
from repomin.sampling.designs import (
    PerCandidate,
    Screened,
    SingleRun,
    design_of,
)
from repomin.sampling.policy import Sampling, SamplingConfig, SamplingPolicy


class _Stream:
    """Samples from a fixed list, counting how many were drawn."""

    def __init__(self, outcomes: list[bool]) -> None:
        self.outcomes = outcomes
        self.drawn = 0

    def next(self, ahead: int | None = None) -> bool:
        value = self.outcomes[self.drawn]
        self.drawn += 1
        return value


def _policy(mode: Sampling, passes: int = 12, runs: int = 20) -> SamplingPolicy:
    lower = stats.lower_bound(passes, runs, 0.95)
    return SamplingPolicy.learn(SamplingConfig(mode=mode), passes, runs, lower)


def _never_spent() -> tuple[int, float, stats.SequentialDesign]:
    raise AssertionError("a failed screen spends no family index")


@pytest.mark.parametrize(
    ("mode", "passes", "kind", "widths"),
    [
        (Sampling.AUTO, 20, SingleRun, (1, 6, 1)),
        (Sampling.SINGLE, 12, SingleRun, (1, 6, 1)),
        (Sampling.AUTO, 12, PerCandidate, (6, 6, 6)),
        (Sampling.FAST, 12, PerCandidate, (6, 6, 6)),
        (Sampling.STRICT, 12, Screened, (6, 6, 6)),
    ],
)
def test_each_mode_has_its_design_and_widths(
    mode: Sampling, passes: int, kind: type, widths: tuple[int, int, int]
) -> None:
    """(samples of one candidate, disjoint candidates folded, candidates chained) at 6 slots."""
    design = design_of(_policy(mode, passes), _never_spent)
    assert isinstance(design, kind)
    assert (design.sample_width(6), design.batch_width(6), design.chain_width(6)) == widths


@pytest.mark.parametrize(
    ("mode", "passes", "duties"),
    [
        (Sampling.AUTO, 20, (True, True, False)),
        (Sampling.SINGLE, 12, (True, True, False)),
        (Sampling.AUTO, 12, (False, False, True)),
        (Sampling.FAST, 12, (False, False, True)),
        (Sampling.STRICT, 12, (False, False, True)),
    ],
)
def test_each_design_says_what_the_search_does_around_it(
    mode: Sampling, passes: int, duties: tuple[bool, bool, bool]
) -> None:
    """(re-run the incumbent now and then, start the final runs early, re-test rejections at
    the fixpoint): the first two where one run decides, the last where a rejection of a flaky
    failure is evidence, not proof."""
    design = design_of(_policy(mode, passes), _never_spent)
    assert (
        design.checks_incumbent(),
        design.prefetches_final(),
        design.retests_rejections(),
    ) == duties


@pytest.mark.parametrize(("jobs", "batch"), [(1, 1), (2, 1), (3, 1), (4, 4), (16, 16)])
def test_sequential_designs_batch_from_four_slots(jobs: int, batch: int) -> None:
    design = design_of(_policy(Sampling.FAST), _never_spent)
    assert (design.batch_width(jobs), design.chain_width(jobs)) == (batch, jobs)


def test_a_single_run_decides_on_one_sample() -> None:
    design = SingleRun(_policy(Sampling.SINGLE, 20))
    for outcome in (True, False):
        stream = _Stream([outcome, True, True])
        verdict = design.decide(stream)
        assert (verdict.accepted, verdict.runs, stream.drawn) == (outcome, 1, 1)


def test_the_per_candidate_design_stops_where_its_exact_design_does() -> None:
    policy = _policy(Sampling.FAST)
    _, exact = policy.design_for(0)
    outcomes = [True, False] * 40
    stream = _Stream(outcomes)
    verdict = PerCandidate(policy).decide(stream)
    passes = runs = 0
    decision = stats.Decision.CONTINUE
    while decision is stats.Decision.CONTINUE:
        passes += outcomes[runs]
        runs += 1
        decision = exact.decide(passes, runs)
    assert (verdict.passes, verdict.runs, stream.drawn) == (passes, runs, runs)
    assert verdict.accepted == (decision is stats.Decision.ACCEPT)


def test_a_failed_screen_rejects_without_spending_an_index() -> None:
    policy = _policy(Sampling.STRICT)
    stream = _Stream([False] * 40)
    verdict = Screened(policy, _never_spent).decide(stream)
    assert not verdict.accepted and verdict.design == "screen"
    assert stream.drawn == verdict.runs == policy.screen_limit


def test_a_passing_screen_spends_one_index() -> None:
    policy = _policy(Sampling.STRICT)
    taken: list[int] = []

    def spend() -> tuple[int, float, stats.SequentialDesign]:
        taken.append(1)
        alpha, design = policy.design_for(len(taken))
        return len(taken), alpha, design

    verdict = Screened(policy, spend).decide(_Stream([True] * 200))
    assert verdict.accepted and taken == [1] and verdict.family_index == 1
