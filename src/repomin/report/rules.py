"""The report's cross-field rules that are not statistics: contract, execution, accounting.

Also the shared vocabulary of the validator: :class:`Problem` (one broken rule, printed as
``rule: message``), :data:`RULES` (every rule id with a one-line description; docs/report-schema.md
§12 documents them) and small helpers. Every function here is pure and assumes a report that already
matches the shipped JSON Schema, so that it can rely on the types.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from repomin.cluster.fields import cluster_problems
from repomin.failure.contract import SIGNATURE_FLAGS
from repomin.failure.facets import FACET_FIELDS
from repomin.report.cost import cost_problems
from repomin.sampling import stats

#: Problem lines are cut to this many characters (values from the report are echoed in them).
MAX_LINE = 300
#: Tolerances for recomputed floats (rates, bounds, p-values, spent alpha).
REL_TOL = 1e-9
ABS_TOL = 1e-12
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DOCKER_IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}\Z")

RULES: dict[str, str] = {
    "json.unreadable": "the report file can be read, is at most 64 MiB and is UTF-8",
    "json.malformed": "the report is well-formed JSON",
    "json.duplicate_key": "no object repeats a key (two parsers could read different values)",
    "json.non_finite": "no NaN or infinite number anywhere",
    "report.not_object": "the report is a JSON object",
    "schema_version": "schema_version is present, an integer and supported by this ReproMin",
    "schema": "the report matches the shipped JSON Schema (types, required fields, closed sets)",
    "failure_spec.signature_modes": "at most one signature mode is selected",
    "failure_spec.process_exit_code": "process-failure mode configures no exit code",
    "failure_spec.match": "failure_spec.match equals the top-level failure_match",
    "failure_spec.criterion": "the contract has a match, an exit code or a signature mode",
    "failure_spec.regex": "the match is a valid regular expression (replay compiles it)",
    "signature.presence": "exactly the signature selected by failure_spec is present",
    "identity.presence": "failure_identity is present exactly when failure_spec.identity is auto",
    "identity.fields": "each pinned identity value has exactly its facet's fields",
    "signature.kind": "a signature object's kind agrees with its field",
    "execution.passes": "baseline/candidate/final passes do not exceed their runs",
    "execution.cache_hits": "execution.cache_hits equals the top-level cache_hits",
    "execution.budget_exhausted": "budget_exhausted is true exactly when stop_reason is a budget",
    "execution.final_validation": (
        "final_validation_passed is recomputed from the final counts; final_runs does not "
        "exceed final_planned_runs, and falls short of it only when final_stopped_early and "
        "the outcome was certain"
    ),
    "execution.environment_names": "environment names are unique valid variable names",
    "execution.docker": "a docker report records the immutable image ID (sha256:...)",
    "execution.docker_user": "a docker report's sample user is not root (uid 0)",
    "execution.docker_limits": (
        "docker_memory and docker_memory_bytes are both null or both set; a limit named in "
        "docker_limit_defaults is not null"
    ),
    "execution.cluster": (
        "cluster dispatch fields come together; several worker environments need "
        "cluster_mixed_workers_allowed"
    ),
    "execution.sample_seconds": (
        "sample_seconds and its basis come together; no samples cost nothing; a wall basis "
        "equals sample_wall_seconds"
    ),
    "accounting.phase_names": "each phase appears once in phase_statistics.phases",
    "accounting.attempts": (
        "complete coverage: attempts = no_op + rejected + accepted + superseded + aborted"
    ),
    "accounting.sample_uses": "complete coverage: oracle_sample_uses = oracle_samples + cache_hits",
    "accounting.totals": "complete coverage: attempts, accepted_mutations, cache_hits = phase sums",
    "slippage.counts": "each comparison rests on the baseline, final and holdout counts recorded",
    "slippage.p_value": "each comparison's p-value and direction recompute from its counts",
    "slippage.direction": "the overall direction is the first comparison's that moved",
    "slippage.advice": "the advice is the sentence for the overall direction",
    "holdout.schema_version": "holdout_certification.schema_version is supported",
    "holdout.not_requested": "a not_requested holdout records no runs or statistics",
    "holdout.runs": "passes <= completed_runs <= planned_runs",
    "holdout.indexes": "sample indexes are 1..completed_runs, contiguous and in order",
    "holdout.sample_outcome": "each sample's outcome agrees with its flags",
    "holdout.aggregates": "aggregate counters equal the sample counts and do not exceed runs",
    "holdout.ordinary_failures": "ordinary_failures equals the number of failed samples",
    "holdout.terminal_group": "the terminal statistics are all present or all absent",
    "holdout.certified": "certified: every planned run completed (and, v1, terminal group)",
    "holdout.observed_rate": "observed_rate = passes / planned_runs",
    "holdout.confidence": "confidence is in (0, 1) and equals 1 - alpha",
    "holdout.recomputed": "p_value, bounds and k_crit equal an exact recomputation",
    "holdout.exact_gate": "exact_gate_passed equals the recomputed exact test",
    "holdout.status": "the status agrees with the exact gate and the veto counters",
    "holdout.artifact": "the holdout artifact fingerprints equal the output fingerprints",
    "user_shell.counts": "reproduced <= runs <= planned_runs, one outcome per run, counted",
    "user_shell.status": "the status is the one the counts give",
    "user_shell.plan": "a decided check planned the runs its rule asks for from the final counts",
    "events.index": "event indexes are 1..N, contiguous and in order",
    "events.oracle_counts": "oracle_passes <= oracle_runs, both present together",
    "events.oracle_rate": "oracle_rate = oracle_passes / oracle_runs",
    "events.bounds": "lower_bound <= oracle_rate <= upper_bound, recomputed exactly",
    "events.family": "candidate family index/confidence/alpha: all or none, alpha as spent",
    "payload.missing": "--payload names an existing directory",
    "payload.sidecar": "the report does not live inside the payload",
    "payload.unsafe": "no absolute/escaping links, devices, FIFOs, sockets or unreadable names",
    "payload.unreadable": "every payload entry can be read",
    "payload.counts": "the payload's file and byte counts equal the report's output",
    "payload.fingerprint": "the payload matches the complete or the content fingerprint",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule. ``str(problem)`` is the line the CLI prints: ``rule: message``."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {clean(self.message)}"


def check_failure_spec(report: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    present = [flag for flag in SIGNATURE_FLAGS if f"{flag}_signature" in report]
    spec = report.get("failure_spec")
    if spec is None:
        if len(present) > 1:
            problems.append(
                Problem(
                    "signature.presence",
                    f"legacy report without failure_spec records {len(present)} signatures "
                    f"({', '.join(present)}); at most one is allowed",
                )
            )
    else:
        modes = [flag for flag in SIGNATURE_FLAGS if spec[flag]]
        if len(modes) > 1:
            problems.append(
                Problem(
                    "failure_spec.signature_modes",
                    f"failure_spec selects {len(modes)} signature modes ({', '.join(modes)}); "
                    "at most one is allowed",
                )
            )
        if spec["process_failure"] and spec.get("exit_code") is not None:
            problems.append(
                Problem(
                    "failure_spec.process_exit_code",
                    f"failure_spec combines process_failure with exit_code {spec.get('exit_code')}",
                )
            )
        if spec["match"] != report["failure_match"]:
            problems.append(
                Problem(
                    "failure_spec.match",
                    f"failure_spec.match {spec['match']!r} differs from failure_match "
                    f"{report['failure_match']!r}",
                )
            )
        if spec["match"] is None and spec.get("exit_code") is None and not modes:
            problems.append(
                Problem(
                    "failure_spec.criterion",
                    "failure_spec has no match, no exit_code and no signature mode",
                )
            )
        if len(modes) <= 1 and set(present) != set(modes):
            selected = modes[0] if modes else None
            for flag in present:
                if flag != selected:
                    problems.append(
                        Problem(
                            "signature.presence",
                            f"{flag}_signature is present but failure_spec does not select {flag}",
                        )
                    )
            if selected is not None and selected not in present:
                problems.append(
                    Problem(
                        "signature.presence",
                        f"failure_spec selects {selected} but {selected}_signature is missing",
                    )
                )
    match = report["failure_match"]
    if match is not None:
        try:
            re.compile(match)
        except re.error as exc:
            problems.append(
                Problem("failure_spec.regex", f"failure_match is not a valid regex: {exc}")
            )
    problems.extend(_check_identity(report, spec))
    for flag in ("python_exception", "java_exception"):
        sig = report.get(f"{flag}_signature")
        if sig is not None and sig["kind"] != flag:
            problems.append(Problem("signature.kind", f"{flag}_signature has kind {sig['kind']!r}"))
    return problems


def _check_identity(report: dict[str, Any], spec: dict[str, Any] | None) -> list[Problem]:
    """``failure_identity`` goes with ``failure_spec.identity == "auto"`` (a spec without the
    key predates identities: no identity), and each value carries its facet's fields."""
    pinned = (spec or {}).get("identity", "off") == "auto"
    identity = report.get("failure_identity")
    if pinned != (identity is not None):
        state = "is missing" if pinned else "is present"
        mode = (spec or {}).get("identity", "absent")
        return [Problem("identity.presence", f"failure_identity {state} with identity {mode}")]
    problems: list[Problem] = []
    for name, values in (identity or {}).get("facets", {}).items():
        for value in values:
            if set(value) != FACET_FIELDS[name]:
                problems.append(
                    Problem(
                        "identity.fields",
                        f"a {name} identity value has fields {', '.join(sorted(value))}; "
                        f"expected {', '.join(sorted(FACET_FIELDS[name]))}",
                    )
                )
    return problems


