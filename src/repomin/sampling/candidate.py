"""One candidate's test on its stream of samples, under a flaky (non-single) policy.

Owns the two ways a candidate is decided once the oracle has a stream of its runs
(``parallel.Samples``: its own, or a lane sharing slots with other candidates; in submission
order either way; ``docs/statistics.md`` §3, §3c):

* :func:`screened_test` (``strict``): a screening super-run of up to R runs; a failed screen
  rejects and spends nothing; a passing one takes the next family index j and continues with
  the exact sequential test whose size *given the screen* is at most ``α_j``.
* :func:`per_candidate_test` (``fast``, and the search under the payload gate): one
  unscreened exact design with the screen as a futility rule inside it (all-fail after R runs
  rejects); every run counts, and the design's size at θ is computed with that rule.

Both ask the stream for only as many samples as every path from the current state will use
(:meth:`SequentialDesign.surely_needed`), so no run is wasted past a decision.
"""

from __future__ import annotations

from collections.abc import Callable

from repomin.sampling import stats
from repomin.sampling.parallel import Samples
from repomin.sampling.policy import SamplingPolicy
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
