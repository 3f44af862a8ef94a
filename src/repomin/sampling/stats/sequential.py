"""Calibrated exact sequential tests of one candidate: H0 p <= θ against H1 p > θ.

After ``t`` runs with ``k`` passes and ``f = t - k`` failures the rule (docs/statistics.md §A2) is:

- **reject** when ``f`` exceeds the failure limit — the futility budget ``F`` when one is given,
  and in any case the *curtailment* limit, the largest ``f`` for which acceptance is still
  reachable (curtailment only stops paths that could never accept, so it changes no decision,
  only the run count);
- **accept** when the exact p-value ``binom.sf(k - 1, t, θ)`` is at most the calibrated level α';
- **reject** at the cap ``N``;
- otherwise **continue**.

Looking after every run inflates the error if α' = α, so :func:`design` *calibrates* α': it is
the largest p-value attained at a reachable state whose exact acceptance probability at
``p = θ`` is at most α. The acceptance probability is computed by a dynamic programme over the
``(t, f)`` states (O(N·F) per evaluation); it is non-decreasing both in ``p`` (so the value at θ
is the size) and in α' (so bisection over the sorted attained p-values finds α').

**Screen-then-spend.** A ``screened`` design is applied *conditionally on a first passing run*:
the walk starts at ``(t, k) = (1, 1)``, ``cap`` counts the screening run, and the size is the
acceptance probability at θ *given* that pass. A candidate whose screen fails never enters the
design and spends nothing. The zero-failure design at level α therefore needs
``zero_failure_runs(θ, α)`` straight passes *after* the screening run.
"""

from __future__ import annotations

import enum
import functools
import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from repomin.sampling.stats.bounds import zero_failure_runs
from repomin.sampling.stats.lazy import scipy_special

__all__ = [
    "DESIGN_VERSION",
    "Decision",
    "SequentialDesign",
    "design",
    "threshold_acceptance_probability",
    "zero_failure_design",
]

logger = logging.getLogger(__name__)

DESIGN_VERSION = "seq-exact-v1"
"""Prefix of :meth:`SequentialDesign.identifier`; bump it whenever a decision could change."""

_FloatTable = npt.NDArray[np.float64]
_BoolTable = npt.NDArray[np.bool_]


class Decision(enum.Enum):
    """What to do after the latest run of a candidate."""

    ACCEPT = "accept"
    REJECT = "reject"
    CONTINUE = "continue"


def _check_open_unit(name: str, value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value!r}")


