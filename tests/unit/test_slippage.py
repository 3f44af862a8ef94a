"""Slippage test against exact hypergeometric values (Fisher's exact test, by hand)."""

from __future__ import annotations

from math import comb

import pytest

from repomin.sampling.stats.slippage import TEST_ID, advice, compare, rate_above_baseline


def test_flaky_baseline_slipping_to_deterministic_is_higher() -> None:
    # Baseline 10/20, reduced 10/10: P(X >= 10), X ~ Hypergeometric(N=30, K=20, n=10).
    s = compare(10, 20, 10, 10, alpha=0.05)
    assert s.p_higher == pytest.approx(comb(20, 10) / comb(30, 10), rel=1e-12)
    assert s.p_lower == pytest.approx(1.0)
    assert s.direction == "higher"
    assert s.p_value == pytest.approx(2 * comb(20, 10) / comb(30, 10), rel=1e-12)
    assert s.to_json()["test"] == TEST_ID and s.to_json()["direction"] == "higher"


def test_issue_example_15_of_20_then_30_of_30() -> None:
    s = compare(15, 20, 30, 30, alpha=0.05)
    assert s.p_higher == pytest.approx(comb(45, 30) / comb(50, 30), rel=1e-12)
    assert s.direction == "higher"  # 0.00161 <= 0.025


def test_deterministic_baseline_dropping_is_lower() -> None:
    # Baseline 20/20, reduced 5/10: P(X <= 5), X ~ Hypergeometric(N=30, K=25, n=10); only x=5.
    s = compare(20, 20, 5, 10, alpha=0.05)
    assert s.p_lower == pytest.approx(comb(25, 5) * comb(5, 5) / comb(30, 10), rel=1e-12)
    assert s.direction == "lower"
    assert "less often" in advice(s.direction)


def test_same_rate_and_the_two_sided_boundary() -> None:
    assert compare(10, 20, 6, 10, alpha=0.05).direction == "none"
    # 10/20 vs 9/10: P(X >= 9), X ~ Hypergeometric(N=30, K=19, n=10) = 0.0369: significant
    # one-sided at 0.05 (what --keep-rate uses) but not two-sided (0.0369 > 0.025).
    p = sum(comb(19, x) * comb(11, 10 - x) for x in (9, 10)) / comb(30, 10)
    s = compare(10, 20, 9, 10, alpha=0.05)
    assert s.p_higher == pytest.approx(p, rel=1e-12) and 0.025 < p < 0.05
    assert s.direction == "none"
    assert rate_above_baseline(10, 20, 9, 10, alpha=0.05)
    assert advice("none") == ""


def test_keep_rate_is_one_sided_and_never_fires_on_a_deterministic_baseline() -> None:
    assert rate_above_baseline(10, 20, 10, 10, alpha=0.05)  # 0.0061 <= 0.05
    assert not rate_above_baseline(10, 20, 3, 3, alpha=0.05)  # C(13,3)/C(23,3) = 0.161
    assert not rate_above_baseline(20, 20, 50, 50, alpha=0.05)
    assert not rate_above_baseline(10, 20, 0, 0, alpha=0.05)


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="passes <= runs"):
        compare(3, 2, 1, 1, alpha=0.05)
    with pytest.raises(ValueError, match="alpha"):
        compare(1, 2, 1, 1, alpha=1.5)
