"""The report's ``execution`` block and the pipeline's events, built from typed inputs.

Owns the mapping from what a reduction did (options, the learnt policy, the baseline, the
stages' records, the ledger's totals) to the report's ``execution`` fields and to the
``baseline``, ``session``, ``trace``, ``final``, ``export`` and ``holdout`` events. The pipeline
hands in frozen records; nothing here runs anything. Field meanings: ``docs/report-schema.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repomin.app.selection import Selection
from repomin.report.build import environment_fields
from repomin.report.cost import sample_basis
from repomin.runners.host import IMPLICIT_ENVIRONMENT
from repomin.sampling.accounting import Ledger
from repomin.sampling.policy import SamplingPolicy
from repomin.sampling.timeouts import FIXED, RULE, AdaptiveTimeoutRunner
from repomin.sampling.verdict import Baseline
from repomin.tree import Tree

if TYPE_CHECKING:
    from repomin.analysis.trace import TraceResult
    from repomin.app.options import ReduceOptions


#: The baseline test: looks at a growing number of runs until its one-sided Clopper–Pearson
#: lower bound reaches --min-baseline-rate, up to ``baseline_runs_cap`` (docs/statistics.md §A4).
BASELINE_POLICY = "adaptive-clopper-pearson-v1"
#: The final test: the exact binomial test of ``final_planned_runs`` runs; curtailed: stopped
#: once its outcome is certain, ``final_runs`` being the runs made (docs/statistics.md §2a).
FIXED_FINAL = "fixed-n-exact-binomial-v1"
CURTAILED_FINAL = "curtailed-exact-binomial-v1"


@dataclass(frozen=True, slots=True)
class FinalRuns:
    """The validate stage's record: fixed-size final runs of the accepted tree."""

    passes: int
    runs: int
    exit_code: int | None
    passed: bool
    duration: float
    alpha: float = 0.05  # level of the exact test (spent over payload gates when gated)
    gate: int | None = None  # payload-gate index (None: no final runs)
    planned: int | None = None  # the test's n (``runs`` are the runs made; None: = runs)
    stopped_early: bool = False  # its outcome was certain before all ``planned`` were made


@dataclass(frozen=True, slots=True)
class ExecutionInputs:
    options: ReduceOptions
    backend: Mapping[str, Any]
    selection: Selection
    baseline: Baseline
    policy: SamplingPolicy
    ledger: Ledger
    stop_reason: str
    trace_method: str
    final: FinalRuns
    semantic: Mapping[str, Any]
    wall_time: float
    search_samples: int = 0  # what --max-runs counts
    timeouts: AdaptiveTimeoutRunner | None = None


def execution_block(i: ExecutionInputs) -> dict[str, Any]:
    o, policy, ledger = i.options, i.policy, i.ledger
    return {
        **i.backend,
        "jobs": o.jobs,
        "cache_enabled": o.use_cache,
        "resumed": o.resume,
        "baseline_runs": i.baseline.runs,
        "baseline_passes": i.baseline.passes,
        "candidate_runs": ledger.candidate_runs,
        "candidate_passes": ledger.candidate_passes,
        "candidate_runs_cap": o.sampling.candidate_runs,
        "confidence": o.sampling.confidence,
        "min_baseline_rate": o.sampling.min_baseline_rate,
        "min_candidate_rate": policy.theta,
        "sampling_policy": policy.mode.value,
        "sampling_policy_requested": o.sampling.mode.value,
        "sampling_policy_switches": policy.switches,
        "family_spending": o.sampling.spending,
        "failure_budget": policy.failure_budget,
        "baseline_policy": BASELINE_POLICY,
        "baseline_runs_cap": o.sampling.baseline_looks[-1],
        "final_policy": final_policy(policy, o.sampling.final_runs),
        "reduction_strategy": o.reduction_strategy,
        "ignored_names": list(o.selection.ignored_names),
        "ignored_paths": list(o.selection.ignored_paths),
        "gitignore_enabled": o.selection.use_gitignore,
        "gitignore_files": list(i.selection.gitignore_files),
        "keep_paths": list(o.selection.keep_paths),
        "text_files": i.selection.text_files,
        "environment_names": sorted(o.env),
        **environment_fields(o.env),
        "inherited_environment_names": list(IMPLICIT_ENVIRONMENT),
        "home": o.home,
        "timeout_seconds": o.timeout,
        **timeout_fields(o.timeout, i.timeouts),
        "working_directory": "tree_root",
        **i.semantic,
        "budget_exhausted": i.stop_reason in ("max_runs", "max_time"),
        "max_runs": o.budget.max_runs,
        "max_time_seconds": o.budget.max_seconds,
        **deadline_fields(o),
        "stop_reason": i.stop_reason,
        "oracle_samples": ledger.samples,
        "holdout_requested_runs": o.holdout.runs if o.holdout else None,
        "trace": i.trace_method,
        "final_runs": i.final.runs,
        "final_passes": i.final.passes,
        "final_validation_passed": i.final.passed,
        "final_alpha": i.final.alpha,
        "final_gate_index": i.final.gate,
        "final_planned_runs": i.final.runs if i.final.planned is None else i.final.planned,
        "final_stopped_early": i.final.stopped_early,
        "payload_gates": policy.gates,
        "error_control": policy.error_control,
        "search_samples": i.search_samples,
        "event_bounds": "descriptive-clopper-pearson-v1",
        "wall_time_seconds": round(i.wall_time, 6),
        "sample_seconds": round(ledger.sample_seconds, 3),
        "sample_seconds_basis": sample_basis(ledger.sample_cpu, ledger.samples),
        "sample_wall_seconds": round(ledger.sample_wall_seconds, 3),
    }


