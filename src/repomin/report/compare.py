"""The comparison document of ``repomin report compare``: snapshots, deltas and context warnings.

:func:`build_comparison` is pure: it takes already validated reports, in the order given, and
returns ``comparison_schema_version`` 1 with ``descriptive_only: true``. Each run is a snapshot
of exactly :data:`RUN_FIELDS`; each delta is *next minus previous* over :data:`NUMERIC_FIELDS`
plus the :data:`CATEGORICAL_FIELDS` that changed; each context warning names a change (from
:data:`~repomin.report.compare_rules.WARNING_CODES`) that makes two snapshots harder to compare
directly (the rules live in :mod:`repomin.report.compare_rules`).

Privacy: commands, match expressions, signatures, environment names and digests, paths,
Docker image references and IDs, semantic endpoints and models are *private*. They are
compared only through :func:`private_digest` -- an internal SHA-256 over canonical JSON with a
fixed domain tag, never emitted -- so the document says *that* the oracle identity changed,
never what it was. Fingerprints, logs and phase timing are not read at all.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from repomin.errors import UsageError
from repomin.report.compare_rules import (
    PAIR_RULES,
    RUN_WARNINGS,
    execution_of,
    holdout_of,
    mapping_of,
)
from repomin.report.summary import BACKENDS, HOLDOUT_STATUSES, oracle_mode, safe_version

COMPARISON_SCHEMA_VERSION = 1
MIN_REPORTS = 2
MAX_REPORTS = 32
#: Display labels: 1-32 ASCII letters, digits, ``.``, ``_`` or ``-``, starting with a letter or
#: digit (so a label can never look like an option or a hidden file).
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}\Z")
#: Snapshot counters outside the signed 64-bit range are shown as null.
MAX_COUNTER = 2**63
#: Adjacent integer differences beyond this bound (the exactly representable range of an IEEE
#: double, what most JSON consumers parse into) are null in ``numeric_deltas``.
MAX_EXACT_DELTA = 2**53
RATIO_DIGITS = 6
#: Fixed domain tag of :func:`private_digest`: digests are comparable across invocations.
DIGEST_DOMAIN = b"repomin-compare-private-v1\0"
PHASE_COVERAGES = ("complete", "partial")

#: The exact key set and order of a ``runs`` entry.
RUN_FIELDS: tuple[str, ...] = (
    "index",
    "label",
    "repomin_version",
    "backend",
    "oracle_mode",
    "source_files",
    "source_bytes",
    "output_files",
    "output_bytes",
    "file_retention_ratio",
    "byte_retention_ratio",
    "attempts",
    "accepted_mutations",
    "cache_hits",
    "runs",
    "budget_exhausted",
    "holdout_status",
    "holdout_planned_runs",
    "holdout_completed_runs",
    "holdout_passes",
    "phase_coverage",
)
RATIO_FIELDS = ("file_retention_ratio", "byte_retention_ratio")
NUMERIC_FIELDS: tuple[str, ...] = (
    "source_files",
    "source_bytes",
    "output_files",
    "output_bytes",
    "file_retention_ratio",
    "byte_retention_ratio",
    "attempts",
    "accepted_mutations",
    "cache_hits",
    "runs",
    "holdout_planned_runs",
    "holdout_completed_runs",
    "holdout_passes",
)
CATEGORICAL_FIELDS: tuple[str, ...] = (
    "repomin_version",
    "backend",
    "oracle_mode",
    "budget_exhausted",
    "holdout_status",
    "phase_coverage",
)


# -- context: what each warning compares ----------------------------------------------------


# -- the document ----------------------------------------------------------------------------


def check_labels(labels: Sequence[str] | None, count: int) -> list[str]:
    """The display labels: given (one per report, unique, :data:`LABEL_PATTERN`) or ``runN``."""
    if not labels:
        return [f"run{i}" for i in range(1, count + 1)]
    if len(labels) != count:
        raise UsageError(
            f"{len(labels)} --label values for {count} reports: give one label per report, "
            "in the same order, or none"
        )
    seen: set[str] = set()
    for label in labels:
        if not LABEL_PATTERN.match(label):
            raise UsageError(
                f"--label {label!r} is not a short ASCII identifier: use 1-32 letters, digits, "
                "'.', '_' or '-', starting with a letter or digit"
            )
        if label in seen:
            raise UsageError(f"--label {label!r} is given twice: labels must be unique")
        seen.add(label)
    return list(labels)


def check_count(count: int) -> None:
    if count < MIN_REPORTS:
        raise UsageError(f"compare needs at least {MIN_REPORTS} reports, got {count}")
    if count > MAX_REPORTS:
        raise UsageError(
            f"compare accepts at most {MAX_REPORTS} reports per invocation, got {count}; "
            "use benchmarks/compare.py for longer performance histories"
        )


def build_comparison(
    reports: Sequence[Mapping[str, Any]], labels: Sequence[str] | None = None
) -> dict[str, Any]:
    """The comparison document of validated ``reports``, in the order given."""
    check_count(len(reports))
    names = check_labels(labels, len(reports))
    runs = [snapshot(r, i, names[i - 1]) for i, r in enumerate(reports, start=1)]
    deltas = [delta(a, b) for a, b in pairwise(runs)]
    return {
        "comparison_schema_version": COMPARISON_SCHEMA_VERSION,
        "descriptive_only": True,
        "run_count": len(runs),
        "runs": runs,
        "deltas": deltas,
        "context_warnings": context_warnings(reports, runs),
    }


def snapshot(report: Mapping[str, Any], index: int, label: str) -> dict[str, Any]:
    """Exactly :data:`RUN_FIELDS` of one report; unusable values become null."""
    source = mapping_of(report.get("source"))
    output = mapping_of(report.get("output"))
    ex = execution_of(report)
    hold = holdout_of(report)
    src_files, src_bytes = _counter(source.get("files")), _counter(source.get("bytes"))
    out_files, out_bytes = _counter(output.get("files")), _counter(output.get("bytes"))
    coverage = mapping_of(report.get("phase_statistics")).get("coverage")
    run = {
        "index": index,
        "label": label,
        "repomin_version": safe_version(report.get("repomin_version")),
        "backend": _choice(ex.get("backend"), BACKENDS),
        "oracle_mode": oracle_mode(report),
        "source_files": src_files,
        "source_bytes": src_bytes,
        "output_files": out_files,
        "output_bytes": out_bytes,
        "file_retention_ratio": safe_ratio(out_files, src_files),
        "byte_retention_ratio": safe_ratio(out_bytes, src_bytes),
        "attempts": _counter(report.get("attempts")),
        "accepted_mutations": _counter(report.get("accepted_mutations")),
        "cache_hits": _counter(report.get("cache_hits")),
        "runs": _counter(ex.get("oracle_samples")),
        "budget_exhausted": ex.get("budget_exhausted")
        if isinstance(ex.get("budget_exhausted"), bool)
        else None,
        "holdout_status": _choice(hold.get("status"), HOLDOUT_STATUSES),
        "holdout_planned_runs": _counter(hold.get("planned_runs")),
        "holdout_completed_runs": _counter(hold.get("completed_runs")),
        "holdout_passes": _counter(hold.get("passes")),
        "phase_coverage": _choice(coverage, PHASE_COVERAGES),
    }
    return run


def delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """``after`` minus ``before``: numeric differences and the categorical fields that changed."""
    numeric: dict[str, int | float | None] = {}
    for name in NUMERIC_FIELDS:
        a, b = before[name], after[name]
        if a is None or b is None:
            numeric[name] = None
        elif name in RATIO_FIELDS:
            numeric[name] = round(b - a, RATIO_DIGITS)
        else:
            diff = b - a
            numeric[name] = diff if abs(diff) <= MAX_EXACT_DELTA else None
    return {
        "from_index": before["index"],
        "from_label": before["label"],
        "to_index": after["index"],
        "to_label": after["label"],
        "numeric_deltas": numeric,
        "changed_fields": [f for f in CATEGORICAL_FIELDS if before[f] != after[f]],
    }


def context_warnings(
    reports: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Per run (in order): its own warnings, then those of the pair it closes."""
    warnings: list[dict[str, Any]] = []
    for i, (report, run) in enumerate(zip(reports, runs, strict=True)):
        if i > 0:
            prev, prev_run = reports[i - 1], runs[i - 1]
            for rule in PAIR_RULES:
                if private_digest(rule.code, rule.extract(prev)) != private_digest(
                    rule.code, rule.extract(report)
                ):
                    warnings.append(_warning(rule.code, rule.message, [prev_run, run]))
        if run["repomin_version"] is None:
            warnings.append(_run_warning("version_unavailable", run))
        if run["phase_coverage"] != "complete":
            warnings.append(_run_warning("phase_coverage_partial", run))
        if any(run[f] is None for f in RATIO_FIELDS):
            warnings.append(_run_warning("ratio_unavailable", run))
    return warnings