def check_execution(report: dict[str, Any]) -> list[Problem]:
    ex = report["execution"]
    problems: list[Problem] = []
    for stage in ("baseline", "candidate", "final"):
        runs, passes = ex[f"{stage}_runs"], ex[f"{stage}_passes"]
        if passes > runs:
            problems.append(
                Problem(
                    "execution.passes",
                    f"execution.{stage}_passes {passes} exceeds {stage}_runs {runs}",
                )
            )
    if ex["cache_hits"] != report["cache_hits"]:
        problems.append(
            Problem(
                "execution.cache_hits",
                f"execution.cache_hits {ex['cache_hits']} differs from cache_hits "
                f"{report['cache_hits']}",
            )
        )
    reason = ex.get("stop_reason")
    if reason is not None and ex["budget_exhausted"] != (reason in ("max_runs", "max_time")):
        problems.append(
            Problem(
                "execution.budget_exhausted",
                f"budget_exhausted is {js(ex['budget_exhausted'])} but stop_reason is {reason!r}",
            )
        )
    recorded = ex.get("final_validation_passed")
    if recorded is not None and ex["final_passes"] <= ex["final_runs"]:
        runs, passes = ex["final_runs"], ex["final_passes"]
        alpha = ex.get("final_alpha", 1.0 - ex["confidence"])
        expected = stats.final_test_passed(passes, runs, ex["min_candidate_rate"], alpha)
        if recorded != expected:
            problems.append(
                Problem(
                    "execution.final_validation",
                    f"final_validation_passed is {js(recorded)} but {passes}/{runs} final runs "
                    f"against min_candidate_rate {ex['min_candidate_rate']} at level "
                    f"{alpha} give {js(expected)}",
                )
            )
    stopping = _final_stopping(ex)
    if stopping is not None:
        problems.append(Problem("execution.final_validation", stopping))
    names = ex["environment_names"]
    bad = [n for n in names if not _ENV_NAME.match(n)]
    if bad:
        problems.append(
            Problem(
                "execution.environment_names",
                f"{len(bad)} environment name(s) are not valid variable names",
            )
        )
    if len(set(names)) != len(names):
        problems.append(
            Problem("execution.environment_names", "environment_names contains duplicates")
        )
    if ex["backend"] == "docker":
        image = ex.get("docker_image_id")
        if not isinstance(image, str) or not _DOCKER_IMAGE_ID.match(image):
            problems.append(
                Problem(
                    "execution.docker",
                    "backend is docker but execution.docker_image_id is not an immutable "
                    "image ID (sha256:<64 hex>)",
                )
            )
        problems += _docker_limits(ex)
        user = ex.get("docker_user")
        if isinstance(user, str) and user.partition(":")[0].lstrip("0") == "":
            problems.append(
                Problem(
                    "execution.docker_user",
                    f"docker_user {user!r} is root; ReproMin never runs samples as uid 0",
                )
            )
    problems.extend(Problem("execution.cluster", m) for m in cluster_problems(ex))
    problems.extend(Problem("execution.sample_seconds", m) for m in cost_problems(ex))
    return problems


