"""Rules on the holdout certification: counts, outcome flags and the recomputed exact test.

Owns :func:`check_holdout`. Every statistic is recomputed from the recorded counts ("derived,
never assigned"): the p-value, bounds, ``k_crit`` and exact gate with
:func:`repomin.sampling.stats.holdout_test`. Pure functions over a report that already matches the
shipped JSON Schema.
"""

from __future__ import annotations

from typing import Any

from repomin.report.rules import Problem, close, first_break, js
from repomin.sampling import stats

SUPPORTED_HOLDOUT_SCHEMA_VERSIONS = frozenset({1})
#: Holdouts larger than this are not recomputed (the exact test would take too long).
MAX_RECOMPUTED_RUNS = 10_000_000
#: The terminal holdout statistics: present all together or not at all.
HOLDOUT_TERMINAL_GROUP = (
    "observed_rate",
    "lower_bound",
    "upper_bound",
    "p_value",
    "confidence",
    "k_crit",
    "exact_gate_passed",
)
#: Fields a ``not_requested`` holdout must not carry (it ran nothing).
_HOLDOUT_RUN_FIELDS = (
    "planned_runs",
    "completed_runs",
    "passes",
    "samples",
    "timeouts",
    "resource_exhausted",
    "interrupted",
    "ordinary_failures",
    *HOLDOUT_TERMINAL_GROUP,
)
#: Aggregate holdout counter -> the sample outcome it counts.
_HOLDOUT_COUNTERS = {
    "passes": "passed",
    "ordinary_failures": "failed",
    "timeouts": "timed_out",
    "resource_exhausted": "resource_exhausted",
    "interrupted": "interrupted",
}
#: Flags each sample outcome must show, when the flag is present.
_OUTCOME_FLAGS: dict[str, dict[str, bool]] = {
    "passed": {"accepted": True, "timed_out": False, "resource_exhausted": False},
    "failed": {"accepted": False, "timed_out": False, "resource_exhausted": False},
    "timed_out": {"accepted": False, "timed_out": True, "resource_exhausted": False},
    "resource_exhausted": {"accepted": False, "timed_out": False, "resource_exhausted": True},
    "interrupted": {"accepted": False, "timed_out": False, "resource_exhausted": False},
}


def check_holdout(report: dict[str, Any]) -> list[Problem]:
    hold = report.get("holdout_certification")
    if hold is None:
        return []
    version = hold.get("schema_version")
    if version is not None and version not in SUPPORTED_HOLDOUT_SCHEMA_VERSIONS:
        return [
            Problem(
                "holdout.schema_version",
                f"unsupported holdout_certification.schema_version {version}",
            )
        ]
    status = hold["status"]
    if status == "not_requested":
        extra = [k for k in _HOLDOUT_RUN_FIELDS if k in hold]
        if extra:
            return [
                Problem(
                    "holdout.not_requested",
                    f"status not_requested but the holdout records {', '.join(extra)}",
                )
            ]
        return []
    problems = _holdout_counts(hold)
    problems += _holdout_terminal(hold, modern=version is not None)
    output = report["output"]
    for field, out_field in (
        ("artifact_tree_sha256", "tree_sha256"),
        ("artifact_tree_content_sha256", "tree_content_sha256"),
    ):
        if field in hold and out_field in output and hold[field] != output[out_field]:
            problems.append(
                Problem(
                    "holdout.artifact",
                    f"holdout_certification.{field} differs from output.{out_field}",
                )
            )
    return problems


