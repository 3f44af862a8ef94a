"""Exact one-sided binomial inference: Clopper–Pearson bounds, p-values, zero-failure counts.

Every function is a thin, validated wrapper around scipy so that the whole tool computes the
same number the same way (docs/statistics.md §A1). The identity the rest of the package leans on is

    binom_pvalue(k, n, p0) <= a   <=>   lower_bound(k, n, 1 - a) >= p0

(up to floating-point ties), so a test at level ``a`` and a one-sided ``1 - a`` confidence
bound always agree.
"""

from __future__ import annotations

import math

from repomin.sampling.stats.lazy import scipy_special

__all__ = [
    "amplified_rate",
    "binom_pvalue",
    "final_test_passed",
    "lower_bound",
    "upper_bound",
    "zero_failure_runs",
]


def _check_counts(k: int, n: int) -> None:
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")


def _check_open_unit(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")


def lower_bound(k: int, n: int, confidence: float) -> float:
    """One-sided Clopper–Pearson lower bound on p after ``k`` passes in ``n`` runs.

    ``beta.ppf(1 - c, k, n - k + 1)``; 0.0 when ``k == 0`` (which covers ``n == 0``). Computed
    as ``scipy.special.betaincinv``, which ``beta.ppf`` calls: the same float (tested).
    """
    _check_counts(k, n)
    _check_open_unit("confidence", confidence)
    if k == 0:
        return 0.0
    return float(scipy_special().betaincinv(k, n - k + 1, 1.0 - confidence))


def upper_bound(k: int, n: int, confidence: float) -> float:
    """One-sided Clopper–Pearson upper bound on p: ``beta.ppf(c, k + 1, n - k)``, 1.0 if k == n."""
    _check_counts(k, n)
    _check_open_unit("confidence", confidence)
    if k == n:
        return 1.0
    return float(scipy_special().betaincinv(k + 1, n - k, confidence))


def binom_pvalue(k: int, n: int, p0: float) -> float:
    """Exact p-value of H0: p <= p0 after ``k`` passes in ``n`` runs: ``P(Bin(n, p0) >= k)``,
    as the regularized incomplete beta ``I_p0(k, n - k + 1)`` (``binom.sf(k - 1, n, p0)``
    computes the same float: tested)."""
    _check_counts(k, n)
    if not 0.0 <= p0 <= 1.0:
        raise ValueError(f"p0 must lie in [0, 1], got {p0!r}")
    if k == 0:
        return 1.0
    return float(scipy_special().betainc(k, n - k + 1, p0))


def zero_failure_runs(theta: float, alpha: float) -> int:
    """Straight passes needed to reject H0: p <= theta at level alpha: ``ceil(ln α / ln θ)``.

    Computed as the smallest ``m >= 1`` with ``theta ** m <= alpha`` so that a float tie in the
    logarithm ratio (e.g. θ = 0.5, α = 0.25) cannot round the count the wrong way.
    """
    _check_open_unit("theta", theta)
    _check_open_unit("alpha", alpha)
    runs = max(1, math.ceil(math.log(alpha) / math.log(theta)))
    while theta**runs > alpha:
        runs += 1
    while runs > 1 and theta ** (runs - 1) <= alpha:
        runs -= 1
    return runs


def fewest_passes(runs: int, confidence: float, min_rate: float) -> int:
    """The fewest passes of ``runs`` whose lower bound at ``confidence`` reaches ``min_rate``
    (``runs + 1`` when even ``runs`` passes do not; at least 1). The bound is increasing in the
    passes, so a baseline with fewer matching runs than this, whatever its other runs do, fails
    ``--min-baseline-rate``: the decision is certain and the baseline can stop."""
    for passes in range(1, runs + 1):
        if lower_bound(passes, runs, confidence) >= min_rate:
            return passes
    return runs + 1


def runs_to_see_one(passes: int, runs: int, confidence: float, alpha: float, cap: int) -> int:
    """Runs after which a failure that reproduced ``passes`` of ``runs`` times would have shown
    at least once but with probability at most ``alpha``: the zero-failure count for the
    non-reproduction probability ``1 - L``, ``L`` the exact lower bound on its rate at
    ``confidence``; at most ``cap`` (then ``(1 - L) ** cap`` is the level reached)."""
    low = lower_bound(passes, runs, confidence)
    if low <= 0.0:
        return cap
    if low >= 1.0:
        return 1
    return min(cap, zero_failure_runs(1.0 - low, alpha))


def amplified_rate(p: float, repeats: int) -> float:
    """Pass probability of a super-run of up to ``repeats`` runs that stops at the first pass.

    ``1 - (1 - p) ** R``, monotone in p, so testing it against the amplified threshold is the
    same hypothesis (docs/statistics.md §A4). Computed with ``expm1``/``log1p`` to keep small
    rates exact.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    if p == 1.0:
        return 1.0
    return -math.expm1(repeats * math.log1p(-p))


def final_test_passed(passes: int, runs: int, theta: float, alpha: float) -> bool:
    """The final validation's verdict: the exact test of ``p > theta`` at level ``alpha`` on
    ``passes``/``runs`` fresh runs. False after 0 runs (no evidence is not a pass). The report
    writer and the validator both call this one function."""
    if runs == 0:
        return False
    return binom_pvalue(passes, runs, theta) <= alpha
