"""The context rules of ``repomin report compare``: what makes two reports hard to compare.

Owns :data:`PAIR_RULES` (one :class:`ContextRule` per pairwise warning, in emission order),
:data:`RUN_WARNINGS` (per-run warnings) and :data:`WARNING_CODES`. A new report field that
changes how two runs compare gets a rule here; :mod:`repomin.report.compare` only applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from repomin.report.summary import oracle_mode, safe_version


def mapping_of(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one (reports are read defensively)."""
    return value if isinstance(value, Mapping) else {}


def execution_of(report: Mapping[str, Any]) -> Mapping[str, Any]:
    """The report's ``execution`` block (empty when absent or malformed)."""
    return mapping_of(report.get("execution"))


def holdout_of(report: Mapping[str, Any]) -> Mapping[str, Any]:
    """The report's ``holdout_certification`` block (empty when absent or malformed)."""
    return mapping_of(report.get("holdout_certification"))


def _fields(*names: str) -> Callable[[Mapping[str, Any]], Any]:
    """The named ``execution`` fields (absent fields compare as absent, not as null)."""

    def pick(report: Mapping[str, Any]) -> Any:
        ex = execution_of(report)
        return {name: ex[name] for name in names if name in ex}

    return pick


def _planned(counted: str, planned: str, *others: str) -> Callable[[Mapping[str, Any]], Any]:
    """The named fields, with ``counted`` (runs made) replaced by ``planned`` (the design)
    when the report has it: an adaptive baseline or a gate that stopped once certain makes a
    number of runs that differs between two reductions of the same configuration."""

    def pick(report: Mapping[str, Any]) -> Any:
        ex = execution_of(report)
        key = planned if planned in ex else counted
        return {name: ex[name] for name in (key, *others) if name in ex}

    return pick


def _environment(report: Mapping[str, Any]) -> Any:
    """The environment's names and the samples' HOME (``--home``), and its digest where it is
    comparable: a salted digest
    (``environment_digest_scheme``) differs between any two reports by design, so only the
    names and the scheme are compared then."""
    ex = execution_of(report)
    names = (
        "environment_names",
        "inherited_environment_names",
        "environment_digest_scheme",
        "home",
    )
    picked = {name: ex[name] for name in names if name in ex}
    picked["home"] = ex.get("home", "fresh")  # a report from before --home had a fresh HOME
    if "environment_digest_scheme" not in ex and "environment_sha256" in ex:
        picked["environment_sha256"] = ex["environment_sha256"]
    return picked


def _docker_context(report: Mapping[str, Any]) -> Any:
    ex = execution_of(report)
    return {k: v for k, v in ex.items() if k.startswith("docker_")}


def _oracle_identity(report: Mapping[str, Any]) -> Any:
    return {
        "command": report.get("command"),
        "failure_match": report.get("failure_match"),
        "failure_spec": report.get("failure_spec"),
        "signatures": {
            key: report[key]
            for key in (
                "java_exception_signature",
                "python_exception_signature",
                "process_failure_signature",
            )
            if key in report
        },
    }


def _source_size(report: Mapping[str, Any]) -> Any:
    source = mapping_of(report.get("source"))
    return [source.get("files"), source.get("bytes")]


def _holdout_controls(report: Mapping[str, Any]) -> Any:
    hold = holdout_of(report)
    controls = {
        k: hold[k] for k in ("planned_runs", "min_rate", "alpha", "confidence", "jobs") if k in hold
    }
    ex = execution_of(report)
    if "holdout_requested_runs" in ex:
        controls["requested_runs"] = ex["holdout_requested_runs"]
    return controls


def _holdout_policy(report: Mapping[str, Any]) -> Any:
    hold = holdout_of(report)
    return [hold.get("policy"), hold.get("schema_version")]


def _phase_names(report: Mapping[str, Any]) -> Any:
    stats = mapping_of(report.get("phase_statistics"))
    phases = stats.get("phases")
    if not isinstance(phases, list):
        return None
    return [p.get("name") if isinstance(p, Mapping) else None for p in phases]


@dataclass(frozen=True, slots=True)
class ContextRule:
    """One pairwise warning: ``code`` when ``extract`` differs between adjacent reports."""

    code: str
    message: str
    extract: Callable[[Mapping[str, Any]], Any]


