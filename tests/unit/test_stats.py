"""The statistics package against every reference value in docs/statistics.md (appendix A1-A5),
plus properties.

Reference values are compared to the precision they are printed with in docs/statistics.md.
"""

from __future__ import annotations

import itertools
import logging
import math
from functools import cache
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import binom, binomtest

from repomin.sampling.stats import (
    LOG2_SPENDING_CONSTANT,
    MAX_SUGGESTED_HOLDOUT_RUNS,
    Decision,
    SequentialDesign,
    amplified_rate,
    binom_pvalue,
    critical_passes,
    design,
    holdout_test,
    lower_bound,
    min_certifiable_runs,
    spend_alpha,
    suggest_holdout_runs,
    threshold_acceptance_probability,
    upper_bound,
    zero_failure_design,
    zero_failure_runs,
)
from repomin.sampling.stats import sequential as sequential_module


def assert_printed(value: float, printed: str) -> None:
    """``value`` rounds to ``printed`` at the number of decimals ``printed`` shows."""
    decimals = len(printed.partition(".")[2])
    tolerance = 0.5 * 10.0**-decimals + 1e-12
    assert abs(value - float(printed)) <= tolerance, f"{value!r} does not print as {printed}"


# --- §1 bounds and tests --------------------------------------------------------------------

BOUND_CASES = [(10, 10), (20, 20), (30, 30), (59, 59), (18, 20), (27, 30), (45, 50), (1, 1)]
L95 = ["0.741", "0.861", "0.905", "0.9505", "0.717", "0.761", "0.801", "0.05"]
L99 = ["0.631", "0.794", "0.858", "0.925", "0.642", "0.702", "0.758", "0.01"]


@pytest.mark.parametrize(("case", "printed"), list(zip(BOUND_CASES, L95, strict=True)))
def test_lower_bound_table_at_95(case: tuple[int, int], printed: str) -> None:
    assert_printed(lower_bound(*case, 0.95), printed)


@pytest.mark.parametrize(("case", "printed"), list(zip(BOUND_CASES, L99, strict=True)))
def test_lower_bound_table_at_99(case: tuple[int, int], printed: str) -> None:
    assert_printed(lower_bound(*case, 0.99), printed)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (7, 12), (12, 12), (45, 50)])
def test_lower_bound_is_where_the_pvalue_equals_one_minus_confidence(k: int, n: int) -> None:
    bound = lower_bound(k, n, 0.9)
    if k == 0:
        assert bound == 0.0
    else:
        assert binom_pvalue(k, n, bound) == pytest.approx(0.1, rel=1e-9)


def test_bound_edge_cases() -> None:
    assert lower_bound(0, 0, 0.95) == 0.0
    assert upper_bound(0, 0, 0.95) == 1.0
    assert lower_bound(0, 7, 0.95) == 0.0
    assert upper_bound(7, 7, 0.95) == 1.0
    assert upper_bound(0, 7, 0.95) == pytest.approx(1 - 0.05 ** (1 / 7), rel=1e-12)
    with pytest.raises(ValueError, match="k <= n"):
        lower_bound(3, 2, 0.95)
    with pytest.raises(ValueError, match="confidence"):
        upper_bound(1, 2, 1.0)


@pytest.mark.parametrize(("k", "n", "p0"), [(0, 5, 0.3), (5, 5, 0.5), (20, 30, 0.5), (7, 40, 0.1)])
def test_pvalue_matches_scipy_binomtest_greater(k: int, n: int, p0: float) -> None:
    expected = binomtest(k, n, p0, alternative="greater").pvalue
    assert binom_pvalue(k, n, p0) == pytest.approx(expected, rel=1e-12)


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=400),
    k_fraction=st.floats(min_value=0.0, max_value=1.0),
    p0=st.floats(min_value=1e-4, max_value=1 - 1e-4),
    a=st.floats(min_value=1e-6, max_value=0.5),
)
def test_pvalue_test_and_lower_bound_agree(n: int, k_fraction: float, p0: float, a: float) -> None:
    k = round(k_fraction * n)
    p_value = binom_pvalue(k, n, p0)
    bound = lower_bound(k, n, 1 - a)
    # Away from exact ties the two floating-point routes must give the same verdict.
    assume(abs(p_value - a) > 1e-9 * a and abs(bound - p0) > 1e-9)
    assert (p_value <= a) == (bound >= p0)


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=300),
    k_fraction=st.floats(min_value=0.0, max_value=1.0),
    confidence=st.floats(min_value=0.5, max_value=0.999),
)
def test_bounds_bracket_the_observed_rate(n: int, k_fraction: float, confidence: float) -> None:
    k = round(k_fraction * n)
    assert lower_bound(k, n, confidence) <= k / n <= upper_bound(k, n, confidence)


