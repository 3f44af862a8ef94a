"""Assemble ``report.json`` from what a reduction recorded (``REPOMIN.md`` is rendered from
the report by :mod:`repomin.report.human`).

Everything here is derived from recorded counts and configuration; nothing is assigned by hand.
The written report is checked against the shipped schema before it is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repomin import __version__
from repomin.errors import ReportError
from repomin.failure.contract import FailureContract
from repomin.report.fingerprint import COMPLETE_POLICY, CONTENT_POLICY, Fingerprint
from repomin.report.io import SCHEMA_VERSION, structural_errors
from repomin.sampling.accounting import Ledger


def environment_digest(env: Mapping[str, str]) -> str:
    """SHA-256 of ``repomin-env-v1\\n`` then ``NAME\\0VALUE\\n`` per name in sorted order (values
    never leave the machine)."""
    h = hashlib.sha256(b"repomin-env-v1\n")
    for name in sorted(env):
        h.update(name.encode() + b"\0" + env[name].encode() + b"\n")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class ReportInputs:
    command: str
    contract: FailureContract
    baseline_exit_code: int | None
    final_exit_code: int | None
    source_files: int
    source_bytes: int
    output: Fingerprint
    ledger: Ledger
    execution: dict[str, Any]
    holdout: dict[str, Any] = field(default_factory=lambda: {"status": "not_requested"})
    #: Final/holdout rate against the baseline's (``rate_guard.slippage_record``), additive.
    slippage: dict[str, Any] | None = None
    #: The payload in the user's own shell (``app.user_shell.ShellCheck``), additive.
    user_shell: dict[str, Any] | None = None
    #: The operating system and tool versions (``app.versions.probe_versions``), additive.
    tool_versions: dict[str, str] | None = None


def build_report(inputs: ReportInputs) -> dict[str, Any]:
    ledger = inputs.ledger
    spec = inputs.contract.spec
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "repomin_version": __version__,
        "command": inputs.command,
        "failure_match": spec.match,
        "failure_spec": spec.to_json(),
        "baseline_exit_code": inputs.baseline_exit_code,
        "final_exit_code": inputs.final_exit_code,
        "source": {"files": inputs.source_files, "bytes": inputs.source_bytes},
        "output": {
            "files": inputs.output.files,
            "bytes": inputs.output.bytes,
            "tree_sha256": inputs.output.tree_sha256,
            "tree_fingerprint_policy": COMPLETE_POLICY,
            "tree_content_sha256": inputs.output.tree_content_sha256,
            "tree_content_fingerprint_policy": CONTENT_POLICY,
        },
        "attempts": ledger.attempts,
        "accepted_mutations": ledger.accepted,
        "cache_hits": ledger.cache_hits,
        "execution": {**inputs.execution, "cache_hits": ledger.cache_hits},
        "phase_statistics": {
            "coverage": ledger.coverage,
            "phases": [p.to_json() for p in ledger.phases.values()],
        },
        "holdout_certification": inputs.holdout,
        "events": ledger.events,
    }
    if inputs.slippage is not None:
        report["slippage"] = inputs.slippage
    if inputs.user_shell is not None:
        report["user_shell"] = inputs.user_shell
    mode = inputs.contract.mode
    if mode is not None and inputs.contract.signature is not None:
        report[mode.report_field] = inputs.contract.signature
    if inputs.tool_versions is not None:
        report["tool_versions"] = inputs.tool_versions
    if inputs.contract.identity is not None:
        report["failure_identity"] = inputs.contract.identity.to_json()
    problems = structural_errors(report)
    if problems:
        raise ReportError("internal error: the report does not match its schema: " + problems[0])
    return report
