"""How one candidate is decided: one design object per sampling mode, with its widths.

A :class:`CandidateDesign` decides a candidate from its stream of samples
(``parallel.Samples``: its own, or a lane sharing slots with other candidates; in submission
order either way; ``docs/statistics.md`` §3, §3c) and says how the search should use the
``jobs`` sample slots for candidates decided so:

* :class:`SingleRun` (``single``: a deterministic failure): one run decides; the slots run one
  candidate each, in batches of disjoint candidates whose accepted ones are folded.
* :class:`PerCandidate` (``fast``, and the search under the payload gate): one unscreened exact
  design with the screen as a futility rule inside it (all-fail after R runs rejects); every
  run counts, and the design's size at θ is computed with that rule.
* :class:`Screened` (``strict``): a screening super-run of up to R runs; a failed screen rejects
  and spends nothing; a passing one takes the next family index j and continues with the exact
  sequential test whose size *given the screen* is at most ``α_j``.

The two sequential designs run a candidate's samples in parallel, one candidate at a time per
batch, and chain the next candidates of one ``try_first`` call into the slots a test leaves
idle (``lanes.py``); both ask the stream for only as many samples as every path from the
current state will use (:meth:`SequentialDesign.surely_needed`), so no run is wasted past a
decision. :func:`design_of` picks the design of a policy; a change to how a verdict is decided
is a change to one of these classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from repomin.sampling import stats
from repomin.sampling.parallel import Samples
from repomin.sampling.policy import SamplingPolicy
from repomin.sampling.rate_evidence import MAX_PROBES
from repomin.sampling.verdict import Verdict

#: (family index, its level, the design) of a screened candidate: taken after its screen.
Spend = Callable[[], tuple[int, float, stats.SequentialDesign]]


def per_candidate_test(samples: Samples[bool], policy: SamplingPolicy) -> Verdict:
    """The unscreened exact design at the per-candidate level, screen included."""
    _, design = policy.design_for(0)
    passes = runs = 0
    decision = stats.Decision.CONTINUE
    while decision is stats.Decision.CONTINUE:
        passes += samples.next(design.surely_needed(passes, runs))
        runs += 1
        decision = design.decide(passes, runs)
    accepted = decision is stats.Decision.ACCEPT
    screen_failed = not passes and runs >= design.screen > 0
    return Verdict(
        accepted,
        passes,
        runs,
        policy.mode,
        policy.confidence,
        design="screen" if screen_failed else design.identifier(),
        early=accepted and runs < design.max_runs(),
        saved=max(0, design.max_runs() - runs),
    )


def screened_test(samples: Samples[bool], policy: SamplingPolicy, spend: Spend) -> Verdict:
    """Screen-then-spend: the conditional exact test at ``α_j`` after a passing screen."""
    screened, screen = 0, False
    while not screen and screened < policy.screen_limit:
        # Two in flight are both used unless the first passes; the last screen run alone.
        screen = samples.next(2 if screened + 1 < policy.screen_limit else 1)
        screened += 1
    if not screen:
        return Verdict(False, 0, screened, policy.mode, policy.confidence, "screen")
    index, alpha, design = spend()
    # Given the screen passed, the test continues from state (1 pass, 1 run); the screen's
    # failed runs are outside the conditional test (exact given the screen).
    passes, runs = 1, 1
    decision = design.decide(passes, runs)
    while decision is stats.Decision.CONTINUE:
        passes += samples.next(design.surely_needed(passes, runs))
        runs += 1
        decision = design.decide(passes, runs)
    accepted = decision is stats.Decision.ACCEPT
    return Verdict(
        accepted,
        passes,
        runs + screened - 1,
        policy.mode,
        policy.confidence,
        design=design.identifier(),
        family_index=index,
        family_alpha=alpha,
        early=accepted and runs < design.max_runs(),
        saved=max(0, design.max_runs() - runs),
    )


#: From this many slots on, sequential tests decide batches of disjoint candidates (folded, the
#: merge verified by one more test); below it one candidate at a time, the next ones chained
#: into the idle slots. A batch pays one more test for its merge: with 2 slots the suite's
#: two flaky cases ended a little larger at the same cap (one run each, a weak sign), with 4
#: to 16 a 2,000-file flaky reduction took a third to a half of its wall time
#: (docs/decisions/2026-12-06-flaky-batches.md).
SEQUENTIAL_BATCH_FROM = 4


def sequential_batch_width(jobs: int) -> int:
    """Disjoint candidates a sequential design decides at once with ``jobs`` slots."""
    return jobs if jobs >= SEQUENTIAL_BATCH_FROM else 1


class CandidateDesign(Protocol):
    """How a candidate is decided from its samples, and how the slots serve such candidates."""

    def decide(self, samples: Samples[bool]) -> Verdict:
        """The verdict, drawing only the samples the decision needs."""
        ...

    def sample_width(self, jobs: int) -> int:
        """Samples of one candidate in flight."""
        ...

    def batch_width(self, jobs: int) -> int:
        """Disjoint candidates decided at once and folded (1: one at a time)."""
        ...

    def chain_width(self, jobs: int) -> int:
        """Candidates of one ``try_first`` call in flight, sharing the slots (1: none ahead)."""
        ...

    def lanes(self) -> bool:
        """Do candidates decided at once share the slots sample by sample (``lanes.py``)?
        Otherwise each takes one slot for its one run."""
        ...

    def probe_width(self, jobs: int) -> int:
        """Re-checks of a new incumbent (rate evidence, ``Oracle.adopted``) run at once."""
        ...

    def checks_incumbent(self) -> bool:
        """Is the incumbent run again every few acceptances (``--incumbent-check-every``)? A
        single run that accepted may have been a chance the next run does not repeat."""
        ...

    def prefetches_final(self) -> bool:
        """May slots a settled round leaves idle start the payload's final runs early
        (``search/prefetch.py``)? Only where a candidate takes one slot for one run."""
        ...

    def retests_rejections(self) -> bool:
        """At the fixpoint, is every rejected tree tested once more? Where a rejection is
        evidence, not proof (a flaky failure may be missed by a test of a good candidate)."""
        ...


@dataclass(frozen=True, slots=True)
class SingleRun:
    """One run decides (a deterministic failure): one candidate per slot, folded."""

    policy: SamplingPolicy

    def decide(self, samples: Samples[bool]) -> Verdict:
        ok = samples.next(1)
        return Verdict(ok, int(ok), 1, self.policy.mode, self.policy.confidence, "single-run")

    def sample_width(self, jobs: int) -> int:
        return 1

    def batch_width(self, jobs: int) -> int:
        return max(1, jobs)

    def chain_width(self, jobs: int) -> int:
        return 1

    def lanes(self) -> bool:
        return False

    def probe_width(self, jobs: int) -> int:
        return 1

    def checks_incumbent(self) -> bool:
        return True

    def prefetches_final(self) -> bool:
        return True

    def retests_rejections(self) -> bool:
        return False


class _Sequential:
    """The widths of a sequential test: a candidate's samples in parallel, through lanes;
    batches from :data:`SEQUENTIAL_BATCH_FROM` slots, the next candidates chained below it."""

    __slots__ = ()

    def sample_width(self, jobs: int) -> int:
        return max(1, jobs)

    def batch_width(self, jobs: int) -> int:
        return sequential_batch_width(jobs)

    def chain_width(self, jobs: int) -> int:
        return max(1, jobs)

    def lanes(self) -> bool:
        return True

    def probe_width(self, jobs: int) -> int:
        return min(MAX_PROBES, jobs) if jobs >= SEQUENTIAL_BATCH_FROM else 1

    def checks_incumbent(self) -> bool:
        return False

    def prefetches_final(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class PerCandidate(_Sequential):
    """The unscreened exact design at the per-candidate level (:func:`per_candidate_test`)."""

    policy: SamplingPolicy

    def decide(self, samples: Samples[bool]) -> Verdict:
        return per_candidate_test(samples, self.policy)

    def retests_rejections(self) -> bool:
        return self.policy.flaky


@dataclass(frozen=True, slots=True)
class Screened(_Sequential):
    """Screen, then spend a family index (:func:`screened_test`); ``spend`` takes the index."""

    policy: SamplingPolicy
    spend: Spend

    def decide(self, samples: Samples[bool]) -> Verdict:
        return screened_test(samples, self.policy, self.spend)

    def retests_rejections(self) -> bool:
        return self.policy.flaky


def design_of(policy: SamplingPolicy, spend: Spend) -> CandidateDesign:
    """The design ``policy`` decides its next candidate by (``spend``: the oracle's way of
    taking a family index, used by the screened design only)."""
    if policy.single:
        return SingleRun(policy)
    if policy.family_wise:
        return Screened(policy, spend)
    return PerCandidate(policy)


__all__: Sequence[str] = (
    "CandidateDesign",
    "PerCandidate",
    "Screened",
    "SingleRun",
    "design_of",
    "per_candidate_test",
    "screened_test",
)