#: Pairwise rules, in the order their warnings are emitted for each adjacent pair.
PAIR_RULES: tuple[ContextRule, ...] = (
    ContextRule(
        "version_changed",
        "the ReproMin version differs",
        lambda r: safe_version(r.get("repomin_version")),
    ),
    ContextRule("source_size_changed", "the source tree differs in files or bytes", _source_size),
    ContextRule(
        "input_selection_changed",
        "input selection or exclusion controls differ (ignores, .gitignore, kept paths)",
        _fields(
            "ignored_names",
            "ignored_paths",
            "gitignore_enabled",
            "gitignore_files",
            "keep_paths",
        ),
    ),
    ContextRule("backend_changed", "the execution backend differs", _fields("backend")),
    ContextRule(
        "dispatch_changed",
        "where samples ran differs (local pool or cluster: workers, threads, scheduler, mixed)",
        _fields(
            "dispatch_engine",
            "cluster_workers",
            "cluster_threads",
            "cluster_scheduler_sha256",
            "cluster_mixed_workers_allowed",
        ),
    ),
    ContextRule("jobs_changed", "the maximum concurrency (jobs) differs", _fields("jobs")),
    ContextRule("timeout_changed", "the per-run timeout differs", _fields("timeout_seconds")),
    ContextRule(
        "cache_changed",
        "the content cache or session resume setting differs",
        _fields("cache_enabled", "resumed"),
    ),
    ContextRule(
        "budget_changed",
        "the reduction budget (runs or time) differs",
        _fields("max_runs", "max_time_seconds"),
    ),
    ContextRule(
        "semantic_context_changed",
        "the semantic reducer configuration differs",
        _fields("semantic_reducer", "semantic_model", "semantic_endpoint", "semantic_timeout"),
    ),
    ContextRule(
        "container_context_changed",
        "the container image, identity or policy differs",
        _docker_context,
    ),
    ContextRule(
        "environment_changed",
        "the explicit or inherited environment differs",
        _environment,
    ),
    ContextRule(
        "working_directory_changed",
        "the working-directory context differs",
        _fields("working_directory"),
    ),
    ContextRule("oracle_mode_changed", "the oracle mode differs", oracle_mode),
    ContextRule(
        "oracle_identity_changed",
        "the oracle identity differs (command, match, exit code or signature)",
        _oracle_identity,
    ),
    ContextRule(
        "baseline_sampling_changed",
        "the baseline sampling configuration differs",
        _planned(
            "baseline_runs",
            "baseline_runs_cap",
            "min_baseline_rate",
            "baseline_policy",
            "confidence",
        ),
    ),
    ContextRule(
        "candidate_sampling_changed",
        "the candidate sampling configuration differs",
        _fields(
            "candidate_runs_cap",
            "min_candidate_rate",
            "sampling_policy",
            "sampling_policy_requested",
            "candidate_design",
            "family_spending",
            "failure_budget",
            "confidence",
        ),
    ),
    ContextRule(
        "final_validation_changed",
        "the final validation configuration differs",
        _planned("final_runs", "final_planned_runs", "final_policy"),
    ),
    ContextRule(
        "reduction_strategy_changed",
        "the reduction strategy differs",
        _fields("reduction_strategy", "trace"),
    ),
    ContextRule("holdout_controls_changed", "holdout controls differ", _holdout_controls),
    ContextRule("holdout_policy_changed", "the holdout policy differs", _holdout_policy),
    ContextRule(
        "holdout_status_changed",
        "the holdout status differs",
        lambda r: holdout_of(r).get("status"),
    ),
    ContextRule("phase_definitions_changed", "the phase list differs", _phase_names),
    ContextRule(
        "phase_coverage_changed",
        "phase coverage differs",
        lambda r: mapping_of(r.get("phase_statistics")).get("coverage"),
    ),
)

#: Per-run warnings, in emission order after the pairwise ones of the same run.
RUN_WARNINGS: dict[str, str] = {
    "version_unavailable": "the ReproMin version is missing or unusable",
    "phase_coverage_partial": "phase coverage is partial (legacy or interrupted session)",
    "ratio_unavailable": "a retention ratio is unavailable (zero or unsafe source count)",
}

WARNING_CODES: tuple[str, ...] = (*(r.code for r in PAIR_RULES), *RUN_WARNINGS)
