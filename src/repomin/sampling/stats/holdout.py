"""Holdout certification of the exported payload: one exact binomial test (docs/statistics.md §A5).

``n`` fresh runs of the frozen payload, never used by any search decision, give ``K`` passes.
The claim "p >= p0" is certified at level α_h iff the exact p-value of H0: p <= p0 is at most
α_h — equivalently the one-sided ``1 - α_h`` Clopper–Pearson lower bound is at least p0, and
``K >= k_crit``. Its error is exactly α_h whatever the search did, because the holdout runs are
independent of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from repomin.sampling.stats.bounds import binom_pvalue, lower_bound, upper_bound, zero_failure_runs
from repomin.sampling.stats.lazy import scipy_special

__all__ = [
    "MAX_SUGGESTED_HOLDOUT_RUNS",
    "HoldoutResult",
    "critical_passes",
    "holdout_test",
    "min_certifiable_runs",
    "suggest_holdout_runs",
]

MAX_SUGGESTED_HOLDOUT_RUNS = 2000
"""Upper end of the search in :func:`suggest_holdout_runs`."""

_IntArray = npt.NDArray[np.int64]


def _check_open_unit(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")


@dataclass(frozen=True, slots=True)
class HoldoutResult:
    """Everything the report states about the holdout; ``confidence == 1 - alpha``.

    ``upper_bound`` is reported too because "not certified" does not mean p < p0.
    ``k_crit`` is ``runs + 1`` when even an all-pass sample could not certify.
    """

    runs: int
    passes: int
    p0: float
    alpha: float
    confidence: float
    observed_rate: float
    p_value: float
    lower_bound: float
    upper_bound: float
    k_crit: int
    certified: bool


def _at_least(k: _IntArray, runs: _IntArray, p: float) -> npt.NDArray[np.float64]:
    """``P(Bin(runs, p) >= k)`` elementwise: ``binom.sf(k - 1, runs, p)``, computed as the
    incomplete beta ``I_p(k, runs - k + 1)`` that ``binom.sf`` calls (the same floats,
    tests/unit/test_stats_special.py) without importing ``scipy.stats``."""
    inside = (k >= 1) & (k <= runs)
    a = np.where(inside, k, 1)
    b = np.where(inside, runs - k + 1, 1)
    tail = np.asarray(scipy_special().betainc(a, b, p), dtype=np.float64)
    return np.where(k <= 0, 1.0, np.where(k > runs, 0.0, tail))


def _critical_passes(runs: _IntArray, p0: float, alpha: float) -> _IntArray:
    """Vectorised :func:`critical_passes`: smallest K with ``P(Bin(n, p0) >= K) <= alpha``."""
    z = float(scipy_special().ndtri(1.0 - alpha))  # a normal guess, then the exact walk
    guess = np.ceil(runs * p0 + z * np.sqrt(runs * p0 * (1.0 - p0)))
    k = np.clip(np.nan_to_num(guess, nan=0.0), 0, runs + 1).astype(np.int64)
    # Walk to the exact boundary of the same float p-values that holdout_test compares.
    while True:
        too_low = (k <= runs) & (_at_least(k, runs, p0) > alpha)
        if not too_low.any():
            break
        k = k + too_low
    while True:
        too_high = (k >= 1) & (_at_least(k - 1, runs, p0) <= alpha)
        if not too_high.any():
            break
        k = k - too_high
    return np.asarray(k, dtype=np.int64)


def critical_passes(runs: int, p0: float, alpha: float) -> int:
    """``k_crit``: the fewest passes in ``runs`` runs that certify p >= p0 at level alpha.

    ``runs + 1`` when none does (too few runs, see :func:`min_certifiable_runs`).
    """
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    _check_open_unit("p0", p0)
    _check_open_unit("alpha", alpha)
    return int(_critical_passes(np.array([runs], dtype=np.int64), p0, alpha)[0])


def holdout_test(passes: int, runs: int, p0: float, alpha: float) -> HoldoutResult:
    """Certify p >= p0 at level ``alpha`` from ``passes`` of ``runs`` holdout runs."""
    if runs < 1 or not 0 <= passes <= runs:
        raise ValueError(f"need runs >= 1 and 0 <= passes <= runs, got {passes}/{runs}")
    _check_open_unit("p0", p0)
    _check_open_unit("alpha", alpha)
    confidence = 1.0 - alpha
    p_value = binom_pvalue(passes, runs, p0)
    return HoldoutResult(
        runs=runs,
        passes=passes,
        p0=p0,
        alpha=alpha,
        confidence=confidence,
        observed_rate=passes / runs,
        p_value=p_value,
        lower_bound=lower_bound(passes, runs, confidence),
        upper_bound=upper_bound(passes, runs, confidence),
        k_crit=critical_passes(runs, p0, alpha),
        certified=p_value <= alpha,
    )


def min_certifiable_runs(p0: float, alpha: float) -> int:
    """Smallest n at which an all-pass holdout certifies: ``alpha ** (1 / n) >= p0``.

    That is ``p0 ** n <= alpha``; the count is then nudged so that it agrees exactly with the
    p-value :func:`holdout_test` computes for n passes out of n.
    """
    _check_open_unit("p0", p0)
    _check_open_unit("alpha", alpha)
    runs = zero_failure_runs(p0, alpha)
    while binom_pvalue(runs, runs, p0) > alpha:
        runs += 1
    while runs > 1 and binom_pvalue(runs - 1, runs - 1, p0) <= alpha:
        runs -= 1
    return runs


def suggest_holdout_runs(rate: float, p0: float, alpha: float, power: float = 0.8) -> int:
    """Smallest holdout size n <= 2000 whose certification power at ``rate`` is >= ``power``.

    Power is ``P(Binomial(n, rate) >= k_crit(n))``. It is not monotone in n (it saw-tooths as
    k_crit steps), so this is the *first* n that reaches the target; a few more runs can be
    slightly less powerful. Raises ValueError when no n up to 2000 reaches it — in particular
    whenever ``rate <= p0``, where power is at most alpha.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must lie in [0, 1], got {rate!r}")
    _check_open_unit("p0", p0)
    _check_open_unit("alpha", alpha)
    _check_open_unit("power", power)
    runs = np.arange(1, MAX_SUGGESTED_HOLDOUT_RUNS + 1, dtype=np.int64)
    k_crit = _critical_passes(runs, p0, alpha)
    achieved = _at_least(k_crit, runs, rate)
    reaching = np.flatnonzero(achieved >= power)
    if reaching.size == 0:
        raise ValueError(
            f"no holdout of at most {MAX_SUGGESTED_HOLDOUT_RUNS} runs certifies p >= {p0!r} at "
            f"alpha={alpha!r} with power {power!r} when the true rate is {rate!r}; "
            "lower p0 or accept less power"
        )
    return int(runs[reaching[0]])