# --- §2 one candidate: sequential designs ---------------------------------------------------


@pytest.mark.parametrize(("cap", "printed"), [(20, "0.0987"), (30, "0.1295"), (60, "0.1713")])
def test_naive_looks_inflate_the_size(cap: int, printed: str) -> None:
    size = threshold_acceptance_probability(0.5, 0.05, cap, None, False, 0.5)
    assert_printed(size, printed)


def _attained_pvalues(theta: float, cap: int) -> list[float]:
    return sorted(
        {float(binom.sf(k - 1, t, theta)) for t in range(1, cap + 1) for k in range(t + 1)}
    )


@pytest.mark.parametrize(("cap", "printed"), [(20, "0.01953"), (30, "0.01758"), (60, "0.01205")])
def test_calibrated_level_reference_values(cap: int, printed: str) -> None:
    d = design(0.5, 0.05, cap, None, False)
    assert_printed(d.calibrated_alpha, printed)
    assert d.size <= 0.05
    assert d.size == pytest.approx(d.acceptance_probability(0.5), abs=1e-15)
    # α' is attained, and the next attained level would exceed α: it is the largest one.
    levels = _attained_pvalues(0.5, cap)
    assert any(math.isclose(d.calibrated_alpha, level, rel_tol=1e-12) for level in levels)
    next_level = min(level for level in levels if level > d.calibrated_alpha * (1 + 1e-12))
    assert threshold_acceptance_probability(0.5, next_level, cap, None, False, 0.5) > 0.05


COLUMNS = (1.0, 0.9, 0.5, 0.2, 0.0)


def test_expected_runs_fixed_n_row() -> None:
    k_crit = critical_passes(30, 0.5, 0.05)
    assert k_crit == 20
    for p, printed in zip(COLUMNS[:3], ("1.00", "1.00", "0.049"), strict=True):
        assert_printed(float(binom.sf(k_crit - 1, 30, p)), printed)


def _check_row(
    d: SequentialDesign, runs: tuple[str, ...], acceptance: tuple[str | None, ...]
) -> None:
    for p, printed_runs, printed_accept in zip(COLUMNS, runs, acceptance, strict=True):
        assert_printed(d.expected_runs(p), printed_runs)
        if printed_accept is not None:
            assert_printed(d.acceptance_probability(p), printed_accept)


def test_expected_runs_sequential_without_futility() -> None:
    d = design(0.5, 0.05, 30, None, False)
    _check_row(d, ("6.0", "9.06", "17.4", "11.25", "9.0"), ("1.00", "0.999", "0.049", None, None))


def test_expected_runs_sequential_with_failure_budget_two() -> None:
    d = design(0.5, 0.05, 60, 2, False)
    assert_printed(d.size, "0.0483")
    _check_row(d, ("5.0", "6.93", "5.76", "3.75", "3.0"), ("1.00", "0.91", "0.048", None, None))


def test_expected_runs_zero_failure() -> None:
    d = zero_failure_design(0.5, 0.05, screened=False)
    assert (d.cap, d.failure_budget) == (5, 0)
    assert_printed(d.size, "0.031")
    _check_row(d, ("5.0", "4.10", "1.94", "1.25", "1.0"), ("1.00", "0.59", None, None, None))


def _reachable_stops(d: SequentialDesign) -> dict[tuple[int, int], Decision]:
    """Every terminal state a path can reach, found by walking ``decide`` (passes, runs)."""
    stops: dict[tuple[int, int], Decision] = {}
    frontier = {(d.start_runs, d.start_runs)}
    while frontier:
        following: set[tuple[int, int]] = set()
        for passes, runs in frontier:
            verdict = d.decide(passes, runs)
            if verdict is Decision.CONTINUE:
                following |= {(passes + 1, runs + 1), (passes, runs + 1)}
            else:
                stops[(passes, runs)] = verdict
        frontier = following
    return stops