def _check_probability(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")


def _check_screen(screen: int, screened: bool) -> None:
    if screen < 0 or (screen and screened):
        raise ValueError(f"a futility screen needs an unscreened design, >= 0 runs: {screen}")


def _check_shape(cap: int, failure_budget: int | None) -> None:
    if cap < 1:
        raise ValueError(f"cap must be at least 1 run, got {cap}")
    if failure_budget is not None and failure_budget < 0:
        raise ValueError(f"failure_budget must be None or >= 0, got {failure_budget}")


def _width(cap: int, failure_budget: int | None) -> int:
    """Number of failure counts ``f = 0 .. width - 1`` a path can hold without being rejected."""
    return (cap if failure_budget is None else min(failure_budget, cap)) + 1


@functools.lru_cache(maxsize=512)
def _pvalue_table(theta: float, cap: int, width: int) -> _FloatTable:
    """``table[t, f] = binom.sf(t - f - 1, t, θ)``; +inf where ``f > t`` (no such state).

    Decisions and the dynamic programme both read this one table, so they compare the very
    same floats against α'. Computed as ``I_θ(k, t - k + 1)`` (``k = t - f`` passes; 1 at k = 0),
    the floats ``binom.sf`` gives (tested).
    """
    runs = np.arange(cap + 1)[:, None]
    passes = runs - np.arange(width)[None, :]
    upper = scipy_special().betainc(np.maximum(passes, 1), runs - passes + 1, theta)
    values = np.where(passes >= 1, upper, 1.0)
    table = np.where(passes >= 0, values, np.inf).astype(np.float64)
    table.setflags(write=False)
    return table


def _reachable(cap: int, width: int, screened: bool) -> _BoolTable:
    """States ``(t, f)`` with ``t >= 1`` a walk can visit (a screened walk has ``k >= 1``)."""
    runs = np.arange(cap + 1)[:, None]
    failures = np.arange(width)[None, :]
    first_pass = 1 if screened else 0
    return (runs >= 1) & (failures <= runs - first_pass)


def _failure_limit(table: _FloatTable, threshold: float, screened: bool) -> int:
    """Largest failure count from which acceptance is still reachable; -1 when none is.

    With ``f`` fixed the p-value falls as passes accrue, and it rises with ``f``, so a path with
    ``f`` failures can still accept iff some state ``(t, f)`` accepts.
    """
    cap = table.shape[0] - 1
    accepting = (table <= threshold) & _reachable(cap, table.shape[1], screened)
    columns = np.flatnonzero(accepting.any(axis=0))
    return int(columns[-1]) if columns.size else -1


@dataclass(frozen=True, slots=True)
class _Walk:
    acceptance: float
    expected_runs: float


def _walk(
    table: _FloatTable, threshold: float, limit: int, screened: bool, p: float, screen: int = 0
) -> _Walk:
    """Exact acceptance probability and expected run count of the rule at pass probability p.

    ``mass[f]`` is the probability of standing undecided at ``(t, f)``. A path reaching
    ``f = limit + 1`` is rejected on arrival (the run that got it there is counted), and so
    is the all-fail path at ``t = screen`` (the futility screen; 0 = none).
    """
    cap = table.shape[0] - 1
    start = 1 if screened else 0
    if limit < 0:
        return _Walk(0.0, float(start))
    accepting = table[:, : limit + 1] <= threshold
    hits = accepting.astype(np.float64)
    keeps = 1.0 - hits
    mass = np.zeros(limit + 1)
    mass[0] = 1.0
    accepted = 0.0
    runs = float(start)
    fail = 1.0 - p
    for t in range(start, cap + 1):
        accepted += float(mass @ hits[t])
        mass *= keeps[t]
        if 0 < screen == t and screen <= limit:
            mass[screen] = 0.0
        if t == cap:
            break
        remaining = float(mass.sum())
        if remaining == 0.0:
            break
        runs += remaining
        step = mass * p
        step[1:] += mass[:-1] * fail
        mass = step
    return _Walk(accepted, runs)


def _longest_walk(
    table: _FloatTable, threshold: float, limit: int, screened: bool, screen: int = 0
) -> int:
    """The most runs any path takes (reachability version of :func:`_walk`)."""
    cap = table.shape[0] - 1
    start = 1 if screened else 0
    if limit < 0:
        return start
    accepting = table[:, : limit + 1] <= threshold
    alive = np.zeros(limit + 1, dtype=bool)
    alive[0] = True
    longest = start
    for t in range(start, cap):
        alive &= ~accepting[t]
        if 0 < screen == t and screen <= limit:
            alive[screen] = False
        if not alive.any():
            break
        longest = t + 1
        step = alive.copy()
        step[1:] |= alive[:-1]
        alive = step
    return longest


@dataclass(frozen=True, slots=True)
class SequentialDesign:
    """A calibrated sequential test; build it with :func:`design` or :func:`zero_failure_design`.

    ``cap`` counts the screening run when ``screened``. ``calibrated_alpha`` is α', the p-value
    level the rule compares against; ``size`` is the exact acceptance probability at ``p = θ``
    (given the screening pass when ``screened``) and never exceeds ``alpha``. A design with
    ``calibrated_alpha == 0.0`` and ``size == 0.0`` can accept nothing within its cap and
    rejects at once. ``screen`` (unscreened designs only; 0 = none) is a futility screen: the
    all-fail path is rejected after ``screen`` runs; the design is calibrated, and its size
    computed, with that rule in place.
    """

    theta: float
    alpha: float
    cap: int
    failure_budget: int | None
    screened: bool
    calibrated_alpha: float
    size: float
    screen: int = 0

    def __post_init__(self) -> None:
        _check_open_unit("theta", self.theta)
        _check_open_unit("alpha", self.alpha)
        _check_shape(self.cap, self.failure_budget)
        _check_screen(self.screen, self.screened)

    @property
    def start_runs(self) -> int:
        """Runs already taken when the design starts: 1 (the screen) when screened, else 0."""
        return 1 if self.screened else 0

    @property
    def failure_limit(self) -> int:
        """Reject once failures exceed this: min(F, curtailment limit); -1 = never accepts."""
        return _design_failure_limit(self)

    def decide(self, passes: int, runs: int) -> Decision:
        """The rule's verdict after ``runs`` runs with ``passes`` passes (screen included)."""
        if not 0 <= passes <= runs <= self.cap:
            raise ValueError(
                f"need 0 <= passes <= runs <= cap={self.cap}, got passes={passes}, runs={runs}"
            )
        if self.screened and passes < 1:
            raise ValueError(
                "a screened design starts after a passing screening run, so passes >= 1 "
                f"(runs include the screen); got passes={passes}, runs={runs}"
            )
        failures = runs - passes
        if failures > self.failure_limit or (self.screen and not passes and runs >= self.screen):
            return Decision.REJECT
        table = _design_table(self)
        if runs >= 1 and table[runs, failures] <= self.calibrated_alpha:
            return Decision.ACCEPT
        if runs >= self.cap:
            return Decision.REJECT
        return Decision.CONTINUE

    def acceptance_probability(self, p: float) -> float:
        """Exact probability of acceptance at pass probability p (given the screen if screened)."""
        _check_probability(p)
        return _design_walk(self, p).acceptance

    def expected_runs(self, p: float) -> float:
        """Exact expected number of runs at p; when screened, given the screen passed and
        counting the screening run itself."""
        _check_probability(p)
        return _design_walk(self, p).expected_runs

    def max_runs(self) -> int:
        """The most runs any path can take (screening run included)."""
        return _design_longest(self)

    def surely_needed(self, passes: int, runs: int) -> int:
        """Fewest further runs any path from this state takes to a decision (that many can run
        in parallel, none wasted): the all-pass or the all-fail path, by monotonicity."""
        fastest = self.cap - runs
        for step in range(1, fastest + 1):
            if self.decide(passes + step, runs + step) is not Decision.CONTINUE:
                fastest = step
                break
        for step in range(1, fastest):
            if self.decide(passes, runs + step) is not Decision.CONTINUE:
                return step
        return max(1, fastest)

    def identifier(self) -> str:
        """Stable key for reports and the evidence ledger."""
        budget = "none" if self.failure_budget is None else str(self.failure_budget)
        mode = "screened" if self.screened else "unscreened"
        screen = f":screen={self.screen}" if self.screen else ""
        return (
            f"{DESIGN_VERSION}:theta={self.theta!r}:alpha={self.alpha!r}:cap={self.cap}"
            f":F={budget}:{mode}{screen}"
        )


def _design_table(d: SequentialDesign) -> _FloatTable:
    return _pvalue_table(d.theta, d.cap, _width(d.cap, d.failure_budget))


@functools.lru_cache(maxsize=1024)
def _design_failure_limit(d: SequentialDesign) -> int:
    return _failure_limit(_design_table(d), d.calibrated_alpha, d.screened)


@functools.lru_cache(maxsize=4096)
def _design_walk(d: SequentialDesign, p: float) -> _Walk:
    return _walk(_design_table(d), d.calibrated_alpha, d.failure_limit, d.screened, p, d.screen)


@functools.lru_cache(maxsize=1024)
def _design_longest(d: SequentialDesign) -> int:
    return _longest_walk(
        _design_table(d), d.calibrated_alpha, d.failure_limit, d.screened, d.screen
    )


def threshold_acceptance_probability(
    theta: float,
    threshold: float,
    cap: int,
    failure_budget: int | None,
    screened: bool,
    p: float,
) -> float:
    """Acceptance probability of the rule with an arbitrary, *uncalibrated* level α'.

    With ``threshold = α`` and ``p = θ`` this is the size of the naive "look after every run at
    level α" rule — 0.0987 at θ = 0.5, α = 0.05, N = 20 — which is why :func:`design`
    calibrates. Never use an uncalibrated level for decisions.
    """
    _check_open_unit("theta", theta)
    _check_shape(cap, failure_budget)
    _check_probability(p)
    table = _pvalue_table(theta, cap, _width(cap, failure_budget))
    return _walk(table, threshold, table.shape[1] - 1, screened, p).acceptance


@functools.lru_cache(maxsize=1024)
def design(
    theta: float,
    alpha: float,
    cap: int,
    failure_budget: int | None,
    screened: bool,
    screen: int = 0,
) -> SequentialDesign:
    """Calibrate α' for the rule and return the design (cached: designs are immutable).

    α' is found by bisection over the sorted distinct p-values of the reachable states; each
    probe is one O(N·F) dynamic programme at ``p = θ`` without curtailment (which changes no
    decision). When even the all-pass path is too likely under H0 within ``cap`` runs, the
    returned design has α' = 0, size 0, and rejects every candidate at once (a warning names
    the cap that would be needed).
    """
    _check_open_unit("theta", theta)
    _check_open_unit("alpha", alpha)
    _check_shape(cap, failure_budget)
    _check_screen(screen, screened)
    screened = bool(screened)
    table = _pvalue_table(theta, cap, _width(cap, failure_budget))
    limit = table.shape[1] - 1
    candidates = np.unique(table[_reachable(cap, table.shape[1], screened)])

    def size_at(level: float) -> float:
        return _walk(table, level, limit, screened, theta, screen).acceptance

    low, high = 0, int(candidates.size)
    while low < high:
        middle = (low + high) // 2
        if size_at(float(candidates[middle])) <= alpha:
            low = middle + 1
        else:
            high = middle
    if low == 0:
        needed = zero_failure_runs(theta, alpha) + (1 if screened else 0)
        logger.warning(
            "no test of p <= %r at alpha=%r can accept within cap=%d runs%s; every candidate "
            "will be rejected: raise the cap to at least %d",
            theta,
            alpha,
            cap,
            " (screening run included)" if screened else "",
            needed,
        )
        return SequentialDesign(theta, alpha, cap, failure_budget, screened, 0.0, 0.0, screen)
    level = float(candidates[low - 1])
    return SequentialDesign(
        theta, alpha, cap, failure_budget, screened, level, size_at(level), screen
    )


def zero_failure_design(theta: float, alpha: float, screened: bool) -> SequentialDesign:
    """F = 0: reject at the first failure, accept after ``zero_failure_runs(θ, α)`` straight
    passes — counted *after* the screening run when ``screened`` (so ``cap`` is one more)."""
    cap = zero_failure_runs(theta, alpha) + (1 if screened else 0)
    result = design(theta, alpha, cap, 0, screened)
    if result.calibrated_alpha == 0.0:
        # θ**m and the programme's running product may differ in the last bit at a tie.
        result = design(theta, alpha, cap + 1, 0, screened)
    return result
