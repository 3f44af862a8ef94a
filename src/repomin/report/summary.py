"""The compact, privacy-safe summary of a validated report (``--json``) and its Markdown table.

:func:`build_summary` copies or derives exactly :data:`SUMMARY_KEYS` from the report, with
``summary_schema_version`` 2: no command, match, signature, log, environment name or value.
It is total over any input -- a field whose value does not have the documented type becomes
``null`` -- so that it can also describe an invalid report (with ``valid: false``).
:func:`render_markdown` renders a fixed whitelist of those fields (no paths) with every value
escaped for a Markdown table cell. The helpers :func:`safe_version`, :func:`oracle_mode` and
:func:`retention_ratio` are shared with other shareable outputs (e.g. comparisons).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repomin.failure.contract import SIGNATURE_FLAGS
from repomin.report.validate import ValidationResult

SUMMARY_SCHEMA_VERSION = 2

#: The exact key set and order of the ``--json`` summary (pinned by a contract test).
SUMMARY_KEYS: tuple[str, ...] = (
    "valid",
    "summary_schema_version",
    "schema_version",
    "holdout_status",
    "report_path",
    "payload_path",
    "repomin_version",
    "backend",
    "oracle_mode",
    "source_files",
    "source_bytes",
    "output_files",
    "output_bytes",
    "removed_files",
    "removed_bytes",
    "file_retention_ratio",
    "byte_retention_ratio",
    "attempts",
    "accepted_mutations",
    "cache_hits",
    "runs",
    "budget_exhausted",
    "holdout_planned_runs",
    "holdout_completed_runs",
    "holdout_passes",
    "payload_fingerprint_verified",
    "payload_fingerprint_mode",
)

ORACLE_MODES = (
    "python_exception",
    "java_exception",
    "process_failure",
    "match",
    "exit_code",
    "match_and_exit_code",
)
BACKENDS = ("host", "docker")
HOLDOUT_STATUSES = ("not_requested", "certified", "rejected", "interrupted", "aborted")
#: Longest ``repomin_version`` copied into a summary; longer provenance is shown as null.
MAX_VERSION_LENGTH = 64
#: PEP 440 public version with an optional local part (e.g. ``0.1.0``, ``1.2rc1.dev3+g1a2b``).
_VERSION = re.compile(
    r"\d+(?:\.\d+)*(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)?\Z"
)
#: Counters outside the signed 64-bit range are shown as null (a shareable bound).
_INT_LIMIT = 2**63

#: (label, summary key) rows of the Markdown table, in order. Paths are deliberately absent.
MARKDOWN_ROWS: tuple[tuple[str, str], ...] = (
    ("Summary schema version", "summary_schema_version"),
    ("Report schema version", "schema_version"),
    ("ReproMin version", "repomin_version"),
    ("Execution backend", "backend"),
    ("Oracle type", "oracle_mode"),
    ("Source files", "source_files"),
    ("Source bytes", "source_bytes"),
    ("Output files", "output_files"),
    ("Output bytes", "output_bytes"),
    ("Removed files", "removed_files"),
    ("Removed bytes", "removed_bytes"),
    ("File retention ratio", "file_retention_ratio"),
    ("Byte retention ratio", "byte_retention_ratio"),
    ("Reduction attempts", "attempts"),
    ("Runs of the command", "runs"),
    ("Accepted mutations", "accepted_mutations"),
    ("Holdout status", "holdout_status"),
    ("Holdout planned runs", "holdout_planned_runs"),
    ("Holdout completed runs", "holdout_completed_runs"),
    ("Holdout passes", "holdout_passes"),
    ("Payload fingerprint verified", "payload_fingerprint_verified"),
    ("Payload fingerprint mode", "payload_fingerprint_mode"),
)


def build_summary(report: Any, result: ValidationResult, *, report_path: Path) -> dict[str, Any]:
    """The ``--json`` summary: exactly :data:`SUMMARY_KEYS`, in that order."""
    data: Mapping[str, Any] = report if isinstance(report, Mapping) else {}
    source = _mapping(data.get("source"))
    output = _mapping(data.get("output"))
    execution = _mapping(data.get("execution"))
    holdout = _mapping(data.get("holdout_certification"))
    src_files, src_bytes = _count(source.get("files")), _count(source.get("bytes"))
    out_files, out_bytes = _count(output.get("files")), _count(output.get("bytes"))
    payload = result.payload
    summary: dict[str, Any] = {
        "valid": result.valid,
        "summary_schema_version": SUMMARY_SCHEMA_VERSION,
        "schema_version": _count(data.get("schema_version")),
        "holdout_status": _choice(holdout.get("status"), HOLDOUT_STATUSES),
        "report_path": str(report_path.resolve()),
        "payload_path": str(payload.resolve()) if payload is not None else None,
        "repomin_version": safe_version(data.get("repomin_version")),
        "backend": _choice(execution.get("backend"), BACKENDS),
        "oracle_mode": oracle_mode(data),
        "source_files": src_files,
        "source_bytes": src_bytes,
        "output_files": out_files,
        "output_bytes": out_bytes,
        "removed_files": _difference(src_files, out_files),
        "removed_bytes": _difference(src_bytes, out_bytes),
        "file_retention_ratio": retention_ratio(out_files, src_files),
        "byte_retention_ratio": retention_ratio(out_bytes, src_bytes),
        "attempts": _count(data.get("attempts")),
        "accepted_mutations": _count(data.get("accepted_mutations")),
        "cache_hits": _count(data.get("cache_hits")),
        "runs": _count(execution.get("oracle_samples")),
        "budget_exhausted": _bool(execution.get("budget_exhausted")),
        "holdout_planned_runs": _count(holdout.get("planned_runs")),
        "holdout_completed_runs": _count(holdout.get("completed_runs")),
        "holdout_passes": _count(holdout.get("passes")),
        "payload_fingerprint_verified": result.payload_fingerprint_verified,
        "payload_fingerprint_mode": result.payload_fingerprint_mode,
    }
    return summary


def safe_version(value: Any) -> str | None:
    """``repomin_version`` when it is a short PEP 440 version, else None (never copied raw)."""
    if not isinstance(value, str) or len(value) > MAX_VERSION_LENGTH:
        return None
    return value if _VERSION.match(value) else None


def oracle_mode(report: Mapping[str, Any]) -> str | None:
    """The enumerated oracle mode, with :attr:`FailureSpec.oracle_mode` semantics.

    From ``failure_spec`` when present (a signature flag wins, then match and/or exit code);
    for legacy reports from the one recorded signature, else ``match`` when a match is recorded.
    None when the contract is unusable (several signature modes, nothing configured).
    """
    spec = report.get("failure_spec")
    if isinstance(spec, Mapping):
        flags = [flag for flag in SIGNATURE_FLAGS if spec.get(flag) is True]
        if len(flags) > 1:
            return None
        if flags:
            return flags[0]
        has_match = isinstance(spec.get("match"), str)
        has_exit = _count(spec.get("exit_code"), signed=True) is not None
        if has_match and has_exit:
            return "match_and_exit_code"
        if has_match:
            return "match"
        return "exit_code" if has_exit else None
    if spec is not None:
        return None
    recorded = [flag for flag in SIGNATURE_FLAGS if f"{flag}_signature" in report]
    if len(recorded) == 1:
        return recorded[0]
    if not recorded and isinstance(report.get("failure_match"), str):
        return "match"
    return None


def retention_ratio(kept: int | None, source: int | None) -> float | None:
    """``kept / source`` rounded to six decimals; None for a zero or unusable denominator."""
    if kept is None or source is None or source == 0:
        return None
    try:
        ratio = kept / source
    except OverflowError:
        return None
    return round(ratio, 6) if math.isfinite(ratio) else None


def render_markdown(summary: Mapping[str, Any]) -> str:
    """The shareable table: :data:`MARKDOWN_ROWS` only, each value escaped; deterministic."""
    lines = ["## ReproMin report summary", "", "| Field | Value |", "| --- | --- |"]
    no_payload = summary.get("payload_path") is None
    for label, key in MARKDOWN_ROWS:
        fingerprint_field = key.startswith("payload_fingerprint")
        cell = "n/a" if no_payload and fingerprint_field else _cell(summary.get(key))
        lines.append(f"| {escape_cell(label)} | {cell} |")
    lines += [
        "",
        "Descriptive metadata from a validated report; not a proof of correctness.",
        "",
    ]
    return "\n".join(lines)


def escape_cell(text: str) -> str:
    """Escape ``text`` for one Markdown table cell: no markup, no HTML, no line breaks."""
    out: list[str] = []
    for ch in text:
        if ch in "\r\n\t\v\f\u2028\u2029" or not ch.isprintable():
            out.append(" ")
        elif ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in "\\`*_[]|~":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return escape_cell(f"{value:.6f}")
    return escape_cell(str(value))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any, *, signed: bool = False) -> int | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if abs(value) >= _INT_LIMIT or (value < 0 and not signed):
        return None
    return value


def _difference(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return None
    return a - b


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _choice(value: Any, allowed: tuple[str, ...]) -> str | None:
    return value if isinstance(value, str) and value in allowed else None