def test_failure_budget_two_accepts_on_5_of_5_8_of_9_10_of_12() -> None:
    d = design(0.5, 0.05, 60, 2, False)
    stops = _reachable_stops(d)
    accepted = {state for state, verdict in stops.items() if verdict is Decision.ACCEPT}
    assert accepted == {(5, 5), (8, 9), (10, 12)}
    rejected = {state for state, verdict in stops.items() if verdict is Decision.REJECT}
    assert all(runs - passes == 3 for passes, runs in rejected)
    assert d.max_runs() == 12 == max(runs for _, runs in stops)


def test_zero_failure_run_counts() -> None:
    assert zero_failure_runs(0.5, 0.05) == 5
    assert zero_failure_runs(0.5, 0.01) == 7
    assert zero_failure_runs(0.5, 0.25) == 2  # exact tie: 0.5**2 == 0.25
    for theta in (0.1, 0.5, 0.8, 0.99):
        for alpha in (0.3, 0.05, 1e-3, 1e-9):
            runs = zero_failure_runs(theta, alpha)
            assert theta**runs <= alpha
            assert runs == 1 or theta ** (runs - 1) > alpha


@pytest.mark.parametrize(("theta", "expected"), [(0.5, (6, 12, 19, 25)), (0.8, (16, 37, 57, 78))])
def test_zero_failure_runs_under_basel_spending(theta: float, expected: tuple[int, ...]) -> None:
    for index, runs in zip((1, 10, 100, 1000), expected, strict=True):
        alpha_i = spend_alpha(0.05, index)
        assert zero_failure_runs(theta, alpha_i) == runs
        # Screened: the table counts the runs after the screening run.
        screened = zero_failure_design(theta, alpha_i, screened=True)
        assert screened.cap == runs + 1 == screened.max_runs()
        assert screened.size <= alpha_i
        assert screened.size == pytest.approx(theta**runs, rel=1e-12)
        assert screened.decide(runs + 1, runs + 1) is Decision.ACCEPT
        assert screened.decide(runs, runs) is Decision.CONTINUE
        assert screened.decide(runs, runs + 1) is Decision.REJECT


def test_zero_failure_design_unscreened_is_the_straight_pass_test() -> None:
    d = zero_failure_design(0.5, 0.01, screened=False)
    assert d.cap == 7
    assert d.decide(0, 1) is Decision.REJECT
    assert d.decide(6, 6) is Decision.CONTINUE
    assert d.decide(7, 7) is Decision.ACCEPT
    assert d.expected_runs(0.0) == 1.0


DESIGNS = [
    (0.5, 0.05, 20, None, False),
    (0.5, 0.05, 30, 4, True),
    (0.3, 0.01, 25, 2, False),
    (0.7, 0.02, 40, 3, True),
    (0.5, spend_alpha(0.05, 4), 24, None, True),
    (0.2, 0.05, 15, 1, True),
    # unscreened with the futility screen inside the design (fast, the gated search)
    (0.2, 0.3, 60, 2, False, 2),
    (0.3, 0.05, 30, 4, False, 3),
    (0.19679, 0.3, 60, 8, False, 2),
    (0.5, 0.05, 20, None, False, 4),
]


@cache
def _enumerate(args: tuple[Any, ...], p: float) -> tuple[float, float]:
    """Acceptance probability and expected runs by recursion over ``decide`` alone."""
    d = design(*args)

    @cache
    def from_state(passes: int, runs: int) -> tuple[float, float]:
        verdict = d.decide(passes, runs)
        if verdict is Decision.ACCEPT:
            return 1.0, 0.0
        if verdict is Decision.REJECT:
            return 0.0, 0.0
        accept_pass, runs_pass = from_state(passes + 1, runs + 1)
        accept_fail, runs_fail = from_state(passes, runs + 1)
        return (
            p * accept_pass + (1 - p) * accept_fail,
            1.0 + p * runs_pass + (1 - p) * runs_fail,
        )

    accept, remaining = from_state(d.start_runs, d.start_runs)
    return accept, remaining + d.start_runs


@pytest.mark.parametrize("args", DESIGNS)
def test_decide_is_consistent_with_the_dynamic_programme(
    args: tuple[Any, ...],
) -> None:
    d = design(*args)
    for p in (0.0, 0.2, args[0], 0.75, 1.0):
        accept, runs = _enumerate(args, p)
        assert d.acceptance_probability(p) == pytest.approx(accept, abs=1e-12)
        assert d.expected_runs(p) == pytest.approx(runs, rel=1e-12)
    assert d.max_runs() == max(runs for _, runs in _reachable_stops(d))
    assert d.max_runs() <= d.cap