def final_policy(policy: SamplingPolicy, configured: int | None) -> str:
    """``execution.final_policy``: the curtailed test when ReproMin chose the final runs of a
    flaky failure (``SamplingPolicy.final_curtailed``), the fixed-n test otherwise."""
    return CURTAILED_FINAL if policy.final_curtailed(configured) else FIXED_FINAL


def deadline_fields(o: ReduceOptions) -> dict[str, Any]:
    """``deadline_seconds`` (``--deadline``, or null) and ``deadline_cuts``: what it cut, in
    order (``search``: stopped before its fixpoint, ``stop_reason`` ``max_time``;
    ``final_test``: not run; ``user_shell``: fewer runs, or stopped)."""
    deadline = o.budget.deadline
    if deadline is None:
        return {"deadline_seconds": None, "deadline_cuts": []}
    return {"deadline_seconds": deadline.seconds, "deadline_cuts": list(deadline.cuts)}


def timeout_fields(user: float, timeouts: AdaptiveTimeoutRunner | None) -> dict[str, Any]:
    """``timeout_rule``, ``candidate_timeout_seconds`` and ``adaptive_timeout_retries``."""
    armed = timeouts is not None and timeouts.armed_limit is not None
    limit = timeouts.armed_limit if timeouts is not None and timeouts.armed_limit else user
    return {
        "timeout_rule": RULE if armed else FIXED,
        "candidate_timeout_seconds": limit,
        "adaptive_timeout_retries": timeouts.retries if timeouts is not None else 0,
    }


# -- events -----------------------------------------------------------------------------------


def baseline_event(
    ledger: Ledger,
    baseline: Baseline,
    policy: SamplingPolicy,
    source: Tree,
    duration: float,
    restored: bool,
) -> None:
    note = " (restored from the session)" if restored else ""
    ledger.event(
        "baseline",
        f"baseline{note}: {baseline.passes}/{baseline.runs} runs reproduced; policy "
        f"{policy.mode.value}, candidate threshold {policy.theta:.4f}",
        decision="passed",
        duration_seconds=round(duration, 6),
        files=source.file_count,
        bytes=source.byte_count,
        oracle_passes=baseline.passes,
        oracle_runs=baseline.runs,
        oracle_rate=baseline.rate,
        lower_bound=baseline.lower,
        upper_bound=baseline.upper,
        bound_confidence=policy.confidence,
        sampling_policy="fixed",
    )


def session_event(ledger: Ledger, mutations: int, decided: int, initial: Tree) -> None:
    ledger.event(
        "session",
        f"resumed session: {mutations} accepted mutations and {decided} decided trees restored",
        decision="info",
        files=initial.file_count,
        bytes=initial.byte_count,
    )


def trace_event(ledger: Ledger, result: TraceResult, tree: Tree) -> None:
    verdict = ""
    if result.usable and result.reproduced is not None:
        verdict = "; it " + ("reproduced" if result.reproduced else "did not reproduce")
        verdict += " the failure"
    ledger.event(
        "trace",
        f"traced run: {result.reason}{verdict}",
        decision="info",
        duration_seconds=round(result.duration, 6),
        files=tree.file_count,
        bytes=tree.byte_count,
    )


def escalation_event(ledger: Ledger, policy: SamplingPolicy, tree: Tree) -> None:
    ledger.event(
        "final",
        f"final validation failed under single-run sampling: the failure is flaky; "
        f"{policy.mode.value} sequential design from now on (threshold {policy.theta:.4f} "
        "unchanged), backtracking",
        decision="inconsistency",
        files=tree.file_count,
        bytes=tree.byte_count,
    )


def final_event(ledger: Ledger, final: FinalRuns, tree: Tree) -> None:
    gate = f" (payload gate {final.gate}, alpha {final.alpha:.3g})" if final.gate else ""
    early = ""
    if final.stopped_early:
        early = f", stopped once certain ({final.runs} of {final.planned} runs)"
    ledger.event(
        "final",
        f"final validation{gate}: {final.passes}/{final.runs} runs reproduced{early}",
        decision="passed" if final.passed else "failed",
        duration_seconds=round(final.duration, 6),
        files=tree.file_count,
        bytes=tree.byte_count,
        oracle_passes=final.passes,
        oracle_runs=final.runs,
        oracle_rate=final.passes / final.runs if final.runs else None,
        sampling_policy="fixed",
    )


def export_event(ledger: Ledger, files: int, bytes_: int) -> None:
    ledger.event("export", "payload exported", decision="info", files=files, bytes=bytes_)


def holdout_event(ledger: Ledger, record: Mapping[str, Any], duration: float) -> None:
    completed = record["completed_runs"]
    ledger.event(
        "holdout",
        f"holdout: {record['passes']}/{completed} of {record['planned_runs']} "
        f"planned runs reproduced; status {record['status']}",
        decision={"certified": "certified", "rejected": "failed"}.get(record["status"], "aborted"),
        duration_seconds=round(duration, 6),
        oracle_passes=record["passes"],
        oracle_runs=completed,
        oracle_rate=record["passes"] / completed if completed else None,
        sampling_policy="fixed",
    )
