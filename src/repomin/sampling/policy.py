"""Sampling: the user's knobs (:class:`SamplingConfig`) and the policy learnt from them once.

Owns :class:`Sampling` (the policy names, an enum), :class:`SamplingConfig` (what the user asked
for) and :class:`SamplingPolicy` (frozen): learnt once from the baseline, it carries the
candidate threshold θ, the design parameters (failure budget, screen, cap), the family counter,
the race/sample widths for a given ``jobs`` and the holdout's default p0. Changing anything
(taking a family index, escalating from ``single`` to ``strict``) returns a *new* policy; the
oracle swaps its policy under its lock, and the session stores ``to_json()`` so a resumed search
decides with the same parameters. The statistics are described in ``docs/statistics.md``.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from typing import Any

from repomin.errors import SessionError, UsageError
from repomin.sampling import stats
from repomin.sampling.rate_evidence import RateEvidence, screen_for


class Sampling(enum.StrEnum):
    """``--sampling``: ``auto`` is resolved at the baseline into one of the other three."""

    AUTO = "auto"
    SINGLE = "single"
    FAST = "fast"
    STRICT = "strict"


SAMPLING_MODES = tuple(m.value for m in Sampling)
#: Family index and power at which the failure budget is sized. A budget sized for index 1
#: loses power as indexes grow; every rejected-but-alive candidate then consumes an index and
#: lowers the power further (measured: 13,572 runs instead of 930 on the same flaky case).
POWER_INDEX = 50
POWER = 0.95
FAILURE_BUDGETS = (2, 3, 4, 6, 8, 12, 16, 24, 32)
#: Under the payload gate the search's per-candidate level and the screen's power are cost
#: knobs, not the guarantee (the gate bounds the exported payload's error by α whatever the
#: search decided). Measured on a 500-file case at p = 0.6 (docs/statistics.md): level 0.05 and
#: power 0.9 cost 0.73x the runs of the strict search; 0.3 and 0.7 cost 0.48x, same payload.
GATED_SEARCH_ALPHA = 0.3
GATED_SCREEN_POWER = 0.7
SCREEN_POWER = 0.9
#: Version of :meth:`SamplingPolicy.to_json` records (sessions refuse other versions).
POLICY_RECORD = 3
#: Most payload gates (final validations) of one reduction; each failed gate backtracks.
MAX_GATES = 6
#: The adaptive baseline (docs/statistics.md §A4): after ``--baseline-runs`` runs, while the
#: failure showed but the lower bound is below ``--min-baseline-rate``, BASELINE_BLOCK more
#: runs and another look, up to BASELINE_CAP runs in all (or ``--baseline-runs`` if larger).
BASELINE_BLOCK = 20
BASELINE_CAP = 160
#: Final runs ReproMin chooses (docs/statistics.md §2a): 10 for a deterministic baseline; for a
#: flaky one the fewest runs whose exact test passes with probability >= GATE_POWER at the
#: baseline's GATE_SIZING_CONFIDENCE lower bound (at most MAX_FINAL_RUNS), else FLAKY_FINAL_RUNS.
DETERMINISTIC_FINAL_RUNS = 10
FLAKY_FINAL_RUNS = 50
GATE_POWER = 0.95
GATE_SIZING_CONFIDENCE = 0.8
MAX_FINAL_RUNS = 400
#: The power, at the rate a failed payload gate observed, of the second test of the same tree
#: that ReproMin runs before it backtracks (``second_test_runs``).
SECOND_TEST_POWER = 0.8
#: Only a failed gate up to this index (the reduction's first) gets a second test: the others
#: are kept for the searches after backtracking (an index a kill cut is burnt, so a reduction
#: killed and resumed again and again can reach MAX_GATES, and then exports its last tree with
#: the gate failed; docs/statistics.md §2b).
SECOND_TEST_LAST_GATE = 1


@dataclass(frozen=True, slots=True)
class SamplingConfig:
    """What the user asked for (validated here, once)."""

    confidence: float = 0.95
    baseline_runs: int = 20
    candidate_runs: int = 60  # the CLI default (README, --candidate-runs)
    final_runs: int | None = None  # None: 10 for deterministic baselines, 50 for flaky
    min_baseline_rate: float = 0.1
    min_candidate_rate: float | None = None
    mode: Sampling = Sampling.AUTO
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
        object.__setattr__(self, "mode", Sampling(self.mode))
        self._check_final_runs()

    def _check_final_runs(self) -> None:
        """An explicit ``--final-runs`` the payload gate can never pass is bad input: even an
        all-pass final sample has p-value θ^n, and θ is at most ``min_candidate_rate`` or half
        the lower bound of an all-pass baseline."""
        n = self.final_runs
        if self.mode is not Sampling.AUTO or not n or self.spending not in stats.SPENDING_RULES:
            return
        # The all-pass Clopper-Pearson lower bound in closed form (Beta(n, 1).ppf(q) = q^(1/n)):
        # option parsing must not wait for scipy, which ``repomin reduce`` imports meanwhile.
        # An all-pass baseline stops at the first look whose bound reaches the rate (§A4).
        looks = self.baseline_looks
        runs = next(
            (n for n in looks if self.alpha ** (1.0 / n) >= self.min_baseline_rate), looks[-1]
        )
        best = self.alpha ** (1.0 / runs)
        theta = self.min_candidate_rate or max(best / 2, 1e-3)
        first = stats.spend_alpha(self.alpha, 1, self.spending)
        if theta**n > first:
            need = math.ceil(math.log(first) / math.log(theta))
            raise UsageError(
                f"--final-runs {n} can never pass the payload gate: even {n}/{n} runs give "
                f"p = {theta:.3g}^{n} > {first:.3g} at θ = {theta:.3g}; use --final-runs {need} "
                "or more (or leave it at its default)"
            )

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def baseline_looks(self) -> tuple[int, ...]:
        """Run counts at which the baseline looks at its lower bound (the last is its cap)."""
        return stats.baseline_looks(self.baseline_runs, BASELINE_BLOCK, BASELINE_CAP)


@dataclass(frozen=True, slots=True)
class SamplingPolicy:
    """How the oracle decides one candidate; learnt once from the baseline (see module doc)."""

    mode: Sampling  # never AUTO
    requested: Sampling
    theta: float
    confidence: float
    spending: str
    failure_budget: int | None
    screen_runs: int
    deterministic: bool
    candidate_runs: int
    holdout_p0: float
    family: int = 0  # family indexes taken so far
    switches: int = 0  # single -> fast/strict escalations
    gated: bool = False  # the exported payload must pass an exact test at a spent level
    gates: int = 0  # payload-gate indexes taken so far
    rate: RateEvidence | None = None  # the incumbent's rate evidence (flaky baselines)
    budget_configured: bool = False  # --failure-budget given: never re-sized
    #: the rate the final runs are sized for: the baseline's lower bound at
    #: GATE_SIZING_CONFIDENCE (flaky baselines; None: deterministic, or an older record)
    gate_rate: float | None = None

    # -- learning ----------------------------------------------------------------------------

    @classmethod
    def learn(cls, config: SamplingConfig, passes: int, runs: int, lower: float) -> SamplingPolicy:
        """The policy for a baseline of ``passes``/``runs`` with lower bound ``lower``."""
        deterministic = passes == runs
        gated = config.mode is Sampling.AUTO
        mode = config.mode
        if gated:  # payload gate: cheap search decisions, the exported tree's test spends α
            mode = Sampling.SINGLE if deterministic else Sampling.FAST
        theta = config.min_candidate_rate or max(lower / 2, 1e-3)
        policy = cls(
            mode=mode,
            requested=config.mode,
            theta=theta,
            confidence=config.confidence,
            spending=config.spending,
            failure_budget=0,
            screen_runs=1,
            deterministic=deterministic,
            candidate_runs=config.candidate_runs,
            holdout_p0=theta,
            gated=gated,
            rate=None if deterministic else RateEvidence(passes / runs).add_counts(passes, runs),
            budget_configured=config.failure_budget is not None,
            gate_rate=(
                None if deterministic else stats.lower_bound(passes, runs, GATE_SIZING_CONFIDENCE)
            ),
        )
        if deterministic:
            return replace(policy, failure_budget=policy._failure_budget(config.failure_budget))
        return policy._sized(config.failure_budget)

    def _sized(self, configured: int | None = None) -> SamplingPolicy:
        """Screen and failure budget re-sized from the rate evidence (the configured F kept)."""
        # sizing for rates at or below θ is pointless: such candidates are bad anyway
        rate = max(self.rate.estimate(), self.theta) if self.rate is not None else 1.0
        screen = self._screen_runs(rate)
        sized = replace(self, screen_runs=screen)
        if self.budget_configured:
            budget = self.failure_budget if configured is None else configured
        else:
            budget = sized._failure_budget(None, rate)
        return replace(sized, failure_budget=budget)

    def observe(self, outcomes: list[bool]) -> SamplingPolicy:
        """The policy after fresh samples of the incumbent (re-sized; unchanged without rate
        evidence, i.e. for a deterministic baseline)."""
        if self.rate is None or not outcomes:
            return self
        return replace(self, rate=self.rate.add(outcomes))._sized()

    def adopt(self, passes: int, runs: int) -> SamplingPolicy:
        """A new incumbent decided on ``passes``/``runs``: its own runs join the evidence."""
        if self.rate is None or self.single:
            return self
        return replace(self, rate=self.rate.add_counts(passes, runs))._sized()

    @property
    def screen_power(self) -> float:
        return GATED_SCREEN_POWER if self.gated else SCREEN_POWER

    def probe_wanted(self) -> bool:
        """Would re-checks of the incumbent be worth taking now (they could shorten the
        screen)? Only for flaky, non-single policies."""
        if self.rate is None or self.single:
            return False
        return self.rate.probes_worth_taking(self.screen_power, self.theta)

    def _failure_budget(self, configured: int | None, rate: float = 1.0) -> int | None:
        """Zero for deterministic failures (or the configured F). For flaky ones the smallest F
        whose acceptance probability for a candidate slightly worse than the estimate (0.9 x
        its rate) is >= POWER (given its screen passes: at family index POWER_INDEX for the
        screened family-wise test, times the screen's pass probability for the per-candidate
        one); ``None`` (curtailment only, the most powerful design for the cap) when none."""
        if self.deterministic:
            return 0
        if configured is not None:
            return configured
        worse = 0.9 * rate
        target = POWER
        if not self.family_wise:
            target *= 1.0 - (1.0 - worse) ** self.screen_limit
        alpha = self.alpha_for(POWER_INDEX)
        for f in FAILURE_BUDGETS:
            if self._design(alpha, f).acceptance_probability(worse) >= target:
                return f
        return None

    def _screen_runs(self, rate: float) -> int:
        """Runs of the screening super-run: enough that a candidate as good as the estimate
        passes the screen with probability >= 0.9 (0.7 under the payload gate), <= 8."""
        if self.deterministic or self.mode is Sampling.SINGLE:
            return 1
        return screen_for(rate, self.screen_power)

    # -- designs -----------------------------------------------------------------------------

    @property
    def alpha(self) -> float:
        return 1.0 - self.confidence

    @property
    def family_wise(self) -> bool:
        """Does each candidate spend a share of α (``strict``)?"""
        return self.mode is Sampling.STRICT

    @property
    def single(self) -> bool:
        return self.mode is Sampling.SINGLE

    @property
    def flaky(self) -> bool:
        """Rejections are evidence, not proof: the failure does not reproduce every time."""
        return not self.single and self.failure_budget != 0

    @property
    def error_control(self) -> str:
        """What the error bound α covers (``execution.error_control``, docs/statistics.md)."""
        if self.gated:
            return "payload-gate"
        return {Sampling.STRICT: "family-wise", Sampling.FAST: "per-candidate"}.get(
            self.mode, "none"
        )

    @property
    def screen_limit(self) -> int:
        return 1 if self.single else self.screen_runs

    def alpha_for(self, index: int) -> float:
        """Level of the candidate test at family ``index``: spent (strict), the search level
        under the payload gate (a cost knob: the gate carries the claim), else α."""
        if self.family_wise:
            return stats.spend_alpha(self.alpha, index, self.spending)
        if self.gated:
            return max(self.alpha, GATED_SEARCH_ALPHA)
        return self.alpha

    def design_for(self, index: int) -> tuple[float, stats.SequentialDesign]:
        alpha = self.alpha_for(index)
        return alpha, self._design(alpha, self.failure_budget)

    def _design(self, alpha: float, f: int | None) -> stats.SequentialDesign:
        """Family-wise: screened (conditional on a passing screen, so only candidates that
        passed it spend an index). Per candidate: unscreened, with the screen as a futility
        rule inside the design -- every run counts and the size is exact with the screen."""
        screened = self.family_wise or self.single
        if f == 0 and screened:
            return stats.zero_failure_design(self.theta, alpha, True)
        # The cap must leave room for an all-pass path to reach size <= alpha at deep indexes.
        cap = max(self.candidate_runs, stats.zero_failure_runs(self.theta, alpha) + 1 + (f or 0))
        if screened:
            return stats.design(self.theta, alpha, cap, f, True)
        return stats.design(self.theta, alpha, cap, f, False, self.screen_limit)

    def miss_rate(self) -> float:
        """The probability that the next candidate's test rejects a candidate as good as the
        incumbent, at the baseline's rate: 0 for a deterministic or single-run policy. What a
        rejection says to a search that learns from it (``Problem.miss_rate``); it sizes
        nothing here and changes no test's size. The baseline's runs are the only unbiased
        sample of the rate the search has: the incumbent chain's window fills with the passes
        of accepted verdicts (a one-run screen accepts only 1/1), so its plain rate drifts to 1
        whatever the failure does."""
        if self.rate is None or self.single or self.deterministic:
            return 0.0
        rate = self.rate.base
        _, design = self.design_for(self.family + 1)
        accepted = design.acceptance_probability(rate)
        if self.family_wise:  # screened: the acceptance is given a passing screen
            accepted *= 1.0 - (1.0 - rate) ** self.screen_limit
        return min(1.0, max(0.0, 1.0 - accepted))

    def take_index(self) -> tuple[int, SamplingPolicy]:
        """The next family index and the policy that has spent it."""
        index = self.family + 1
        return index, replace(self, family=index)

    # -- changes -----------------------------------------------------------------------------

    def escalate(self, config: SamplingConfig) -> SamplingPolicy:
        """Single-run mode's inconsistency (the failure is flaky after all): the exact sequential
        design from now on -- ``fast`` under the payload gate, ``strict`` otherwise -- with the
        configured failure budget (2 when none was given; an explicit 0 stays 0). θ never
        changes after the baseline. Other modes are returned unchanged."""
        if not self.single:
            return self
        budget = 2 if config.failure_budget is None else config.failure_budget
        return replace(
            self,
            mode=Sampling.FAST if self.gated else Sampling.STRICT,
            failure_budget=budget,
            switches=self.switches + 1,
        )

    def take_gate(self) -> tuple[int, SamplingPolicy]:
        """The next payload-gate index and the policy that has spent it."""
        index = self.gates + 1
        return index, replace(self, gates=index)

    def gate_alpha(self, index: int) -> float:
        """Level of the final test number ``index``: spent over gates when gated (so the
        exported payload's error is <= α however often a failed gate backtracks), else α."""
        if self.gated:
            return stats.spend_alpha(self.alpha, index, self.spending)
        return self.alpha

    # -- final validation --------------------------------------------------------------------

    def final_runs(self, configured: int | None, alpha: float | None = None) -> int:
        """``--final-runs``, or ReproMin's choice for the test at level ``alpha`` (default: the
        next gate's): 10 for a deterministic baseline; for a flaky one the fewest runs whose
        exact test passes with probability >= ``GATE_POWER`` at ``gate_rate`` (the baseline's
        80% lower bound, so at least as often at its point estimate), else at the point
        estimate, at most ``MAX_FINAL_RUNS``; 50 when neither can reach it (a configured θ at
        or above the estimate), after an escalation from a deterministic baseline (no rate
        evidence) and for policy records that predate the sizing."""
        if configured is not None:
            return configured
        if self.deterministic and not self.switches:
            return DETERMINISTIC_FINAL_RUNS
        if self.gate_rate is None or self.rate is None:
            return FLAKY_FINAL_RUNS
        level = self.gate_alpha(self.gates + 1) if alpha is None else alpha
        for rate in (self.gate_rate, self.rate.base):
            runs = stats.sized_runs(self.theta, level, rate, GATE_POWER, MAX_FINAL_RUNS)
            if runs is not None:
                return runs
        return FLAKY_FINAL_RUNS

    def second_test_runs(self, configured: int | None, passes: int, runs: int) -> int | None:
        """The n of a second final test of a tree whose test just failed with ``passes`` of
        ``runs``, or None (backtrack instead): only when ReproMin chose the runs of a flaky
        failure's gate, after the reduction's first gate (``SECOND_TEST_LAST_GATE``: never
        twice), and the failed test's own rate is above θ -- the payload then likely
        reproduces, only less often than the baseline the first test was sized from. n is the
        fewest runs whose exact test at the next gate's level passes with probability >=
        ``SECOND_TEST_POWER`` at that rate, at most ``MAX_FINAL_RUNS`` (docs/statistics.md,
        "A second test of the same tree")."""
        if configured is not None or not self.gated or self.rate is None or runs == 0:
            return None
        if self.gates > SECOND_TEST_LAST_GATE:
            return None  # keep the gates left for backtracking (kills burn gates too)
        rate = passes / runs
        if rate <= self.theta:
            return None
        level = self.gate_alpha(self.gates + 1)
        return stats.sized_runs(self.theta, level, rate, SECOND_TEST_POWER, MAX_FINAL_RUNS)

    def final_curtailed(self, configured: int | None) -> bool:
        """Does the final test stop once its outcome is certain (``stats.CurtailedTest``)?
        When ReproMin chose a flaky failure's runs; never for an explicit ``--final-runs`` (the
        user asked for that many) nor for a deterministic baseline's 10 (a deterministic
        payload would save 2 of them, and those 10 are what the search starts in idle slots)."""
        return configured is None and not (self.deterministic and not self.switches)

    def final_passed(self, passes: int, runs: int, alpha: float) -> bool:
        """Does the final sample support ``p > theta`` at level ``alpha``? (false after 0 runs)"""
        return stats.final_test_passed(passes, runs, self.theta, alpha)

    # -- records -----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "record": POLICY_RECORD,
            "mode": self.mode.value,
            "requested": self.requested.value,
            "theta": self.theta,
            "confidence": self.confidence,
            "spending": self.spending,
            "failure_budget": self.failure_budget,
            "screen_runs": self.screen_runs,
            "deterministic": self.deterministic,
            "candidate_runs": self.candidate_runs,
            "holdout_p0": self.holdout_p0,
            "family": self.family,
            "switches": self.switches,
            "gated": self.gated,
            "gates": self.gates,
            "rate": None if self.rate is None else self.rate.to_json(),
            "budget_configured": self.budget_configured,
            "gate_rate": self.gate_rate,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SamplingPolicy:
        if data.get("record") != POLICY_RECORD:
            raise SessionError(
                f"session policy record {data.get('record')!r} is not version {POLICY_RECORD}; "
                "start a new session"
            )
        return cls(
            mode=Sampling(data["mode"]),
            requested=Sampling(data["requested"]),
            theta=float(data["theta"]),
            confidence=float(data["confidence"]),
            spending=str(data["spending"]),
            failure_budget=data["failure_budget"],
            screen_runs=int(data["screen_runs"]),
            deterministic=bool(data["deterministic"]),
            candidate_runs=int(data["candidate_runs"]),
            holdout_p0=float(data["holdout_p0"]),
            family=int(data["family"]),
            switches=int(data["switches"]),
            gated=bool(data["gated"]),
            gates=int(data["gates"]),
            rate=None if data["rate"] is None else RateEvidence.from_json(data["rate"]),
            budget_configured=bool(data["budget_configured"]),
            gate_rate=None if data.get("gate_rate") is None else float(data["gate_rate"]),
        )