@pytest.mark.parametrize("args", DESIGNS)
def test_size_is_at_most_alpha_and_acceptance_is_monotone(
    args: tuple[Any, ...],
) -> None:
    d = design(*args)
    assert 0.0 < d.size <= d.alpha
    assert d.size == pytest.approx(d.acceptance_probability(d.theta), abs=1e-15)
    grid = [i / 100 for i in range(101)]
    values = [d.acceptance_probability(p) for p in grid]
    assert all(b >= a - 1e-15 for a, b in itertools.pairwise(values))
    assert values[0] == 0.0
    assert values[-1] == pytest.approx(1.0)


def test_curtailment_changes_no_decision() -> None:
    """The futility-free design stops early but accepts exactly like the uncurtailed rule."""
    d = design(0.5, 0.05, 30, None, False)
    assert d.failure_limit == 8
    for p in (0.1, 0.5, 0.9):
        uncurtailed = threshold_acceptance_probability(0.5, d.calibrated_alpha, 30, None, False, p)
        assert d.acceptance_probability(p) == pytest.approx(uncurtailed, abs=1e-15)


def test_screened_design_is_conditional_on_the_first_pass() -> None:
    d = design(0.5, 0.05, 30, 4, True)
    assert d.start_runs == 1
    assert d.expected_runs(1.0) >= 2.0  # the screen plus at least one more run
    with pytest.raises(ValueError, match="passes >= 1"):
        d.decide(0, 1)
    assert d.decide(1, 1) is Decision.CONTINUE
    # The size is the walk from (t, k) = (1, 1); the same rule walked from (0, 0) differs.
    level = d.calibrated_alpha
    assert d.size == pytest.approx(threshold_acceptance_probability(0.5, level, 30, 4, True, 0.5))
    from_scratch = threshold_acceptance_probability(0.5, level, 30, 4, False, 0.5)
    assert from_scratch < d.size <= 0.05


def test_decide_validates_states() -> None:
    d = design(0.5, 0.05, 20, None, False)
    assert d.decide(0, 0) is Decision.CONTINUE
    with pytest.raises(ValueError, match="cap=20"):
        d.decide(21, 21)
    with pytest.raises(ValueError, match="passes <= runs"):
        d.decide(3, 2)


def test_design_validates_arguments() -> None:
    with pytest.raises(ValueError, match="theta"):
        design(1.0, 0.05, 10, None, False)
    with pytest.raises(ValueError, match="alpha"):
        design(0.5, 0.0, 10, None, False)
    with pytest.raises(ValueError, match="cap"):
        design(0.5, 0.05, 0, None, False)
    with pytest.raises(ValueError, match="failure_budget"):
        design(0.5, 0.05, 10, -1, False)


def test_infeasible_design_rejects_at_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="repomin.sampling.stats.sequential"):
        d = design.__wrapped__(0.5, 0.01, 6, None, True)
    assert (d.calibrated_alpha, d.size) == (0.0, 0.0)
    assert d.decide(1, 1) is Decision.REJECT
    assert d.max_runs() == 1
    assert d.acceptance_probability(1.0) == 0.0
    assert "at least 8" in caplog.text


def test_identifier_is_stable() -> None:
    assert (
        design(0.5, 0.05, 60, 2, True).identifier()
        == "seq-exact-v1:theta=0.5:alpha=0.05:cap=60:F=2:screened"
    )
    assert (
        design(0.25, 0.01, 30, None, False).identifier()
        == "seq-exact-v1:theta=0.25:alpha=0.01:cap=30:F=none:unscreened"
    )


def test_design_is_cached_and_exact_when_built_afresh() -> None:
    # Speed is a benchmark's business (no timed unit tests); this checks the cache and that an
    # uncached design at a tiny level still has its exact size.
    assert design(0.5, 0.05, 60, 2, False) is design(0.5, 0.05, 60, 2, False)
    sequential_module._pvalue_table.cache_clear()
    d = design.__wrapped__(0.3, 1e-6, 200, 3, True)
    assert d.size <= 1e-6


# --- §3 spending ----------------------------------------------------------------------------


