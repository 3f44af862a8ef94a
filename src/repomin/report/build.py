"""Assemble ``report.json`` from what a reduction recorded (``REPOMIN.md`` is rendered from
the report by :mod:`repomin.report.human`).

Everything here is derived from recorded counts and configuration; nothing is assigned by hand.
The written report is checked against the shipped schema before it is written.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repomin import __version__
from repomin.errors import ReportError
from repomin.failure.contract import FailureContract
from repomin.report.fingerprint import COMPLETE_POLICY, CONTENT_POLICY, Fingerprint
from repomin.report.io import SCHEMA_VERSION, structural_errors
from repomin.sampling.accounting import Ledger

#: How ``execution.environment_sha256`` is made in a report of this version (additive fields
#: ``environment_digest_scheme``, ``environment_digest_salt``, ``environment_digest_parameters``).
#: A report without them is ``repomin-env-v1``: the unsalted :func:`environment_digest`.
ENVIRONMENT_SCHEME = "repomin-env-scrypt-v2"
#: scrypt's cost: 128 MiB and about 0.4 s per evaluation on a 2-core reference machine.
SCRYPT_PARAMETERS: Mapping[str, int] = {"n": 1 << 17, "r": 8, "p": 1}
SALT_BYTES = 16


def environment_digest(env: Mapping[str, str]) -> str:
    """``repomin-env-v1``: SHA-256 of ``repomin-env-v1\\n`` then ``NAME\\0VALUE\\n`` per name in
    sorted order. Unsalted and fast, so a low-entropy value can be guessed from it: reports are
    no longer written with it (legacy reports are still checked with it); sessions, which stay
    on this machine, use it to recognise their configuration."""
    h = hashlib.sha256(b"repomin-env-v1\n")
    for name in sorted(env):
        h.update(name.encode() + b"\0" + env[name].encode() + b"\n")
    return h.hexdigest()


def environment_scrypt(env: Mapping[str, str], salt: bytes, *, n: int, r: int, p: int) -> str:
    """``repomin-env-scrypt-v2``: scrypt (RFC 7914, 32 bytes) of ``repomin-env-scrypt-v2\\n``
    then ``NAME\\0VALUE\\n`` per name in sorted order (UTF-8; bytes that are not UTF-8 as the
    environment holds them), with the report's random ``salt``."""
    records = b"".join(
        name.encode("utf-8", "surrogateescape")
        + b"\0"
        + env[name].encode("utf-8", "surrogateescape")
        + b"\n"
        for name in sorted(env)
    )
    password = ENVIRONMENT_SCHEME.encode() + b"\n" + records
    maxmem = 2 * 128 * r * (n + p) + (1 << 20)
    return hashlib.scrypt(password, salt=salt, n=n, r=r, p=p, maxmem=maxmem, dklen=32).hex()


def environment_fields(env: Mapping[str, str], *, salt: bytes | None = None) -> dict[str, Any]:
    """The report's digest of the explicit values with a fresh random salt (values never leave
    the machine): ``environment_sha256`` and the fields that say how it was made. Without an
    explicit variable there is no value to guess: the digest of nothing is the fast v1 one
    (no scheme fields), which spares every such report scrypt's 0.4 s and 128 MiB."""
    if not env:
        return {"environment_sha256": environment_digest(env)}
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    return {
        "environment_sha256": environment_scrypt(env, salt, **SCRYPT_PARAMETERS),
        "environment_digest_scheme": ENVIRONMENT_SCHEME,
        "environment_digest_salt": salt.hex(),
        "environment_digest_parameters": dict(SCRYPT_PARAMETERS),
    }


def environment_verifies(execution: Mapping[str, Any], env: Mapping[str, str]) -> bool | None:
    """Whether ``env`` hashes to the digest ``execution`` records, by its scheme (a report
    without one: v1). ``None``: nothing to compare (no digest, or a scheme this build does not
    know). ``execution`` must have passed validation: the schema bounds scrypt's cost."""
    recorded = execution.get("environment_sha256")
    if not isinstance(recorded, str):
        return None
    scheme = execution.get("environment_digest_scheme")
    if scheme is None:
        return hmac.compare_digest(environment_digest(env), recorded)
    if scheme != ENVIRONMENT_SCHEME:
        return None
    cost = execution["environment_digest_parameters"]
    salt = bytes.fromhex(execution["environment_digest_salt"])
    digest = environment_scrypt(env, salt, n=int(cost["n"]), r=int(cost["r"]), p=int(cost["p"]))
    return hmac.compare_digest(digest, recorded)


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
    #: The operating system and tool versions (``app.versions``), additive.
    tool_versions: dict[str, str] | None = None
    #: The failing output's identifying lines (``report.excerpt.Excerpt.to_json``), additive.
    failure_excerpt: dict[str, Any] | None = None


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
    if inputs.failure_excerpt is not None:
        report["failure_excerpt"] = inputs.failure_excerpt
    if inputs.contract.identity is not None:
        report["failure_identity"] = inputs.contract.identity.to_json()
    history = ledger.size_history()  # additive: what the report's pictures draw
    if history is not None:
        report["size_history"] = history
    problems = structural_errors(report)
    if problems:
        raise ReportError("internal error: the report does not match its schema: " + problems[0])
    return report
