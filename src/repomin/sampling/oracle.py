"""The oracle: the one door between proposed trees and the runner.

Owns the path of every sample: cache → policy → runner → verdict. :meth:`Oracle.evaluate`
looks the tree up in the :class:`~repomin.sampling.verdict.VerdictCache`, then decides it by the
current :class:`~repomin.sampling.policy.SamplingPolicy`'s design (:meth:`Oracle.design`, one
object per mode in :mod:`repomin.sampling.designs`, which also says how wide the search runs):

* ``strict``  -- screen-then-spend: a screening super-run; a failed screen rejects and spends
  nothing; a passing candidate takes the next family index ``j`` and continues with an exact
  sequential test whose size given the screen is at most ``alpha_j = spend(alpha, j)``.
* ``fast``    -- one unscreened exact design at a constant level with the screen inside it;
  screen and failure budget sized from the incumbent's rate evidence
  (:mod:`repomin.sampling.rate_evidence`).
* ``single``  -- one run per candidate, ``P(accept | p) = p``: labelled as giving no
  per-candidate guarantee; the reducer re-checks the incumbent periodically and the policy
  escalates at the first inconsistency: to ``fast`` under the payload gate (the default), to
  ``strict`` otherwise (:meth:`SamplingPolicy.escalate`).

Timeouts, resource exhaustion and infrastructure errors never count as a reproduction;
infrastructure errors are retried a bounded number of times and never become a verdict. Every
counter goes to the :class:`~repomin.sampling.accounting.Ledger`; the policy is replaced, never
edited.
The statistics are described in ``docs/statistics.md``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from repomin.errors import BaselineError, InfrastructureError
from repomin.failure.contract import FailureContract
from repomin.failure.identity import Identity
from repomin.runners.base import Outcome, Runner, RunRequest
from repomin.sampling import stats
from repomin.sampling.accounting import Ledger
from repomin.sampling.baseline_cost import refusal
from repomin.sampling.budget import Budget, Cancelled, Guard, StopSearch
from repomin.sampling.designs import CandidateDesign, design_of
from repomin.sampling.lanes import Lane
from repomin.sampling.parallel import SampleStream, map_samples
from repomin.sampling.policy import SAMPLING_MODES, Sampling, SamplingConfig, SamplingPolicy
from repomin.sampling.rate_evidence import MAX_PROBES
from repomin.sampling.verdict import Baseline, Verdict, VerdictCache
from repomin.tree import Tree

__all__ = ["SAMPLING_MODES", "Baseline", "Budget", "Cancelled", "FinalSample", "Oracle"]
__all__ += ["OracleHooks"]
__all__ += ["Sampling", "SamplingConfig", "SamplingPolicy", "StopSearch", "Verdict"]

INFRA_RETRIES = 3


@dataclass(frozen=True, slots=True)
class OracleHooks:
    """Observers and extension points, all optional.

    ``on_sample`` sees every completed sample (progress); ``on_verdict`` every new decision
    (the session's persistent cache); ``on_baseline_run`` each baseline outcome with whether it
    matched the spec before the signature is pinned (e.g. to show the first miss at once);
    ``accept`` may veto an accepted candidate (e.g. a slippage rule): a vetoed verdict becomes
    a rejection with the same evidence; ``on_policy`` sees every new policy *before* it is used
    (the session persists it, so a family or gate index taken is never taken again on resume);
    ``on_baseline_look`` each look of the adaptive baseline that continues it.
    """

    on_sample: Callable[[Outcome], None] | None = None
    on_verdict: Callable[[str, Verdict], None] | None = None
    on_baseline_run: Callable[[int, Outcome, bool], None] | None = None
    accept: Callable[[Tree, Verdict], bool] | None = None
    on_policy: Callable[[SamplingPolicy], None] | None = None
    #: a baseline look fell short and the baseline goes on: (runs, passes, lower bound, the
    #: run count of the next look)
    on_baseline_look: Callable[[int, int, float, int], None] | None = None


@dataclass(slots=True)
class _Traffic:
    """The oracle's sample counters; the oracle changes them under its lock."""

    #: samples started (the number in each sample's label)
    started: int = 0
    #: samples running now
    inflight: int = 0
    #: samples counted by ``--max-runs`` (all but baseline, final and holdout)
    budgeted: int = 0

    def start(self) -> int:
        """One more sample started; its number."""
        self.started += 1
        return self.started

    def running(self, change: int) -> None:
        self.inflight += change

    def count(self) -> None:
        self.budgeted += 1


class Oracle:
    """Decides whether a tree reproduces the failure; counts every sample it spends."""

    def __init__(
        self,
        *,
        runner: Runner,
        contract: FailureContract,
        command: str,
        env: dict[str, str] | None = None,
        timeout: float,
        config: SamplingConfig,
        ledger: Ledger,
        budget: Budget | None = None,
        use_cache: bool = True,
        stop: threading.Event | None = None,
        jobs: int = 1,
        hooks: OracleHooks | None = None,
    ) -> None:
        self._runner = runner
        self._contract = contract
        self._request = RunRequest(command, dict(env or {}), timeout)
        self._config = config
        self._ledger = ledger
        self._guard = Guard(budget or Budget(), stop or threading.Event())
        self._cache = VerdictCache(use_cache)
        self._jobs = max(1, jobs)
        self._hooks = hooks or OracleHooks()
        self._policy: SamplingPolicy | None = None
        self._lock = threading.Lock()
        self._traffic = _Traffic()

    # -- read-only views ---------------------------------------------------------------------

    @property
    def config(self) -> SamplingConfig:
        return self._config

    @property
    def contract(self) -> FailureContract:
        return self._contract

    @property
    def request(self) -> RunRequest:
        """The request template (command, explicit env, timeout) every sample uses."""
        return self._request

    @property
    def policy(self) -> SamplingPolicy:
        if self._policy is None:
            raise RuntimeError("the oracle has no policy before the baseline")
        return self._policy

    @property
    def cache(self) -> VerdictCache:
        return self._cache

    @property
    def samples(self) -> int:
        return self._ledger.samples

    @property
    def inflight(self) -> int:
        return self._traffic.inflight

    @property
    def inconsistencies(self) -> int:
        return self.policy.switches

    @property
    def incumbent_checks(self) -> int:
        return self._ledger.incumbent_checks

    def attach(self, hooks: OracleHooks) -> None:
        """Replace the hooks (e.g. once the session exists)."""
        self._hooks = hooks or OracleHooks()

    @property
    def hooks(self) -> OracleHooks:
        return self._hooks

    # -- sampling ----------------------------------------------------------------------------

    def check_budget(self) -> None:
        self._guard.check(self._traffic.budgeted, True)

    @property
    def search_samples(self) -> int:
        """Samples counted by ``--max-runs`` (everything but baseline, final and holdout)."""
        return self._traffic.budgeted

    def sample(
        self, tree: Tree, label: str, *, phase: str | None, budgeted: bool = True
    ) -> Outcome:
        """One sample on a fresh copy of ``tree``; infrastructure errors retried, then raised."""
        self._guard.check(self._traffic.budgeted, budgeted)
        with self._lock:
            request = replace(self._request, sample_id=f"{label}-{self._traffic.start()}")
        for attempt in range(INFRA_RETRIES):
            with self._lock:
                self._traffic.running(+1)
            try:
                outcome = self._runner.run(tree, request)
            finally:
                with self._lock:
                    self._traffic.running(-1)
            if outcome.infrastructure_error is None:
                break
            if self._guard.stop.is_set():
                raise StopSearch("interrupted")
            time.sleep(0.2 * (attempt + 1))
        else:
            raise InfrastructureError(
                f"the {self._runner.backend} backend failed {INFRA_RETRIES} times in a row "
                f"({outcome.infrastructure_error}); check the engine and rerun with --resume"
            )
        if self._guard.stop.is_set() and (outcome.timed_out or outcome.exit_code is None):
            raise StopSearch("interrupted")
        self._ledger.add_sample(phase, outcome.duration, outcome.cpu_seconds)
        if budgeted:
            with self._lock:
                self._traffic.count()
        if self._hooks.on_sample is not None:
            self._hooks.on_sample(outcome)
        return outcome

    # -- baseline ----------------------------------------------------------------------------

    def run_baseline(self, tree: Tree, jobs: int | None = None) -> Baseline:
        """Run the baseline, pin the signature, learn the policy. Raises BaselineError.

        The baseline is adaptive (``stats.baseline``, docs/statistics.md §A4): it looks after
        ``--baseline-runs`` runs, and while the failure showed but the lower bound is below
        ``--min-baseline-rate`` it runs ``BASELINE_BLOCK`` more and looks again, up to its cap;
        a look that passes ends it, and the policy is learnt from every run so far. It stops
        early once its rejection is certain: when the runs that matched so far plus every run
        not yet finished, up to the cap, cannot reach the fewest passes whose lower bound at
        the cap meets the rate (``stats.fewest_passes``; no earlier look can then pass either),
        and, as before the looks, when not one of the first ``stats.first_misses`` runs
        matched (16 at the defaults: the first look could no longer pass). A matching run is an
        upper bound on a reproducing one (the signature is pinned from the runs at each look),
        so no baseline that could pass is ever cut short."""
        config, workers = self._config, jobs or self._jobs
        c, rate = config.confidence, config.min_baseline_rate
        looks = config.baseline_looks
        needed = stats.looks_needed(looks, c, rate)
        cap = looks[-1]
        if needed[-1] > cap:
            raise BaselineError(
                f"--min-baseline-rate {rate} cannot be reached with {cap} baseline runs (even "
                f"{cap}/{cap} gives a lower bound of {stats.lower_bound(cap, cap, c):.3f} at "
                f"confidence {c}); raise --baseline-runs above {cap} or lower "
                "--min-baseline-rate"
            )
        curtail = _Curtailment(looks[0], needed[0], cap, needed[-1])

        def one(i: int) -> Outcome | None:
            if curtail.certain():
                return None
            outcome = self.sample(tree, f"baseline-{i}", phase=None, budgeted=False)
            matched = self._contract.base_matches(outcome)
            if self._hooks.on_baseline_run is not None:
                self._hooks.on_baseline_run(i, outcome, matched)
            curtail.record(matched)
            return outcome

        outcomes: list[Outcome] = []
        passes, lower = 0, 0.0
        for look, runs in enumerate(looks):
            start = len(outcomes)
            ran = map_samples(_shifted(one, start), runs - start, workers)
            outcomes += [o for o in ran if o is not None]
            if len(outcomes) < runs:
                raise BaselineError(self._cut_short(outcomes, curtail, workers))
            passes = self._passes(outcomes) if curtail.matched else 0
            if look == 0 and passes == 0:
                raise BaselineError(
                    f"the command did not reproduce the failure in any of {runs} baseline runs"
                    f"{_baseline_hint(outcomes)}; check --command, --match/--exit-code and --env"
                )
            lower = stats.lower_bound(passes, runs, c)
            if lower >= rate or runs == cap:
                break
            if self._hooks.on_baseline_look is not None:
                self._hooks.on_baseline_look(runs, passes, lower, looks[look + 1])
        if lower < rate:
            stopped = f"after {cap} runs, the most the baseline makes"
            raise BaselineError(refusal(outcomes, passes, config, workers, stopped))
        return self._learn_baseline(outcomes)

    def _passes(self, outcomes: list[Outcome]) -> int:
        """Reproducing runs under the signature pinned from ``outcomes`` (a look's count)."""
        learnt = self._contract.learn(list(outcomes))
        return sum(learnt.reproduces(o) for o in outcomes)

    def _cut_short(self, outcomes: list[Outcome], curtail: _Curtailment, jobs: int) -> str:
        """The error of a baseline stopped once its rejection was certain."""
        m, rate = len(outcomes), self._config.min_baseline_rate
        n, needed = curtail.runs, curtail.needed
        if curtail.matched == 0 and m <= curtail.first:  # the first look's own rejection
            n, needed = curtail.first, curtail.first_needed
        stopped = (
            f"stopped after {m} of {n}: even if the other {n - m} reproduced, fewer than "
            f"{needed} of {n} would"
        )
        if curtail.matched == 0:
            return (
                f"the command did not reproduce the failure in any of {m} baseline runs "
                f"({stopped}, below --min-baseline-rate {rate} at confidence "
                f"{self._config.confidence}){_baseline_hint(outcomes)}; check --command, "
                "--match/--exit-code and --env"
            )
        return refusal(outcomes, curtail.matched, self._config, jobs, stopped, matched=True)

    def _learn_baseline(self, outcomes: list[Outcome]) -> Baseline:
        """Pin the signature from every baseline run, judge them, learn the policy (the checks
        repeat the last look's, for a caller with its own outcomes)."""
        n, c = len(outcomes), self._config.confidence
        self._contract = self._contract.learn(list(outcomes))
        verdicts = [self._contract.reproduces(o) for o in outcomes]
        passes = sum(verdicts)
        timeouts = sum(o.timed_out for o in outcomes)
        lower = stats.lower_bound(passes, n, c)
        exit_code = next((o.exit_code for o, v in zip(outcomes, verdicts, strict=True) if v), None)
        if exit_code is None and outcomes:
            exit_code = outcomes[0].exit_code
        baseline = Baseline(
            passes, n, lower, stats.upper_bound(passes, n, c), exit_code, timeouts, tuple(outcomes)
        )
        if passes == 0:
            raise BaselineError(
                f"the command did not reproduce the failure in any of {n} baseline runs"
                f"{_baseline_hint(outcomes)}; check --command, --match/--exit-code and --env"
            )
        if lower < self._config.min_baseline_rate:
            raise BaselineError(refusal(outcomes, passes, self._config, self._jobs, f"{n} runs"))
        self._set_policy(SamplingPolicy.learn(self._config, passes, n, lower))
        return baseline

    def _set_policy(self, policy: SamplingPolicy) -> None:
        """Swap the policy (under the lock when racing) and let ``on_policy`` persist it first."""
        if self._hooks.on_policy is not None:
            self._hooks.on_policy(policy)
        self._policy = policy

    def restore(
        self,
        policy: SamplingPolicy,
        signature: dict[str, object] | None,
        identity: Identity | None = None,
    ) -> None:
        """Continue with a stored policy, pinned signature and identity (a resumed session)."""
        self._contract = FailureContract(self._contract.spec, signature, identity)
        self._policy = policy

    # -- candidates --------------------------------------------------------------------------

    def cached(self, tree: Tree) -> Verdict | None:
        """The cached verdict of ``tree``, if any (a rejection awaiting its retest is not)."""
        return self._cache.get(tree.digest)

    def evaluate(
        self,
        tree: Tree,
        phase: str,
        label: str,
        cancel: threading.Event | None = None,
        *,
        fresh: bool = False,
        lane: Lane[bool] | None = None,
    ) -> Verdict:
        """Decide one candidate (cache first unless ``fresh``: new runs); may raise Cancelled or
        StopSearch. ``lane``: samples through slots shared with other candidates (lanes.py)."""
        hit = None if fresh else self._cache.get(tree.digest)
        if hit is not None:
            self._ledger.add_cache_hit(phase)
            return hit
        retest = tree.digest in self._cache

        def run_one(seq: int) -> bool:
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            ok = self._contract.reproduces(self.sample(tree, f"{label}.{seq}", phase=phase))
            self._ledger.add_candidate_run(ok)
            return ok

        design = self.design()
        started = time.monotonic()
        stream = lane.start(run_one) if lane is not None else None
        with stream or SampleStream(run_one, design.sample_width(self._jobs)) as samples:
            verdict = design.decide(samples)
        if verdict.saved:
            self._ledger.add_saved(phase, verdict.saved)
        verdict = replace(verdict, duration=time.monotonic() - started, retested=retest)
        return self._remember(tree, verdict)

    def design(self) -> CandidateDesign:
        """The design the next candidate is decided by (``designs.py``), and its widths."""
        return design_of(self.policy, self._spend_index)

    def _spend_index(self) -> tuple[int, float, stats.SequentialDesign]:
        with self._lock:
            index, policy = self.policy.take_index()
            self._set_policy(policy)
        alpha, design = policy.design_for(index)
        return index, alpha, design

    def _remember(self, tree: Tree, verdict: Verdict) -> Verdict:
        accept = self._hooks.accept
        if verdict.accepted and accept is not None and not accept(tree, verdict):
            verdict = replace(verdict, accepted=False, early=False)
        self._cache.put(tree.digest, verdict)
        if self._hooks.on_verdict is not None:
            self._hooks.on_verdict(tree.digest, verdict)
        return verdict

    def start_retesting(self) -> None:
        """At a flaky fixpoint: every cached rejection may be decided once more."""
        self._cache.start_retesting()

    def check_incumbent(self, tree: Tree, phase: str) -> bool:
        """Single-run mode's consistency check: the incumbent must still reproduce. At the first
        inconsistency the policy escalates (``fast`` when gated, else ``strict``) for the rest
        of the search."""
        ok = self._probe(tree, phase)
        if not ok:
            self.escalate()
        return ok

    def _probe(self, tree: Tree, phase: str) -> bool:
        """One fresh run of the incumbent; it joins the rate evidence (flaky policies)."""
        ok = self._probe_run(tree, phase)
        self._observe([ok])
        return ok

    def _probe_run(self, tree: Tree, phase: str, label: str = "incumbent") -> bool:
        """One fresh run of the incumbent, counted as a re-check: did it reproduce? A wave's
        runs are labelled by their place in it (``incumbent#k``), as a candidate's samples
        are by their sequence number, so a sample's name never depends on thread timing."""
        outcome = self.sample(tree, label, phase=phase)
        self._ledger.add_incumbent_check()
        return self._contract.reproduces(outcome)

    def _probe_at(self, tree: Tree, phase: str, first: int, i: int) -> bool:
        return self._probe_run(tree, phase, f"incumbent#{first + i}")

    def _observe(self, outcomes: list[bool]) -> None:
        with self._lock:
            policy = self.policy.observe(outcomes)
            if policy != self._policy:
                self._set_policy(policy)

    def adopted(self, tree: Tree, verdict: Verdict | None, phase: str) -> None:
        """``tree`` is the new incumbent (decided by ``verdict``; ``None``: restored by
        backtracking). Its own runs join the rate evidence; then, while a streak of straight
        passes could shorten the screen, it is re-checked (at most ``MAX_PROBES`` runs,
        stopping at the first failure). The design says how many re-checks run at once
        (``probe_width``); they are read in the order they were started, with the same rule,
        and those after the stop are not evidence (runs made, counted as re-checks)."""
        with self._lock:
            policy = self.policy
            if verdict is not None:
                policy = policy.adopt(verdict.passes, verdict.runs)
            if policy != self._policy:
                self._set_policy(policy)
        width, probes = self.design().probe_width(self._jobs), 0
        while probes < MAX_PROBES and self.policy.probe_wanted():
            wave = min(width, MAX_PROBES - probes)
            outcomes = map_samples(partial(self._probe_at, tree, phase, probes), wave, wave)
            for ok in outcomes:
                if probes and not self.policy.probe_wanted():
                    return
                probes += 1
                self._observe([ok])
                if not ok:
                    return

    def escalate(self) -> bool:
        """Leave single-run mode (the failure is flaky): the exact design from now on, same θ,
        single-run verdicts dropped (no evidence under it). Whether the policy changed."""
        with self._lock:
            policy = self.policy.escalate(self._config)
            changed = policy != self._policy
            if changed:
                self._set_policy(policy)
        if changed:
            self._cache.clear()
        return changed

    def revoke(self, trees: list[Tree], reason: str) -> None:
        """Backtracking: these trees are no longer trusted; cache (and record) a rejection
        without new evidence so the search does not adopt them again from the cache."""
        mode, confidence = self.policy.mode, self.policy.confidence
        for tree in trees:
            self._remember(tree, Verdict(False, 0, 0, mode, confidence, reason))

    # -- final validation --------------------------------------------------------------------

    def final_validation(
        self,
        tree: Tree,
        runs: int,
        jobs: int | None = None,
        outcomes: list[Outcome] | None = None,
        *,
        alpha: float | None = None,
    ) -> FinalSample:
        """The final test's runs of ``tree``: up to ``runs`` fresh runs (``outcomes``: all of
        them, taken early by the prefetch). When the policy curtails it (ReproMin chose the
        runs, ``policy.final_curtailed``) no run starts once the exact test at ``alpha`` has a
        certain outcome (``stats.CurtailedTest``); runs in flight then still finish and count.
        The recorded counts are the runs made."""
        if runs == 0:
            return FinalSample(0, 0, None, 0, False)
        if outcomes is None:
            policy = self.policy
            test = None
            if alpha is not None and policy.final_curtailed(self._config.final_runs):
                test = stats.CurtailedTest(policy.theta, alpha, runs)
            tally = _GateTally(test)

            def one(i: int) -> Outcome | None:
                if tally.decided():
                    return None
                outcome = self.sample(tree, f"final-{i}", phase=None, budgeted=False)
                tally.record(self._contract.reproduces(outcome))
                return outcome

            ran = map_samples(one, runs, jobs or self._jobs)
            outcomes = [o for o in ran if o is not None]
        verdicts = [self._contract.reproduces(o) for o in outcomes]
        exit_code = next((o.exit_code for o, v in zip(outcomes, verdicts, strict=True) if v), None)
        if exit_code is None:
            exit_code = outcomes[0].exit_code
        return FinalSample(sum(verdicts), len(outcomes), exit_code, runs, len(outcomes) < runs)

    def planned_final_runs(self, alpha: float | None = None) -> int:
        """The final test's runs (at most, when it stops once certain) at level ``alpha``,
        the next payload gate's by default."""
        return self.policy.final_runs(self._config.final_runs, alpha)

    def take_gate(self) -> tuple[int, float]:
        """The next final-test (payload gate) index and its level, persisted before use."""
        with self._lock:
            index, policy = self.policy.take_gate()
            self._set_policy(policy)
        return index, policy.gate_alpha(index)


@dataclass(frozen=True, slots=True)
class FinalSample:
    """The final test's runs: ``passes`` of ``runs`` made, of ``planned``; ``stopped_early``:
    its outcome was certain before every planned run was made."""

    passes: int
    runs: int
    exit_code: int | None
    planned: int
    stopped_early: bool


class _GateTally:
    """The final test's running count under its stopping rule (none: every run is made)."""

    def __init__(self, test: stats.CurtailedTest | None) -> None:
        self.test = test
        self.passes = self.done = 0
        self._lock = threading.Lock()

    def record(self, passed: bool) -> None:
        with self._lock:
            self.done += 1
            self.passes += passed

    def decided(self) -> bool:
        """Is the outcome certain from the runs finished so far (runs in flight could still
        pass, so they count as runs left)?"""
        if self.test is None:
            return False
        with self._lock:
            return self.test.decide(self.passes, self.done) is not stats.Decision.CONTINUE


class _Curtailment:
    """The baseline's running count: is its rejection already certain? ``runs`` is the cap,
    ``needed`` the fewest passes whose lower bound at the cap reaches the rate; ``first`` and
    ``first_needed`` the same for the first look, whose rejection also ends a baseline that
    has not matched at all (``stats.first_misses``)."""

    def __init__(self, first: int, first_needed: int, runs: int, needed: int) -> None:
        self.first, self.first_needed = first, first_needed
        self.runs, self.needed = runs, needed
        self.matched = self.done = 0
        self._lock = threading.Lock()

    def record(self, matched: bool) -> None:
        with self._lock:
            self.done += 1
            self.matched += matched

    def certain(self) -> bool:
        """Even if every run not yet finished matched, too few would (runs in flight count):
        at the cap, or -- nothing matched yet -- at the first look."""
        with self._lock:
            if self.matched + (self.runs - self.done) < self.needed:
                return True
            first_left = max(0, self.first - self.done)
            return self.matched == 0 and first_left < self.first_needed <= self.first


def _shifted(fn: Callable[[int], Outcome | None], start: int) -> Callable[[int], Outcome | None]:
    """``fn`` numbering from ``start`` (a baseline block's samples continue the labels)."""
    return lambda i: fn(start + i)


def _baseline_hint(outcomes: list[Outcome]) -> str:
    timeouts = sum(o.timed_out for o in outcomes)
    if timeouts:
        return f" ({timeouts} of {len(outcomes)} runs timed out; raise --timeout)"
    return f" (last exit code {outcomes[-1].exit_code})" if outcomes else ""