def _log2_constant_float64() -> float:
    """Σ_{n≥2} 1/(n ln² n): partial sum to 9999 plus the Euler–Maclaurin tail at M = 10⁴."""
    m = 10_000
    partial = math.fsum(1.0 / (n * math.log(n) ** 2) for n in range(2, m))
    log_m = math.log(m)
    f = 1.0 / (m * log_m**2)
    derivative = -(log_m + 2.0) / (m**2 * log_m**3)
    return partial + 1.0 / log_m + f / 2.0 - derivative / 12.0


def test_log2_constant() -> None:
    assert pytest.approx(_log2_constant_float64(), rel=1e-12) == LOG2_SPENDING_CONSTANT
    assert_printed(LOG2_SPENDING_CONSTANT, "2.10974")


@pytest.mark.parametrize("rule", ["basel", "log2"])
def test_spending_sums_to_at_most_alpha(rule: str) -> None:
    alpha = 0.05
    spent = [spend_alpha(alpha, i, rule) for i in range(1, 200_001)]
    assert all(b < a for a, b in itertools.pairwise(spent))
    total = math.fsum(spent)
    assert total <= alpha
    if rule == "basel":
        # The tail after N terms is about 6α/(π² N).
        assert total == pytest.approx(alpha - 6 * alpha / (math.pi**2 * 200_000), rel=1e-9)
    else:
        # The tail after N terms is about α/(S ln N): the heavy tail still holds back ~5 %.
        tail = alpha / (LOG2_SPENDING_CONSTANT * math.log(200_001))
        assert total == pytest.approx(alpha - tail, rel=1e-3)


def test_spending_values_and_validation() -> None:
    assert spend_alpha(0.05, 1) == pytest.approx(0.05 * 6 / math.pi**2)
    assert spend_alpha(0.05, 1, "log2") == pytest.approx(
        0.05 / (LOG2_SPENDING_CONSTANT * 2 * math.log(2) ** 2)
    )
    with pytest.raises(ValueError, match="index"):
        spend_alpha(0.05, 0)
    with pytest.raises(ValueError, match="basel, log2"):
        spend_alpha(0.05, 1, "bonferroni")


# --- §4 baseline and amplification ----------------------------------------------------------


@pytest.mark.parametrize(
    ("passes", "printed"),
    [(20, "0.861"), (19, "0.784"), (18, "0.717"), (15, "0.544"), (10, "0.302"), (5, "0.104")],
)
def test_baseline_lower_bounds(passes: int, printed: str) -> None:
    assert_printed(lower_bound(passes, 20, 0.95), printed)


def test_amplified_rate() -> None:
    assert amplified_rate(0.3, 1) == pytest.approx(0.3)
    assert amplified_rate(0.5, 3) == pytest.approx(0.875)
    assert amplified_rate(0.0, 5) == 0.0
    assert amplified_rate(1.0, 5) == 1.0
    assert amplified_rate(1e-12, 10) == pytest.approx(1e-11, rel=1e-9)
    rates = [amplified_rate(p / 50, 7) for p in range(51)]
    assert all(b > a for a, b in itertools.pairwise(rates))
    with pytest.raises(ValueError, match="repeats"):
        amplified_rate(0.5, 0)


# --- §5 holdout -----------------------------------------------------------------------------


def test_holdout_example_certified() -> None:
    result = holdout_test(20, 30, 0.5, 0.05)
    assert result.k_crit == 20
    assert_printed(result.p_value, "0.0494")
    assert_printed(result.lower_bound, "0.5006")
    assert result.certified
    assert result.confidence == pytest.approx(0.95)
    assert result.observed_rate == pytest.approx(20 / 30)


def test_holdout_example_rejected() -> None:
    result = holdout_test(19, 30, 0.5, 0.05)
    assert result.k_crit == 20
    assert_printed(result.p_value, "0.1002")
    assert_printed(result.lower_bound, "0.4669")
    assert_printed(result.upper_bound, "0.779")
    assert not result.certified


@pytest.mark.parametrize(
    ("alpha", "expected"), [(0.05, (2, 5, 14, 29, 59, 299)), (0.01, (3, 7, 21, 44, 90, 459))]
)
def test_min_certifiable_runs_table(alpha: float, expected: tuple[int, ...]) -> None:
    for p0, runs in zip((0.2, 0.5, 0.8, 0.9, 0.95, 0.99), expected, strict=True):
        assert min_certifiable_runs(p0, alpha) == runs
        assert holdout_test(runs, runs, p0, alpha).certified
        assert not holdout_test(runs - 1, runs - 1, p0, alpha).certified if runs > 1 else True


