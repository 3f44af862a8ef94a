"""Slippage: did the reduced tree's failure rate move away from the baseline's?

A flaky failure can slip into a different, deterministic one (the reduced test now fails every
run for another reason, and the regex still matches). Comparing the final (or holdout) rate
with the baseline rate by an exact two-sample test shows it.

The test is Fisher's exact test on the 2x2 table (reproduced / not reproduced) x (baseline /
reduced). Decision: Fisher rather than Boschloo, because Fisher's one-sided p-value is a finite
hypergeometric sum that a validator recomputes exactly, while Boschloo's is a numerical
supremum over a nuisance parameter. Fisher is conservative (its size is at most alpha), so a
reported slip is never an artefact of the test. Two-sided decisions use the smaller one-sided
p-value against ``alpha / 2`` (each direction at half the level, so the pair has size at most
``alpha``).

Pure: no I/O, no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

Direction = Literal["higher", "lower", "none"]

#: Identifier recorded in the report next to the result.
TEST_ID = "fisher-exact-two-sample-v1"


def _one_sided(passes: int, runs: int, base_passes: int, base_runs: int, higher: bool) -> float:
    """P-value of "the reduced rate is higher (lower) than the baseline's": the one-sided
    Fisher test of the table ``[[passes, runs - passes], [base_passes, base_runs -
    base_passes]]`` (``scipy.stats.fisher_exact`` with ``greater`` / ``less``)."""
    if runs == 0 or base_runs == 0:
        return 1.0
    return hypergeometric_tail(passes, runs, passes + base_passes, runs + base_runs, higher)


def hypergeometric_tail(x: int, draws: int, successes: int, total: int, upper: bool) -> float:
    """``P(X >= x)`` (``upper``) or ``P(X <= x)`` for ``X`` hypergeometric: ``draws`` items
    drawn without replacement from ``total`` of which ``successes`` succeed. Summed in exact
    integer arithmetic and rounded once (so the float is the correctly rounded value; scipy's
    are within 1e-13 of it, tested), with no scipy import (``repomin.sampling.stats.lazy``)."""
    low, high = max(0, draws + successes - total), min(draws, successes)
    first, last = (max(x, low), high) if upper else (low, min(x, high))
    if first > last:
        return 0.0
    # term(i) = C(successes, i) * C(total - successes, draws - i), updated exactly in i.
    term = math.comb(successes, first) * math.comb(total - successes, draws - first)
    tail = term
    for i in range(first, last):
        term = term * (successes - i) * (draws - i)
        term //= (i + 1) * (total - successes - draws + i + 1)
        tail += term
    return float(Fraction(tail, math.comb(total, draws)))  # an exact probability: at most 1


def _check(passes: int, runs: int, what: str) -> None:
    if runs < 0 or not 0 <= passes <= runs:
        raise ValueError(f"{what}: need 0 <= passes <= runs, got {passes}/{runs}")


@dataclass(frozen=True, slots=True)
class Slippage:
    """The comparison of one reduced-tree sample (final runs or holdout) with the baseline."""

    baseline_passes: int
    baseline_runs: int
    passes: int
    runs: int
    p_higher: float
    p_lower: float
    alpha: float

    @property
    def direction(self) -> Direction:
        half = self.alpha / 2  # both tails cannot be small: p_higher + p_lower >= 1
        if self.p_higher <= half:
            return "higher"
        if self.p_lower <= half:
            return "lower"
        return "none"

    @property
    def p_value(self) -> float:
        """Two-sided p-value: twice the smaller one-sided one (at most 1)."""
        return min(1.0, 2 * min(self.p_higher, self.p_lower))

    def to_json(self) -> dict[str, Any]:
        return {
            "test": TEST_ID,
            "baseline_passes": self.baseline_passes,
            "baseline_runs": self.baseline_runs,
            "passes": self.passes,
            "runs": self.runs,
            "p_value": self.p_value,
            "alpha": self.alpha,
            "direction": self.direction,
        }


def compare(
    baseline_passes: int, baseline_runs: int, passes: int, runs: int, *, alpha: float
) -> Slippage:
    """Two-sided exact comparison of ``passes/runs`` with ``baseline_passes/baseline_runs``."""
    _check(baseline_passes, baseline_runs, "baseline")
    _check(passes, runs, "reduced")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return Slippage(
        baseline_passes,
        baseline_runs,
        passes,
        runs,
        _one_sided(passes, runs, baseline_passes, baseline_runs, True),
        _one_sided(passes, runs, baseline_passes, baseline_runs, False),
        alpha,
    )


def rate_above_baseline(
    baseline_passes: int, baseline_runs: int, passes: int, runs: int, *, alpha: float
) -> bool:
    """``--keep-rate``: is a candidate's rate significantly *above* the baseline's (one-sided
    Fisher test at ``alpha``)? A deterministic baseline can never be exceeded."""
    _check(baseline_passes, baseline_runs, "baseline")
    _check(passes, runs, "candidate")
    return _one_sided(passes, runs, baseline_passes, baseline_runs, True) <= alpha


def advice(direction: Direction) -> str:
    """One sentence for the summary and ``REPOMIN.md`` (empty when nothing slipped)."""
    if direction == "higher":
        return (
            "the reduced tree reproduces significantly more often than the original: the flaky "
            "failure may have slipped into a different, deterministic one; pin it with a "
            "signature mode (--python-exception, --java-exception or --process-failure) or "
            "rerun with --keep-rate"
        )
    if direction == "lower":
        return (
            "the reduced tree reproduces significantly less often than the original: a cause "
            "of the failure may have been partly removed; a signature mode (--python-exception, "
            "--java-exception or --process-failure) or a higher --min-candidate-rate keeps it"
        )
    return ""
