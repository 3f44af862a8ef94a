"""The adaptive baseline: it looks again, in blocks, until its lower bound reaches the rate.

The real ``Oracle.run_baseline`` over scripted and seeded runners, and the exact operating
characteristics of the rule (``stats.baseline_odds``) against brute force: per-block binomial
sums written out with ``math.comb``, and every outcome sequence of a small schedule run by run.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import pytest

from repomin.errors import BaselineError, UsageError
from repomin.sampling import stats
from repomin.sampling.oracle import OracleHooks
from repomin.sampling.policy import BASELINE_BLOCK, BASELINE_CAP, SamplingConfig
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle

TREE = Tree.of({"a.txt": Entry("file", b"NEEDED\n")})
LOOKS = (20, 40, 60, 80, 100, 120, 140, 160)


def scripted(pattern: list[bool]) -> FakeRunner:
    hits: Iterator[bool] = iter(pattern)
    return FakeRunner(lambda t: next(hits))


def weyl(per_mille: int, runs: int) -> list[bool]:
    """The end-to-end tests' flaky gate: run n passes when (n * 618) % 1000 < per_mille."""
    return [(n * 618) % 1000 < per_mille for n in range(1, runs + 1)]


def test_the_default_schedule() -> None:
    assert SamplingConfig().baseline_looks == LOOKS
    assert (BASELINE_BLOCK, BASELINE_CAP) == (20, 160)
    assert stats.looks_needed(LOOKS, 0.95, 0.1) == (5, 8, 11, 14, 16, 19, 21, 23)
    assert SamplingConfig(baseline_runs=50).baseline_looks == (50, 70, 90, 110, 130, 150, 160)
    assert SamplingConfig(baseline_runs=200).baseline_looks == (200,)


def test_a_one_in_five_failure_is_baselined_after_another_block() -> None:
    """4/20 (lower bound 0.071) was refused; now 20 more runs give 8/40 (0.1036): it passes
    with every run of both blocks and θ from them."""
    pattern = weyl(200, 200)
    assert sum(pattern[:20]) == 4 and sum(pattern[:40]) == 8
    runner = scripted(pattern)
    looks: list[tuple[int, int, float, int]] = []
    oracle = fake_oracle(runner, SamplingConfig(), jobs=1)
    oracle.attach(OracleHooks(on_baseline_look=lambda *a: looks.append(a)))
    baseline = oracle.run_baseline(TREE)
    assert (baseline.passes, baseline.runs, runner.calls) == (8, 40, 40)
    assert looks == [(20, 4, stats.lower_bound(4, 20, 0.95), 40)]
    assert baseline.lower == stats.lower_bound(8, 40, 0.95) >= 0.1
    assert oracle.policy.theta == baseline.lower / 2


def test_a_baseline_that_passes_at_its_first_look_is_unchanged() -> None:
    runner = FakeRunner(lambda t: True, rate=0.6, seed=7)
    oracle = fake_oracle(runner, SamplingConfig(), jobs=2)
    baseline = oracle.run_baseline(TREE, 2)
    assert baseline.runs == runner.calls == 20
    assert oracle.policy.theta == max(baseline.lower / 2, 1e-3)