@pytest.mark.parametrize(
    ("runs", "p0", "alpha"), [(30, 0.5, 0.05), (12, 0.8, 0.01), (4, 0.5, 0.05)]
)
def test_certified_iff_enough_passes(runs: int, p0: float, alpha: float) -> None:
    for passes in range(runs + 1):
        result = holdout_test(passes, runs, p0, alpha)
        assert result.certified == (passes >= result.k_crit)
        assert result.certified == (result.lower_bound >= p0)
        assert result.lower_bound <= result.observed_rate <= result.upper_bound
    # Too few runs to certify anything: k_crit is one more than the run count.
    if runs < min_certifiable_runs(p0, alpha):
        assert critical_passes(runs, p0, alpha) == runs + 1


@pytest.mark.parametrize(
    ("rate", "p0", "alpha"), [(0.9, 0.5, 0.05), (0.7, 0.5, 0.05), (1.0, 0.8, 0.01)]
)
def test_suggest_holdout_runs_is_the_first_powerful_size(
    rate: float, p0: float, alpha: float
) -> None:
    def power(runs: int) -> float:
        return float(binom.sf(critical_passes(runs, p0, alpha) - 1, runs, rate))

    runs = suggest_holdout_runs(rate, p0, alpha)
    assert power(runs) >= 0.8
    assert all(power(smaller) < 0.8 for smaller in range(1, runs))
    if rate == 1.0:
        assert runs == min_certifiable_runs(p0, alpha)


def test_suggest_holdout_runs_refuses_hopeless_rates() -> None:
    with pytest.raises(ValueError, match=str(MAX_SUGGESTED_HOLDOUT_RUNS)):
        suggest_holdout_runs(0.5, 0.5, 0.05)


def test_futility_screen_of_one_run_has_size_theta_exactly() -> None:
    """R = 1 rejects at the first failure; when one pass already gives p-value θ <= α' the
    design accepts on it, so P(accept | θ) = θ exactly (a single run is a level-θ test)."""
    for theta in (0.1, 0.19679, 0.25):
        d = design(theta, 0.3, 60, 2, False, 1)
        assert d.decide(1, 1) is Decision.ACCEPT and d.decide(0, 1) is Decision.REJECT
        assert d.size == pytest.approx(theta, abs=1e-15) and d.max_runs() == 1
        assert d.expected_runs(0.6) == 1.0


def test_futility_screen_rejects_the_all_fail_path_and_keeps_the_rest() -> None:
    plain, screened = design(0.3, 0.05, 30, 4, False), design(0.3, 0.05, 30, 4, False, 3)
    assert screened.decide(0, 3) is Decision.REJECT and plain.decide(0, 3) is Decision.CONTINUE
    assert screened.decide(1, 3) is Decision.CONTINUE
    # the screen removes acceptance paths, so at the same α' the size can only fall
    assert screened.identifier().endswith(":unscreened:screen=3")
    assert plain.identifier().endswith(":unscreened")
    assert screened.expected_runs(0.0) == 3.0 and plain.expected_runs(0.0) == 5.0
    with pytest.raises(ValueError, match="futility screen"):
        design(0.3, 0.05, 30, 4, True, 2)


def test_surely_needed_is_the_fastest_path_to_a_decision() -> None:
    d = design(0.5, 0.05, 30, 4, True)  # α' = 0.01544: the earliest acceptance is 7/7
    assert d.decide(7, 7) is Decision.ACCEPT and d.decide(6, 6) is Decision.CONTINUE
    assert d.surely_needed(1, 1) == 5  # five failures reject first (F = 4); 6 passes accept
    z = zero_failure_design(0.5, 0.05, screened=False)
    assert z.surely_needed(0, 0) == 1  # one failure rejects
    s = design(0.19679, 0.3, 60, 8, False, 2)
    assert s.surely_needed(0, 0) == 1  # a first pass accepts (p-value θ <= α')
    for passes, runs in ((0, 1), (1, 2), (2, 4)):
        fastest = s.surely_needed(passes, runs)
        assert fastest >= 1
        stops = [
            step
            for step in range(1, fastest + 1)
            if s.decide(passes + step, runs + step) is not Decision.CONTINUE
            or s.decide(passes, runs + step) is not Decision.CONTINUE
        ]
        assert stops == [fastest] or (not stops and runs + fastest == s.cap)
