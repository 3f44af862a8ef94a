"""The oracle: the one door between proposed trees and the runner.

Every candidate goes through :meth:`Oracle.evaluate`: content cache by tree digest, then the
sampling policy (see STATISTICS.md and ARCHITECTURE.md), then a :class:`Verdict` carrying its
evidence. Policies:

* ``strict``  -- screen-then-spend: one screening run; a failed screen rejects and spends
  nothing; a passing candidate takes the next family index ``j`` and continues with an exact
  sequential test whose size given the screen is at most ``alpha_j = spend(alpha, j)``.
* ``fast``    -- the same test with a constant per-candidate ``alpha`` (no family-wise claim;
  final runs and holdout carry the claim).
* ``single``  -- one run per candidate, ``P(accept | p) = p``: labelled as giving no
  per-candidate guarantee; the reducer re-checks the incumbent periodically and the oracle
  switches to ``strict`` at the first inconsistency.

Deterministic baselines (every baseline run reproduced) use the zero-failure design (``F = 0``);
flaky ones the calibrated sequential design with a failure budget. Timeouts, resource
exhaustion and infrastructure errors never count as a reproduction; infrastructure errors are
retried a bounded number of times and never become a verdict.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from repomin import stats
from repomin.accounting import Ledger
from repomin.errors import BaselineError, InfrastructureError, UsageError
from repomin.failure.contract import FailureContract
from repomin.parallel import SampleStream, map_samples
from repomin.runners.base import Outcome, Runner, RunRequest
from repomin.tree import Tree

SAMPLING_MODES = ("auto", "single", "fast", "strict")
#: Family index and power at which the failure budget is sized. A budget sized for index 1
#: loses power as indexes grow; every rejected-but-alive candidate then consumes an index and
#: lowers the power further (measured: 13,572 runs instead of 930 on the same flaky case).
POWER_INDEX = 50
POWER = 0.95
FAILURE_BUDGETS = (2, 3, 4, 6, 8, 12, 16, 24, 32)
INFRA_RETRIES = 3


class StopSearch(Exception):
    """Raised inside the search when a budget is exhausted or the user interrupted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Cancelled(Exception):
    """A speculative candidate lost the race; its evaluation stops between samples."""


@dataclass(frozen=True, slots=True)
class SamplingConfig:
    confidence: float = 0.95
    baseline_runs: int = 20
    candidate_runs: int = 100
    final_runs: int | None = None  # None: 10 for deterministic baselines, 50 for flaky
    min_baseline_rate: float = 0.1
    min_candidate_rate: float | None = None
    mode: str = "auto"
    spending: str = "basel"
    failure_budget: int | None = None
    incumbent_check_every: int = 8

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1:
            raise UsageError(f"--confidence {self.confidence} must be in [0.5, 1); e.g. 0.95")
        if self.baseline_runs < 1 or self.candidate_runs < 1 or (self.final_runs or 0) < 0:
            raise UsageError("--baseline-runs and --candidate-runs must be >= 1, --final-runs >= 0")
        if not 0 <= self.min_baseline_rate < 1:
            raise UsageError(f"--min-baseline-rate {self.min_baseline_rate} must be in [0, 1)")
        if self.min_candidate_rate is not None and not 0 < self.min_candidate_rate < 1:
            raise UsageError(f"--min-candidate-rate {self.min_candidate_rate} must be in (0, 1)")
        if self.mode not in SAMPLING_MODES:
            raise UsageError(f"--sampling {self.mode!r} must be one of {', '.join(SAMPLING_MODES)}")

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence


@dataclass(frozen=True, slots=True)
class Budget:
    max_runs: int | None = None
    max_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision on one tree with its evidence."""

    accepted: bool
    passes: int
    runs: int
    policy: str
    design: str | None = None
    family_index: int | None = None
    family_alpha: float | None = None
    family_confidence: float | None = None
    early: bool = False
    saved: int = 0
    duration: float = 0.0
    retested: bool = False

    def evidence(self, confidence: float) -> dict[str, Any]:
        """The event fields the spec lists (rates and bounds derived from the counts)."""
        fields: dict[str, Any] = {
            "oracle_passes": self.passes,
            "oracle_runs": self.runs,
            "oracle_rate": self.passes / self.runs if self.runs else None,
            "lower_bound": stats.lower_bound(self.passes, self.runs, confidence)
            if self.runs
            else None,
            "upper_bound": stats.upper_bound(self.passes, self.runs, confidence)
            if self.runs
            else None,
            "bound_confidence": confidence if self.runs else None,
            "duration_seconds": round(self.duration, 6),
            "sampling_policy": self.policy,
            "design": self.design,
            "early_acceptance": self.early if self.accepted else None,
        }
        if self.family_index is not None:
            fields["candidate_family_index"] = self.family_index
            fields["candidate_family_alpha"] = self.family_alpha
            fields["candidate_family_confidence"] = self.family_confidence
        return fields


@dataclass(frozen=True, slots=True)
class Baseline:
    passes: int
    runs: int
    lower: float
    upper: float
    exit_code: int | None
    timeouts: int
    outcomes: tuple[Outcome, ...] = field(repr=False, default=())

    @property
    def rate(self) -> float:
        return self.passes / self.runs if self.runs else 0.0

    @property
    def deterministic(self) -> bool:
        return self.passes == self.runs


class Oracle:
    """Decides whether a tree reproduces the failure; counts every sample it spends."""

    def __init__(
        self,
        *,
        runner: Runner,
        contract: FailureContract,
        command: str,
        env: Mapping[str, str],
        timeout: float,
        config: SamplingConfig,
        ledger: Ledger,
        budget: Budget = Budget(),
        use_cache: bool = True,
        stop: threading.Event | None = None,
    ) -> None:
        self.runner = runner
        self.contract = contract
        self.command = command
        self.env = dict(env)
        self.timeout = timeout
        self.config = config
        self.ledger = ledger
        self.budget = budget
        self.use_cache = use_cache
        self.stop = stop or threading.Event()
        self.cache: dict[str, Verdict] = {}
        self.policy = "strict"
        self.theta = 0.5
        self.failure_budget: int | None = None
        self.deterministic = False
        self.samples = 0
        self.candidate_runs = 0
        self.candidate_passes = 0
        self.inconsistencies = 0
        self.incumbent_checks = 0
        self.screen_runs = 1
        self.retest_rejections = False
        #: Samples of one candidate run concurrently (flaky policies; see ``Reduction``).
        self.sample_jobs = 1
        self._family = 0
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._sample_no = 0
        self.on_sample: Callable[[Outcome], None] | None = None
        self.on_verdict: Callable[[str, Verdict], None] | None = None
        self.inflight = 0

    # -- sampling ----------------------------------------------------------------------------

    def check_budget(self) -> None:
        if self.stop.is_set():
            raise StopSearch("interrupted")
        b = self.budget
        if b.max_runs is not None and self.samples >= b.max_runs:
            raise StopSearch("max_runs")
        if b.max_seconds is not None and time.monotonic() - self._started >= b.max_seconds:
            raise StopSearch("max_time")

    def sample(
        self, tree: Tree, label: str, *, phase: str | None, budgeted: bool = True
    ) -> Outcome:
        """One sample on a fresh copy of ``tree``; infrastructure errors retried, then raised."""
        if budgeted:
            self.check_budget()
        elif self.stop.is_set():
            raise StopSearch("interrupted")
        with self._lock:
            self._sample_no += 1
            sample_id = f"{label}-{self._sample_no}"
        request = RunRequest(self.command, self.env, self.timeout, sample_id)
        for attempt in range(INFRA_RETRIES):
            with self._lock:
                self.inflight += 1
            try:
                outcome = self.runner.run(tree, request)
            finally:
                with self._lock:
                    self.inflight -= 1
            if outcome.infrastructure_error is None:
                break
            if self.stop.is_set():
                raise StopSearch("interrupted")
            time.sleep(0.2 * (attempt + 1))
        else:
            raise InfrastructureError(
                f"the {self.runner.backend} backend failed {INFRA_RETRIES} times in a row "
                f"({outcome.infrastructure_error}); check the engine and rerun with --resume"
            )
        if self.stop.is_set() and (outcome.timed_out or outcome.exit_code is None):
            raise StopSearch("interrupted")
        with self._lock:
            self.samples += 1
        if phase is not None:
            self.ledger.add_samples(phase)
        if self.on_sample is not None:
            self.on_sample(outcome)
        return outcome

    # -- baseline ----------------------------------------------------------------------------

    def run_baseline(self, tree: Tree, jobs: int = 1) -> Baseline:
        """Run the baseline, pin the signature, fix theta and the policy. Raises BaselineError."""
        n = self.config.baseline_runs
        outcomes = map_samples(
            lambda i: self.sample(tree, f"baseline-{i}", phase=None, budgeted=False), n, jobs
        )
        self.contract = self.contract.learn(list(outcomes))
        verdicts = [self.contract.reproduces(o) for o in outcomes]
        passes = sum(verdicts)
        timeouts = sum(o.timed_out for o in outcomes)
        c = self.config.confidence
        lower = stats.lower_bound(passes, n, c)
        exit_code = next((o.exit_code for o, v in zip(outcomes, verdicts, strict=True) if v), None)
        if exit_code is None and outcomes:
            exit_code = outcomes[0].exit_code
        baseline = Baseline(
            passes, n, lower, stats.upper_bound(passes, n, c), exit_code, timeouts, tuple(outcomes)
        )
        if passes == 0:
            hint = (
                f" ({timeouts} of {n} runs timed out; raise --timeout)"
                if timeouts
                else f" (last exit code {outcomes[-1].exit_code})"
            )
            raise BaselineError(
                f"the command did not reproduce the failure in any of {n} baseline runs{hint}; "
                "check --command, --match/--exit-code and --env"
            )
        if lower < self.config.min_baseline_rate:
            raise BaselineError(
                f"baseline reproduced {passes}/{n} runs, lower bound {lower:.3f} at confidence "
                f"{c} is below --min-baseline-rate {self.config.min_baseline_rate}; raise "
                "--baseline-runs or lower --min-baseline-rate"
            )
        self.deterministic = baseline.deterministic
        self.theta = self.config.min_candidate_rate or max(lower / 2, 1e-3)
        if self.config.mode == "auto":
            self.policy = "single" if self.deterministic else "strict"
        else:
            self.policy = self.config.mode
        self.failure_budget = self._choose_failure_budget(baseline)
        self.screen_runs = self._choose_screen_runs(baseline)
        return baseline

    def _choose_failure_budget(self, baseline: Baseline) -> int | None:
        """Zero for deterministic failures (or the configured F). For flaky ones the smallest F
        whose conditional acceptance probability is >= POWER at family index POWER_INDEX for a
        candidate slightly worse than the baseline (0.9 x its rate); ``None`` (curtailment only,
        the most powerful design for the cap) when no budget reaches that power."""
        if self.deterministic:
            return 0
        if self.config.failure_budget is not None:
            return self.config.failure_budget
        alpha = self._alpha_for(POWER_INDEX)
        target = 0.9 * baseline.rate
        for f in FAILURE_BUDGETS:
            if self._design(alpha, f).acceptance_probability(target) >= POWER:
                return f
        return None

    def _choose_screen_runs(self, baseline: Baseline) -> int:
        """Runs of the screening super-run: enough that a candidate as good as the baseline
        passes the screen with probability >= 0.9 (STATISTICS.md §4 amplification), at most 8."""
        if self.deterministic or self.policy == "single":
            return 1
        miss = 1.0 - baseline.rate
        return max(1, min(8, math.ceil(math.log(0.1) / math.log(miss))))

    def _alpha_for(self, index: int) -> float:
        if self.policy == "strict":
            return stats.spend_alpha(self.config.alpha, index, self.config.spending)
        return self.config.alpha

    def _design(self, alpha: float, f: int | None) -> stats.SequentialDesign:
        if f == 0:
            return stats.zero_failure_design(self.theta, alpha, True)
        # The cap must leave room for an all-pass path to reach size <= alpha at deep indexes.
        cap = max(
            self.config.candidate_runs, stats.zero_failure_runs(self.theta, alpha) + 1 + (f or 0)
        )
        return stats.design(self.theta, alpha, cap, f, True)

    # -- candidates --------------------------------------------------------------------------

    @property
    def flaky(self) -> bool:
        """Rejections are evidence, not proof: the failure does not reproduce every time."""
        return self.policy != "single" and self.failure_budget != 0

    def cached(self, tree: Tree) -> Verdict | None:
        """A cached verdict, except a not-yet-retested rejection while retesting is on."""
        if not self.use_cache:
            return None
        hit = self.cache.get(tree.digest)
        if hit is not None and self.retest_rejections and not hit.accepted and not hit.retested:
            return None
        return hit

    def evaluate(
        self, tree: Tree, phase: str, label: str, cancel: threading.Event | None = None
    ) -> Verdict:
        """Decide one candidate (cache first). Raises Cancelled or StopSearch mid-way."""
        hit = self.cached(tree)
        if hit is not None:
            self.ledger.add_cache_hit(phase)
            return hit
        retest = tree.digest in self.cache

        def run_one() -> bool:
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            outcome = self.sample(tree, label, phase=phase)
            ok = self.contract.reproduces(outcome)
            with self._lock:
                self.candidate_runs += 1
                self.candidate_passes += ok
            return ok

        policy = self.policy
        started = time.monotonic()
        screened = 0
        screen = False
        width = 1 if policy == "single" else self.sample_jobs
        with SampleStream(run_one, width) as samples:
            while not screen and screened < (1 if policy == "single" else self.screen_runs):
                screen = samples.next()
                screened += 1
            if not screen or policy == "single":
                verdict = Verdict(
                    screen,
                    int(screen),
                    screened,
                    policy,
                    design="single-run" if policy == "single" else "screen",
                    duration=time.monotonic() - started,
                    retested=retest,
                )
                self._remember(tree, verdict)
                return verdict
            with self._lock:
                self._family += 1
                index = self._family
            alpha = self._alpha_for(index)
            design = self._design(alpha, self.failure_budget)
            # Given the screen passed, the test continues from state (1 pass, 1 run); the
            # screen's failed runs are outside the conditional test (exact given the screen).
            passes, runs = 1, 1
            while True:
                decision = design.decide(passes, runs)
                if decision is not stats.Decision.CONTINUE:
                    break
                passes += samples.next()
                runs += 1
        accepted = decision is stats.Decision.ACCEPT
        runs_spent = runs + screened - 1
        saved = max(0, design.max_runs() - runs)
        if saved:
            self.ledger.add_saved(phase, saved)
        verdict = Verdict(
            accepted,
            passes,
            runs_spent,
            policy,
            design=design.identifier(),
            family_index=index if policy == "strict" else None,
            family_alpha=alpha if policy == "strict" else None,
            family_confidence=self.config.confidence if policy == "strict" else None,
            early=accepted and runs < design.max_runs(),
            saved=saved,
            duration=time.monotonic() - started,
            retested=retest,
        )
        self._remember(tree, verdict)
        return verdict

    def _remember(self, tree: Tree, verdict: Verdict) -> None:
        if self.use_cache:
            self.cache[tree.digest] = verdict
        if self.on_verdict is not None:
            self.on_verdict(tree.digest, verdict)

    def baseline_state(self, baseline: Baseline) -> dict[str, Any]:
        """What a resumed session needs to decide exactly as this one does."""
        return {
            "passes": baseline.passes,
            "runs": baseline.runs,
            "lower": baseline.lower,
            "upper": baseline.upper,
            "exit_code": baseline.exit_code,
            "timeouts": baseline.timeouts,
            "signature": self.contract.signature,
            "theta": self.theta,
            "policy": self.policy,
            "failure_budget": self.failure_budget,
            "deterministic": self.deterministic,
            "screen_runs": self.screen_runs,
        }

    def restore_baseline(self, state: dict[str, Any]) -> Baseline:
        self.contract = FailureContract(self.contract.spec, state["signature"])
        self.theta = state["theta"]
        self.policy = state["policy"]
        self.failure_budget = state["failure_budget"]
        self.deterministic = state["deterministic"]
        self.screen_runs = state["screen_runs"]
        return Baseline(
            state["passes"],
            state["runs"],
            state["lower"],
            state["upper"],
            state["exit_code"],
            state["timeouts"],
        )

    def check_incumbent(self, tree: Tree, phase: str) -> bool:
        """Single-run mode's consistency check: the incumbent must still reproduce. At the first
        inconsistency the policy switches to strict for the rest of the search."""
        outcome = self.sample(tree, "incumbent", phase=phase)
        self.incumbent_checks += 1
        ok = self.contract.reproduces(outcome)
        if not ok:
            self.inconsistencies += 1
            self.policy = "strict"
            self.theta = self.config.min_candidate_rate or 0.5 * self.theta
            self.failure_budget = self.config.failure_budget or 2
            self.cache.clear()
        return ok

    # -- final validation --------------------------------------------------------------------

    def final_validation(self, tree: Tree, runs: int, jobs: int) -> tuple[int, int, int | None]:
        """Fixed-size validation of the accepted tree: (passes, runs, first exit code)."""
        if runs == 0:
            return 0, 0, None
        outcomes = map_samples(
            lambda i: self.sample(tree, f"final-{i}", phase=None, budgeted=False), runs, jobs
        )
        verdicts = [self.contract.reproduces(o) for o in outcomes]
        exit_code = next((o.exit_code for o, v in zip(outcomes, verdicts, strict=True) if v), None)
        if exit_code is None:
            exit_code = outcomes[0].exit_code
        return sum(verdicts), runs, exit_code

    def planned_final_runs(self) -> int:
        """``--final-runs``, or by default 10 (deterministic) / 50 (flaky: power >= 0.98 for the
        exact test of p > theta when a lucky baseline put theta at half of 0.66 and p = 0.6)."""
        if self.config.final_runs is not None:
            return self.config.final_runs
        return 10 if self.deterministic else 50

    def final_passes_test(self, passes: int, runs: int) -> bool:
        """Does the final sample support ``p > theta`` at the configured confidence?"""
        if runs == 0:
            return True
        return stats.binom_pvalue(passes, runs, self.theta) <= self.config.alpha
