"""The incumbent's current pass rate, from its own samples, for sizing the next candidates' tests.

Owns :class:`RateEvidence` (frozen, part of the policy record): the baseline's rate and the most
recent samples of the incumbent chain -- the adopted candidate's own runs and re-checks of the
incumbent (*probes*), most recent last -- and the estimate the screen and the failure budget
are sized from (``docs/statistics.md`` §3a, "Sizing from the incumbent").

Sizing changes power and cost, never size: a candidate's design is fixed from samples taken
before its first run, and given that past its runs are fresh, so the design's exact size at θ
bounds its error whatever the estimate was. The estimate may therefore be anything computable
from the past. This one is a sizing rule, not a lower bound: the best of the one-sided
Clopper-Pearson lower bounds at ``SIZING_CONFIDENCE`` over the suffixes of the chain's recent
samples, which start as the baseline's runs (the source's own samples). The suffix is chosen
after seeing the samples, so the best bound is not a bound at that confidence: for i.i.d.
Bernoulli(p) windows of 20 it is at or below p with probability 0.653 / 0.641 / 0.628 / 0.679 /
0.815 / 1.000 at p = 0.2 / 0.3 / 0.5 / 0.7 / 0.9 / 0.95, and 0.564 at worst (exact). On the
search's own path (accepted verdicts only, re-checks stopping at the first failure) it is
lower still, and the screen's power falls short of its target below p = 0.7; the figures, why
the rule is kept and how to reproduce them are in ``docs/statistics.md`` §3a (pinned by
``tests/unit/test_rate_estimate_coverage.py``). What it buys: five straight passes since the
last failure (the failure became deterministic along the way) make the gated search's screen
one run; failures lengthen it again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from repomin.sampling import stats

#: Samples of the incumbent chain kept (most recent last).
RATE_WINDOW = 20
#: Confidence of each suffix lower bound the estimate takes the best of (the best of them is
#: not a bound at this confidence: see the module doc).
SIZING_CONFIDENCE = 0.8
#: Most probes of one incumbent in a row (the caller stops at the first failure).
MAX_PROBES = 5
#: Most screen runs (a super-run of up to R runs, stopping at the first pass).
MAX_SCREEN = 8


def screen_for(rate: float, power: float) -> int:
    """Runs R of the screening super-run: the fewest with P(some pass | rate) >= ``power``."""
    if rate >= 1.0:
        return 1
    if rate <= 0.0:
        return MAX_SCREEN
    return max(1, min(MAX_SCREEN, math.ceil(math.log(1.0 - power) / math.log(1.0 - rate))))


@dataclass(frozen=True, slots=True)
class RateEvidence:
    """What the policy knows about the incumbent's rate (see module doc)."""

    base: float
    recent: tuple[bool, ...] = ()

    def add(self, outcomes: Iterable[bool]) -> RateEvidence:
        """The evidence with these samples of the current incumbent appended."""
        recent = (*self.recent, *(bool(o) for o in outcomes))[-RATE_WINDOW:]
        return RateEvidence(self.base, recent)

    def add_counts(self, passes: int, runs: int) -> RateEvidence:
        """A verdict's counts, its failures last: a failure always breaks the current streak
        (the order within a sequential test is not kept, so take the pessimistic one)."""
        return self.add([True] * passes + [False] * (runs - passes))

    @property
    def streak(self) -> int:
        """Straight passes at the end of the window."""
        run = 0
        for outcome in reversed(self.recent):
            if not outcome:
                break
            run += 1
        return run

    def estimate(self) -> float:
        """The rate the screen and failure budget are sized from (see module doc): the best of
        the suffixes' lower bounds (a sizing rule, not a lower bound at ``SIZING_CONFIDENCE``),
        else the baseline's rate (empty window)."""
        best, passes = (self.base if not self.recent else 0.0), 0
        for j, outcome in enumerate(reversed(self.recent), start=1):
            passes += outcome
            if outcome:
                best = max(best, stats.lower_bound(passes, j, SIZING_CONFIDENCE))
        return min(best, 1.0)

    def probes_worth_taking(self, power: float, floor: float = 0.0) -> bool:
        """Would ``MAX_PROBES`` more straight passes of the incumbent shorten the screen (sized
        from the estimate, at least ``floor``)? The estimate only grows with passes, so fewer
        passes shorten it no more."""
        current = screen_for(max(self.estimate(), floor), power)
        more = self.add([True] * MAX_PROBES)
        return current > 1 and screen_for(max(more.estimate(), floor), power) < current

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "recent": "".join("1" if o else "0" for o in self.recent)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RateEvidence:
        return cls(float(data["base"]), tuple(c == "1" for c in str(data["recent"])))