def test_a_never_reproducing_command_is_refused_as_soon_as_before() -> None:
    """16 misses: the first look (5 of 20 needed) can no longer pass, and with nothing matched
    there is nothing to look again for (``stats.first_misses``)."""
    runner = FakeRunner(lambda t: False)
    oracle = fake_oracle(runner, SamplingConfig(), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 16 == stats.first_misses(LOOKS, 0.95, 0.1)
    assert "did not reproduce the failure in any of 16 baseline runs (stopped after 16 of 20" in (
        info.value.message
    )


def test_one_match_in_the_last_runs_of_the_first_look_goes_on() -> None:
    """15 misses, then a match: the first look cannot pass, but the failure showed."""
    pattern = [False] * 15 + [True] + weyl(200, 200)
    runner = scripted(pattern)
    oracle = fake_oracle(runner, SamplingConfig(), jobs=1)
    baseline = oracle.run_baseline(TREE)
    assert baseline.runs > 20 and baseline.lower >= 0.1


def test_a_rare_failure_is_refused_with_its_cost_once_the_cap_is_out_of_reach() -> None:
    """One run in 20 reproduces: the baseline runs on until even every run left up to 160
    could not give the 23 passes the cap needs, then says what a reduction would cost."""
    pattern = [i % 20 == 0 for i in range(200)]
    runner = scripted(pattern)
    oracle = fake_oracle(runner, SamplingConfig(), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    # certain once matched + (160 - done) < 23 (independently: walk the sequence)
    matched = 0
    for done, ok in enumerate(pattern, start=1):
        matched += ok
        if matched + (160 - done) < 23:
            break
    assert runner.calls == done and 100 < done < 160
    message = info.value.message
    assert f"baseline matched the failure in {matched}/{done} runs" in message
    assert "a search decision costs about" in message and "at --jobs 1" in message
    assert "--min-baseline-rate 0.0" in message and "--min-candidate-rate" in message
    assert "\n" not in message


def test_a_baseline_that_could_still_pass_is_never_cut_short() -> None:
    """Run 1 reproduces, then 137 misses, then 22 passes: at every run 1 + the runs left to
    160 still reach 23, so it runs all 160 and passes at the cap with 23/160."""
    runner = scripted([True] + [False] * 137 + [True] * 22)
    oracle = fake_oracle(runner, SamplingConfig(), jobs=1)
    baseline = oracle.run_baseline(TREE)
    assert (baseline.passes, baseline.runs, runner.calls) == (23, 160, 160)
    assert stats.lower_bound(23, 160, 0.95) >= 0.1 > stats.lower_bound(22, 160, 0.95)


def test_a_rate_no_baseline_can_reach_is_refused_before_any_run() -> None:
    runner = FakeRunner(lambda t: True)
    oracle = fake_oracle(runner, SamplingConfig(min_baseline_rate=0.99), jobs=1)
    with pytest.raises(BaselineError) as info:
        oracle.run_baseline(TREE)
    assert runner.calls == 0
    assert "--min-baseline-rate 0.99 cannot be reached with 160 baseline runs" in (
        info.value.message
    )


# -- the rule's exact operating characteristics -------------------------------------------------


def test_needed_grows_by_at_most_one_per_run() -> None:
    """Why a cap out of reach makes the rejection certain: L(k + 1, n + 1) >= L(k, n), so
    n - needed(n) never falls and no earlier look can pass once the cap cannot."""
    for rate in (0.05, 0.1, 0.3, 0.5):
        needed = [stats.fewest_passes(n, 0.95, rate) for n in range(1, 201)]
        assert all(b - a in (0, 1) for a, b in itertools.pairwise(needed)), rate


def pmf(x: int, n: int, p: float) -> float:
    return math.comb(n, x) * p**x * (1 - p) ** (n - x)


def brute_odds(p: float, looks: tuple[int, ...], rate: float) -> tuple[float, float]:
    """(P(pass), P(pass with L > p)) by summing over the passes of each block, the first block
    split at m_0 = first - needed(first) + 1 (nothing matched by then: refused)."""
    needed = [stats.fewest_passes(n, 0.95, rate) for n in looks]
    sizes = [b - a for a, b in zip((0, *looks[:-1]), looks, strict=True)]
    misses = looks[0] - needed[0] + 1
    passed = overshoot = 0.0

    def go(j: int, k: int, prob: float) -> None:
        nonlocal passed, overshoot
        for x in range(sizes[j] + 1):
            q = prob * pmf(x, sizes[j], p)
            total = k + x
            if total >= needed[j]:
                passed += q
                overshoot += q * (stats.lower_bound(total, looks[j], 0.95) > p)
            elif j < len(looks) - 1:
                go(j + 1, total, q)

    for early in range(1, misses + 1):  # the first m_0 runs: at least one match
        for late in range(looks[0] - misses + 1):
            q = pmf(early, misses, p) * pmf(late, looks[0] - misses, p)
            total = early + late
            if total >= needed[0]:
                passed += q
                overshoot += q * (stats.lower_bound(total, looks[0], 0.95) > p)
            elif len(looks) > 1:
                go(1, total, q)
    return passed, overshoot


@pytest.mark.parametrize("p", [0.05, 0.1, 0.15, 0.2, 0.3])
def test_pass_probability_and_overshoot_are_the_block_sums(p: float) -> None:
    looks = (20, 40, 60)
    odds = stats.baseline_odds(p, looks, 0.95, 0.1)
    passed, overshoot = brute_odds(p, looks, 0.1)
    assert odds.pass_probability == pytest.approx(passed, rel=1e-9, abs=1e-15)
    assert odds.overshoot == pytest.approx(overshoot, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("p", [0.0, 0.25, 0.5, 0.9])
def test_expected_runs_walk_every_sequence(p: float) -> None:
    """A schedule small enough to enumerate (looks 4, 6, 8 at rate 0.3), with the
    first-misses rule (m_0 = 4 - needed(4) + 1) and the certain-refusal stop run by run."""
    looks, rate = (4, 6, 8), 0.3
    needed = {n: stats.fewest_passes(n, 0.95, rate) for n in looks}
    misses = 4 - needed[4] + 1
    assert stats.first_misses(looks, 0.95, rate) == misses
    runs = passed = 0.0
    for seq in itertools.product((False, True), repeat=8):
        k, prob = 0, math.prod(p if s else 1 - p for s in seq)
        for done in range(9):
            if done in needed:
                if k >= needed[done]:
                    passed += prob
                    break
                if done == looks[-1]:
                    break
            if (done == misses and k == 0) or k + (8 - done) < needed[8]:
                break
            k += seq[done]
        runs += prob * done
    odds = stats.baseline_odds(p, looks, 0.95, rate)
    assert odds.expected_runs == pytest.approx(runs, rel=1e-12, abs=1e-12)
    assert odds.pass_probability == pytest.approx(passed, rel=1e-12, abs=1e-12)


def test_the_documented_operating_characteristics() -> None:
    """statistics.md §A4's table (defaults: looks every 20 up to 160, rate 0.1, c = 0.95)."""
    table = {
        0.0: (0.0, 16.0),
        0.05: (0.0031, 88.4),
        0.1: (0.1206, 116.6),
        0.15: (0.6755, 89.4),
        0.2: (0.9561, 50.8),
        0.3: (0.9967, 25.8),
        0.5: (1.0, 20.1),
    }
    for p, (passes, runs) in table.items():
        odds = stats.baseline_odds(p, LOOKS, 0.95, 0.1)
        assert round(odds.pass_probability, 4) == passes
        assert round(odds.expected_runs, 1) == runs
    worst = max(stats.baseline_odds(p / 100, LOOKS, 0.95, 0.1).overshoot for p in range(1, 60))
    assert round(worst, 3) == 0.121
    assert stats.baseline_odds(0.2, (20,), 0.95, 0.1).pass_probability == pytest.approx(
        0.3704, abs=5e-5
    )


def test_an_explicit_final_runs_is_checked_against_the_look_an_all_pass_baseline_stops_at() -> None:
    """--baseline-runs 1: one passing run (bound 0.05) looks again at 21, where 21/21 gives
    θ = 0.434; 3 final runs could then never pass (0.434^3 > α_1): refused as bad input."""
    with pytest.raises(UsageError, match="--final-runs 3 can never pass the payload gate"):
        SamplingConfig(baseline_runs=1, final_runs=3)
    runner = FakeRunner(lambda t: True)
    oracle = fake_oracle(runner, SamplingConfig(baseline_runs=1), jobs=1)
    baseline = oracle.run_baseline(TREE)
    assert (baseline.passes, baseline.runs) == (21, 21)
    assert round(oracle.policy.theta, 3) == 0.434