def private_digest(group: str, value: Any) -> str:
    """Opaque SHA-256 of ``value`` in ``group`` (canonical JSON, fixed domain tag).

    Internal only: it decides whether a context changed and is never written anywhere.
    """
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(DIGEST_DOMAIN + group.encode() + b"\0" + canonical.encode()).hexdigest()


def safe_ratio(kept: int | None, source: int | None) -> float | None:
    """``kept / source`` rounded to six decimals; null unless both are exact in a double."""
    if kept is None or source is None or source == 0:
        return None
    if kept > MAX_EXACT_DELTA or source > MAX_EXACT_DELTA:
        return None
    ratio = kept / source
    return round(ratio, RATIO_DIGITS) if math.isfinite(ratio) else None


def _warning(code: str, message: str, runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "code": code,
        "run_indexes": [r["index"] for r in runs],
        "run_labels": [r["label"] for r in runs],
        "message": message,
    }


def _run_warning(code: str, run: Mapping[str, Any]) -> dict[str, Any]:
    return _warning(code, RUN_WARNINGS[code], [run])


def _counter(value: Any) -> int | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return value if 0 <= value < MAX_COUNTER else None


def _choice(value: Any, allowed: tuple[str, ...]) -> str | None:
    return value if isinstance(value, str) and value in allowed else None