def _docker_limits(ex: dict[str, Any]) -> list[Problem]:
    """A limit taken from the defaults is never ``none``; memory is given in both forms."""
    problems = []
    if "docker_memory_bytes" in ex and (ex["docker_memory_bytes"] is None) != (
        ex.get("docker_memory") is None
    ):
        problems.append(
            Problem(
                "execution.docker_limits",
                "docker_memory and docker_memory_bytes disagree about whether memory is limited",
            )
        )
    for name in ex.get("docker_limit_defaults") or []:
        if ex.get(f"docker_{name}", "absent") is None:
            problems.append(
                Problem(
                    "execution.docker_limits",
                    f"docker_limit_defaults names {name}, but docker_{name} is null (no limit)",
                )
            )
    return problems


def check_accounting(report: dict[str, Any]) -> list[Problem]:
    stats_ = report["phase_statistics"]
    phases: list[dict[str, Any]] = stats_["phases"]
    problems: list[Problem] = []
    seen: set[str] = set()
    for phase in phases:
        if phase["name"] in seen:
            problems.append(
                Problem("accounting.phase_names", f"phase {phase['name']!r} appears twice")
            )
        seen.add(phase["name"])
    if stats_["coverage"] != "complete":
        return problems  # partial history is never reconstructed from the aggregates
    for phase in phases:
        name = phase["name"]
        parts = sum(phase[k] for k in ("no_op", "rejected", "accepted", "superseded", "aborted"))
        if phase["attempts"] != parts:
            problems.append(
                Problem(
                    "accounting.attempts",
                    f"phase {name!r}: attempts {phase['attempts']} != no_op + rejected + "
                    f"accepted + superseded + aborted = {parts}",
                )
            )
        uses = phase["oracle_samples"] + phase["cache_hits"]
        if phase["oracle_sample_uses"] != uses:
            problems.append(
                Problem(
                    "accounting.sample_uses",
                    f"phase {name!r}: oracle_sample_uses {phase['oracle_sample_uses']} != "
                    f"oracle_samples + cache_hits = {uses}",
                )
            )
    for total, counter in (
        ("attempts", "attempts"),
        ("accepted_mutations", "accepted"),
        ("cache_hits", "cache_hits"),
    ):
        summed = sum(phase[counter] for phase in phases)
        if report[total] != summed:
            problems.append(
                Problem(
                    "accounting.totals",
                    f"{total} {report[total]} != sum of phase {counter} = {summed}",
                )
            )
    return problems


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def js(value: Any) -> str:
    return json.dumps(value)