def _holdout_counts(hold: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    planned, completed, passes = (
        hold.get("planned_runs"),
        hold.get("completed_runs"),
        hold.get("passes"),
    )
    if planned is not None and completed is not None and completed > planned:
        problems.append(
            Problem("holdout.runs", f"completed_runs {completed} exceeds planned_runs {planned}")
        )
    if passes is not None and completed is not None and passes > completed:
        problems.append(
            Problem("holdout.runs", f"passes {passes} exceeds completed_runs {completed}")
        )
    samples: list[dict[str, Any]] | None = hold.get("samples")
    complete_samples = False
    if samples is not None:
        indexes = [s["index"] for s in samples]
        if indexes != list(range(1, len(samples) + 1)):
            problems.append(
                Problem(
                    "holdout.indexes",
                    f"sample indexes are not 1..{len(samples)} in order "
                    f"(first break at position {first_break(indexes)})",
                )
            )
        elif completed is not None and len(samples) != completed:
            problems.append(
                Problem(
                    "holdout.indexes",
                    f"{len(samples)} samples recorded but completed_runs is {completed}",
                )
            )
        else:
            complete_samples = completed is not None
        for sample in samples:
            wanted = _OUTCOME_FLAGS[sample["outcome"]]
            wrong = [f for f, v in wanted.items() if f in sample and sample[f] is not v]
            if sample["outcome"] == "interrupted":
                wrong += [f for f in ("exit_code", "duration_seconds") if sample.get(f) is not None]
            if wrong:
                problems.append(
                    Problem(
                        "holdout.sample_outcome",
                        f"sample {sample['index']}: outcome {sample['outcome']!r} disagrees "
                        f"with {', '.join(wrong)}",
                    )
                )
    for counter, outcome in _HOLDOUT_COUNTERS.items():
        value = hold.get(counter)
        if value is None:
            continue
        rule = "holdout.aggregates"
        if counter == "ordinary_failures":
            rule = "holdout.ordinary_failures"
        if complete_samples and samples is not None:
            counted = sum(1 for s in samples if s["outcome"] == outcome)
            if value != counted:
                problems.append(
                    Problem(rule, f"{counter} {value} != {counted} samples with outcome {outcome}")
                )
                continue
        if completed is not None and value > completed and counter != "passes":
            problems.append(Problem(rule, f"{counter} {value} exceeds completed_runs {completed}"))
    if completed is not None and all(hold.get(c) is not None for c in _HOLDOUT_COUNTERS):
        total = sum(hold[c] for c in _HOLDOUT_COUNTERS)
        if total != completed:
            problems.append(
                Problem(
                    "holdout.aggregates",
                    f"passes + ordinary_failures + timeouts + resource_exhausted + interrupted "
                    f"= {total} != completed_runs {completed}",
                )
            )
    return problems


def _holdout_terminal(hold: dict[str, Any], *, modern: bool) -> list[Problem]:
    problems: list[Problem] = []
    present = [k for k in HOLDOUT_TERMINAL_GROUP if k in hold]
    complete = len(present) == len(HOLDOUT_TERMINAL_GROUP)
    if present and not complete:
        missing = [k for k in HOLDOUT_TERMINAL_GROUP if k not in hold]
        problems.append(
            Problem(
                "holdout.terminal_group",
                f"terminal statistics are all-or-none: {', '.join(present)} present but "
                f"{', '.join(missing)} missing",
            )
        )
    if hold["status"] == "certified":
        problems += _certified_runs(hold, complete=complete, modern=modern)
    if not complete:
        return problems
    return problems + _terminal_statistics(hold)


def _certified_runs(hold: dict[str, Any], *, complete: bool, modern: bool) -> list[Problem]:
    """A certified holdout ran every planned run and records the terminal statistics."""
    problems: list[Problem] = []
    planned, completed = hold.get("planned_runs"), hold.get("completed_runs")
    if planned is None or completed is None:
        if modern:
            problems.append(
                Problem(
                    "holdout.certified",
                    "certified holdout does not record planned_runs and completed_runs",
                )
            )
    elif completed != planned:
        problems.append(
            Problem(
                "holdout.certified",
                f"certified after {completed} of {planned} planned runs; certification "
                "needs every planned run",
            )
        )
    if modern and not complete:
        problems.append(
            Problem(
                "holdout.certified",
                "certified holdout (schema_version 1) lacks the terminal statistics",
            )
        )
    return problems


def _terminal_statistics(hold: dict[str, Any]) -> list[Problem]:
    """The (complete) terminal statistics derived again from the counts, as far as they can be."""
    planned, passes = hold.get("planned_runs"), hold.get("passes")
    confidence, alpha = hold["confidence"], hold.get("alpha")
    if not 0.0 < confidence < 1.0:
        return [Problem("holdout.confidence", f"confidence {confidence} is not in (0, 1)")]
    if alpha is not None and not close(confidence, 1.0 - alpha):
        return [Problem("holdout.confidence", f"confidence {confidence} != 1 - alpha {alpha}")]
    if planned is None or passes is None or planned < 1:
        return [
            Problem(
                "holdout.observed_rate",
                "observed_rate needs passes and planned_runs >= 1 to be derived",
            )
        ]
    problems: list[Problem] = []
    if not close(hold["observed_rate"], passes / planned):
        problems.append(
            Problem(
                "holdout.observed_rate",
                f"observed_rate {hold['observed_rate']} != passes / planned_runs "
                f"= {passes}/{planned}",
            )
        )
    p0 = hold.get("min_rate")
    if p0 is None or passes > planned or planned > MAX_RECOMPUTED_RUNS:
        problems.append(
            Problem(
                "holdout.recomputed",
                "the exact test cannot be recomputed: it needs min_rate, passes <= planned_runs "
                f"and planned_runs <= {MAX_RECOMPUTED_RUNS}",
            )
        )
        return problems
    level = alpha if alpha is not None else 1 - confidence
    problems += _exact_test(hold, passes, planned, p0, level)
    return problems + _status_against_gate(hold)


def _exact_test(
    hold: dict[str, Any], passes: int, planned: int, p0: float, alpha: float
) -> list[Problem]:
    """The recorded p-value, bounds, ``k_crit`` and gate against the exact test recomputed."""
    problems: list[Problem] = []
    result = stats.holdout_test(passes, planned, p0, alpha)
    for field in ("p_value", "lower_bound", "upper_bound"):
        if not close(hold[field], getattr(result, field)):
            problems.append(
                Problem(
                    "holdout.recomputed",
                    f"{field} {hold[field]} != exact {getattr(result, field)!r} for "
                    f"{passes}/{planned} at min_rate {p0}",
                )
            )
    if hold["k_crit"] != result.k_crit:
        problems.append(
            Problem("holdout.recomputed", f"k_crit {hold['k_crit']} != exact {result.k_crit}")
        )
    gate = hold["exact_gate_passed"]
    if gate != result.certified:
        problems.append(
            Problem(
                "holdout.exact_gate",
                f"exact_gate_passed is {js(gate)} but the exact test on {passes}/{planned} "
                f"gives {js(result.certified)}",
            )
        )
    return problems


def _status_against_gate(hold: dict[str, Any]) -> list[Problem]:
    """The status agrees with the recorded exact gate (and the vetoes)."""
    status, gate = hold["status"], hold["exact_gate_passed"]
    vetoes = (hold.get("timeouts") or 0) + (hold.get("resource_exhausted") or 0)
    if status == "certified" and not gate:
        return [Problem("holdout.status", "status certified but exact_gate_passed false")]
    if status == "rejected" and gate and vetoes == 0:
        return [
            Problem(
                "holdout.status",
                "status rejected although the exact gate passed and no timeout or resource "
                "veto is recorded",
            )
        ]
    return []
