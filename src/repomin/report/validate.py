"""Validate a report, and optionally its payload, against every rule of the report spec.

:func:`validate_report` returns a :class:`ValidationResult`: the :class:`Problem` s (each names
its rule id, e.g. ``accounting.attempts``; :data:`~repomin.report.rules.RULES` lists them all)
and how the payload's fingerprint matched. Nothing is executed. The order is fixed: the JSON
itself (:func:`load_report`), a supported ``schema_version``, the shipped JSON Schema (one source
of truth with the writer), then the cross-field rules -- only on a structurally valid report, so
that every rule can rely on the types -- and finally the payload (safe entries, counts,
fingerprint). ``payload_fingerprint_verified`` is derived from the fingerprint mode, never set.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from repomin.report.evidence_rules import check_events
from repomin.report.holdout_rules import check_holdout
from repomin.report.io import SUPPORTED_SCHEMA_VERSIONS, structural_errors
from repomin.report.payload import FingerprintMode, check_payload
from repomin.report.rules import (
    RULES,
    Problem,
    check_accounting,
    check_execution,
    check_failure_spec,
    is_int,
    json_type,
    non_finite,
)
from repomin.report.slippage_rules import check_slippage
from repomin.report.user_shell_rules import check_user_shell

__all__ = [
    "RULES",
    "FingerprintMode",
    "Problem",
    "ReportLoadError",
    "ValidationResult",
    "check_report",
    "load_report",
    "parse_report",
    "read_report",
    "validate_file",
    "validate_report",
]

#: Reports larger than this are refused before parsing (a report is kilobytes to megabytes).
MAX_REPORT_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """The problems found and how the payload (when given) was verified.

    ``payload_fingerprint_mode`` is ``exact`` (complete fingerprint matched), ``content`` (only
    the content fingerprint matched: modes or mtimes changed, e.g. in transport),
    ``unavailable`` (the report has no fingerprint: count-only validation) or ``None`` (no
    payload given, or no fingerprint could be compared).
    """

    problems: tuple[Problem, ...]
    payload: Path | None = None
    payload_fingerprint_mode: FingerprintMode | None = None
    #: SHA-256 of the report file's bytes, the very bytes that were parsed and checked (set by
    #: :func:`validate_file` when the file could be read); what a certificate names its report by.
    report_sha256: str | None = None

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def payload_fingerprint_verified(self) -> bool:
        """Derived from the mode: a cryptographic tree match, exact or content-only."""
        return self.payload_fingerprint_mode in ("exact", "content")

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]

    def rules(self) -> set[str]:
        return {p.rule for p in self.problems}


# -- loading ---------------------------------------------------------------------------------


class ReportLoadError(Exception):
    """The file is not a readable JSON report; ``problem`` says why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ReportLoadError(Problem("json.duplicate_key", f"duplicate key {key!r}"))
        result[key] = value
    return result


def _no_constants(name: str) -> Any:
    raise ReportLoadError(Problem("json.non_finite", f"non-finite number {name} (not JSON)"))


def load_report(path: Path) -> Any:
    """Parse a report file strictly. Raises :class:`ReportLoadError` with a one-line problem."""
    return parse_report(read_report(path), path)


def read_report(path: Path) -> bytes:
    """The file's bytes, refused (:class:`ReportLoadError`, ``json.unreadable``) when it cannot
    be read, is not a regular file (a FIFO or a device would block or never end) or is larger
    than 64 MiB -- checked on the opened file before a byte is read, so that a huge (or sparse)
    file costs nothing. Certificates are read with the same limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ReportLoadError(
                    Problem("json.unreadable", f"{path} is not a regular file: give a file")
                )
            if st.st_size > MAX_REPORT_BYTES:
                raise ReportLoadError(
                    Problem("json.unreadable", f"{path}: {st.st_size} bytes is larger than 64 MiB")
                )
            data = fh.read(MAX_REPORT_BYTES + 1)
        if len(data) > MAX_REPORT_BYTES:
            raise ReportLoadError(Problem("json.unreadable", f"{path} grew past 64 MiB"))
        return data
    except OSError as exc:
        raise ReportLoadError(
            Problem("json.unreadable", f"cannot read {path}: {exc.strerror or exc}")
        ) from None


def parse_report(raw: bytes, path: Path) -> Any:
    """Strict JSON of ``raw`` (read from ``path``): UTF-8, no duplicate key, no NaN or infinity.
    Raises :class:`ReportLoadError` with a one-line problem."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportLoadError(
            Problem("json.unreadable", f"{path} is not UTF-8 (byte {exc.start})")
        ) from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise ReportLoadError(
            Problem(
                "json.malformed",
                f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            )
        ) from None
    except (ValueError, RecursionError) as exc:  # e.g. integers beyond the digit limit
        raise ReportLoadError(Problem("json.malformed", f"malformed JSON: {exc}")) from None


# -- entry point -----------------------------------------------------------------------------


def validate_report(
    data: Any, *, payload: Path | None = None, report_path: Path | None = None
) -> ValidationResult:
    """Every rule of the spec on ``data``, then (with ``payload``) the payload checks."""
    problems = list(check_report(data))
    structurally_valid = not problems
    mode: FingerprintMode | None = None
    if payload is not None:
        payload_problems, mode = check_payload(
            data if structurally_valid else None, payload, report_path=report_path
        )
        problems.extend(payload_problems)
    return ValidationResult(tuple(problems), payload, mode)


def check_report(data: Any) -> list[Problem]:
    """The report-only rules (no I/O), in the module's fixed order."""
    if not isinstance(data, dict):
        return [Problem("report.not_object", f"the report is a JSON {json_type(data)}")]
    version = data.get("schema_version")
    if "schema_version" not in data:
        return [Problem("schema_version", "missing schema_version")]
    if not is_int(version):
        return [Problem("schema_version", f"schema_version must be an integer, got {version!r}")]
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_SCHEMA_VERSIONS))
        return [
            Problem(
                "schema_version",
                f"unsupported schema_version {version} (this ReproMin reads {supported})",
            )
        ]
    infinite = [
        Problem("json.non_finite", f"non-finite number at {where}") for where in non_finite(data)
    ]
    if infinite:
        return infinite
    structural = [
        Problem("schema", line.removeprefix("schema: ")) for line in structural_errors(data)
    ]
    if structural:
        return structural
    problems: list[Problem] = []
    problems += check_failure_spec(data)
    problems += check_execution(data)
    problems += check_accounting(data)
    problems += check_holdout(data)
    problems += check_events(data)
    problems += check_slippage(data)
    problems += check_user_shell(data)
    return problems


def validate_file(
    report_path: Path, *, payload: Path | None = None
) -> tuple[Any, ValidationResult]:
    """Load and validate a report file: ``(data or None, result)``; never raises for bad input.

    When the file cannot be parsed, its one problem is reported, and a given payload still gets
    its safety scan (it is never hashed or compared: there is nothing to compare it with).
    ``result.report_sha256`` is the digest of the bytes read, whenever they could be read.
    """
    digest: str | None = None
    try:
        raw = read_report(report_path)
        digest = hashlib.sha256(raw).hexdigest()
        data = parse_report(raw, report_path)
    except ReportLoadError as exc:
        problems = [exc.problem]
        if payload is not None:
            problems += check_payload(None, payload, report_path=report_path)[0]
        return None, ValidationResult(tuple(problems), payload, None, digest)
    result = validate_report(data, payload=payload, report_path=report_path)
    return data, replace(result, report_sha256=digest)