def json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def first_break(indexes: list[Any]) -> int:
    for position, index in enumerate(indexes, start=1):
        if index != position:
            return position
    return len(indexes) + 1


def non_finite(value: Any, where: str = "(top level)") -> Iterator[str]:
    if isinstance(value, float):
        if not math.isfinite(value):
            yield where
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from non_finite(item, key if where == "(top level)" else f"{where}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from non_finite(item, str(i) if where == "(top level)" else f"{where}/{i}")


def _show(text: str) -> str:
    """A path or name as a safe, quoted, single line."""
    return repr(text)[:120]


def clean(text: str) -> str:
    """One printable line of at most :data:`MAX_LINE` characters (report values are untrusted)."""
    cleaned = "".join(
        ch
        if ch.isprintable() and unicodedata.category(ch) not in ("Cf", "Cs")
        else f"\\x{ord(ch):02x}"
        if ord(ch) < 0x100
        else f"\\u{ord(ch):04x}"
        for ch in text
    )
    return cleaned if len(cleaned) <= MAX_LINE else cleaned[: MAX_LINE - 3] + "..."


def _final_stopping(ex: Mapping[str, Any]) -> str | None:
    """What is wrong with the final test's stopping record (``final_planned_runs``,
    ``final_stopped_early``; absent in older reports), if anything: a curtailed test stops
    only once the fixed test of ``final_planned_runs`` runs has a certain outcome
    (``stats.CurtailedTest``): ``c`` passes in, or too few runs left to reach ``c``."""
    planned = ex.get("final_planned_runs")
    runs, passes = ex["final_runs"], ex["final_passes"]
    if planned is None or passes > runs:
        return None
    early = ex.get("final_stopped_early", False)
    if runs > planned:
        return f"final_runs {runs} exceeds final_planned_runs {planned}"
    if not early:
        if runs < planned:
            return f"final_runs {runs} < final_planned_runs {planned} but final_stopped_early false"
        return None
    if runs == planned:
        return "final_stopped_early is true but every planned final run was made"
    theta, alpha = ex["min_candidate_rate"], ex.get("final_alpha", 1.0 - ex["confidence"])
    if not (0.0 < theta < 1.0 and 0.0 < alpha < 1.0):
        return None
    c = stats.critical_count(planned, theta, alpha)
    if passes >= c or passes + (planned - runs) < c:
        return None
    return (
        f"final_stopped_early after {passes}/{runs} of {planned} runs, but the test (pass at "
        f"{c} passes) could still go either way"
    )
