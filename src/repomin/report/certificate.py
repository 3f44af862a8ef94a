"""The holdout certificate: a replay's exact test, written down so that anyone can check it.

``repomin report replay REPORT --payload OUTPUT --min-rate P0 --certificate PATH`` runs the
payload's recorded command on fresh copies, as a reduction's holdout does, and writes what it
saw to ``PATH`` (never into the report: the report is the reduction's record and is not
rewritten after the fact). A certificate holds

- ``holdout_certification``: the report's holdout object, made by the same function
  (:func:`repomin.sampling.holdout.holdout_record`, policy ``holdout-exact-binomial-v1``), so
  every rule the validator applies to a report's holdout applies to it unchanged;
- ``report_sha256``: the SHA-256 of the report file's bytes (the very bytes that were validated
  and replayed), which ties it to one report;
- the payload's fingerprints, as the holdout's ``artifact_*`` fields: computed by
  :func:`repomin.report.fingerprint.fingerprint`, the report's own function, and
  ``payload_fingerprint_mode``: ``exact`` when the complete fingerprint is the report's,
  ``content`` when only the content fingerprint is (the payload came through a transport that
  rewrote modes or mtimes);
- ``environment``: the boundary the runs had (backend, sample isolation, HOME, timeout,
  dispatch, Docker image, the environment names and whether the values agreed with the report's
  digest, and the runner's own description); the concurrency is the holdout's ``jobs``;
- ``repomin_version`` and ``created_utc``.

It is written only after every planned run completed (an interruption or a backend failure
writes nothing, so a certificate never has an ``interrupted`` status), atomically, through a
descriptor of its directory: a link at ``PATH`` is replaced, never followed.
:func:`check_certificate` is the validator's side (rule ids in :data:`CERTIFICATE_RULES`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from repomin import __version__
from repomin.errors import UsageError
from repomin.report.fingerprint import Fingerprint
from repomin.report.holdout_rules import check_holdout
from repomin.report.io import json_bytes, load_schema, write_atomic_at
from repomin.report.replay import ReplayPlan
from repomin.report.rules import RULES, Problem, is_int, json_type
from repomin.report.validate import ReportLoadError, parse_report, read_report
from repomin.sampling.holdout import HoldoutConfig, holdout_record

__all__ = [
    "CERTIFICATE_KIND",
    "CERTIFICATE_RULES",
    "CERTIFICATE_SCHEMA_VERSION",
    "build_certificate",
    "check_certificate",
    "check_destination",
    "environment_record",
    "validate_certificate_file",
    "write_certificate",
]

CERTIFICATE_SCHEMA_VERSION = 1
SUPPORTED_CERTIFICATE_VERSIONS = frozenset({CERTIFICATE_SCHEMA_VERSION})
CERTIFICATE_KIND = "repomin-holdout-certificate"
#: The report's holdout rules a certificate can break: the schema already demands the status
#: ``certified`` or ``rejected`` and the whole terminal group, and the artifact fingerprints are
#: compared with the report's by ``certificate.artifact``.
_HOLDOUT_RULES = tuple(
    rule
    for rule in RULES
    if rule.startswith("holdout.")
    and rule not in ("holdout.not_requested", "holdout.terminal_group", "holdout.artifact")
)

CERTIFICATE_RULES: dict[str, str] = {
    "certificate.json": (
        "the certificate file can be read, is at most 64 MiB and is strict JSON (UTF-8, no "
        "duplicate key, no NaN)"
    ),
    "certificate.schema_version": "certificate_schema_version is present and supported",
    "certificate.schema": (
        "the certificate matches the shipped certificate schema (its holdout is the report's "
        "holdout format, complete)"
    ),
    "certificate.report": "report_sha256 is the SHA-256 of the report file being validated",
    "certificate.artifact": (
        "the certified payload is the report's: content fingerprint always, complete "
        "fingerprint too when payload_fingerprint_mode is exact"
    ),
    "certificate.complete": "every planned run completed, none interrupted",
    **{f"certificate.{rule}": RULES[rule] for rule in _HOLDOUT_RULES},
}


# -- writing ----------------------------------------------------------------------------------


def environment_record(
    plan: ReplayPlan,
    described: Mapping[str, Any],
    *,
    cluster: bool,
    environment_verified: bool | None,
) -> dict[str, Any]:
    """The boundary the runs had: the plan's, and what the runner says about itself."""
    isolation = described.get("sample_isolation")
    return {
        "backend": plan.backend,
        "sample_isolation": isolation if isinstance(isolation, str) else "unknown",
        "home": plan.runs_home,
        "timeout_seconds": plan.timeout,
        "dispatch_engine": "dask" if cluster else "local",
        "docker_image_id": plan.docker_image_id,
        "environment_names": list(plan.environment_names),
        "environment_digest_verified": environment_verified,
        "runner": {key: _plain(value) for key, value in described.items()},
    }


def _plain(value: Any) -> Any:
    """A runner description's value as JSON (anything else as its text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def build_certificate(
    *,
    samples: Sequence[dict[str, Any]],
    min_rate: float,
    alpha: float,
    jobs: int,
    artifact: Fingerprint,
    report: Mapping[str, Any],
    report_sha256: str,
    environment: dict[str, Any],
    now: datetime | None = None,
) -> dict[str, Any]:
    """The certificate of ``samples`` (one holdout sample record per planned run, in order)."""
    hold = holdout_record(
        HoldoutConfig(len(samples), min_rate, alpha), list(samples), artifact, jobs
    )
    if hold["status"] not in ("certified", "rejected"):
        raise ValueError(f"a certificate needs every run; the holdout is {hold['status']}")
    output = report.get("output", {})
    exact = artifact.tree_sha256 == output.get("tree_sha256")
    moment = now or datetime.now(UTC)
    certificate = {
        "certificate_schema_version": CERTIFICATE_SCHEMA_VERSION,
        "kind": CERTIFICATE_KIND,
        "repomin_version": __version__,
        "created_utc": moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "report_sha256": report_sha256,
        "payload_fingerprint_mode": "exact" if exact else "content",
        "environment": environment,
        "holdout_certification": hold,
    }
    problems = check_certificate(certificate, report, report_sha256)
    if problems:  # the writer's own output must pass the validator: an internal error
        raise AssertionError(f"the certificate does not validate: {problems[0]}")
    return certificate


def check_destination(path: Path, *, payload: Path, report: Path) -> None:
    """Refuse (exit 2, before anything runs) a ``--certificate`` path that cannot be written
    or must not be: its directory missing, a directory at it, inside the payload (the file
    would change the tree it certifies) or the report itself."""
    parent = path.absolute().parent
    if not parent.is_dir():
        raise UsageError(
            f"--certificate {path}: its directory {parent} does not exist; create it or choose "
            "another path"
        )
    if path.is_dir() and not path.is_symlink():
        raise UsageError(f"--certificate {path} is a directory; name a file, e.g. {path}/cert.json")
    where = parent.resolve() / path.name
    if where.is_relative_to(payload.resolve()):
        raise UsageError(
            f"--certificate {path} lies inside the payload, which it would change; write it "
            "beside the payload (e.g. in OUTPUT.repomin/)"
        )
    if where == report.resolve():
        raise UsageError(
            f"--certificate {path} is the report; the report is never rewritten: choose "
            "another path"
        )


def write_certificate(path: Path, certificate: Mapping[str, Any]) -> None:
    """Write atomically (a fresh temporary sibling, fsynced, renamed over ``path``) through a
    descriptor of the directory: a symlink at ``path`` is replaced, never written through."""
    fd = os.open(path.absolute().parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_atomic_at(fd, path.name, json_bytes(certificate))
    finally:
        os.close(fd)


# -- checking ---------------------------------------------------------------------------------


@cache
def _validator() -> Any:
    """The certificate schema, with the report schema registered for its holdout ``$ref``."""
    import json

    import jsonschema
    from referencing import Registry, Resource

    text = resources.files("repomin.report").joinpath("certificate.schema.json").read_text("utf-8")
    report_schema = load_schema()
    registry: Registry[Any] = Registry().with_resource(
        report_schema["$id"], Resource.from_contents(report_schema)
    )
    return jsonschema.Draft202012Validator(json.loads(text), registry=registry)


def _schema_problems(certificate: Any) -> list[Problem]:
    errors = sorted(_validator().iter_errors(certificate), key=lambda e: list(e.absolute_path))
    return [
        Problem(
            "certificate.schema",
            f"{'/'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}",
        )
        for e in errors
    ]


def check_certificate(
    certificate: Any, report: Mapping[str, Any] | None, report_sha256: str | None
) -> list[Problem]:
    """Every certificate rule, in a fixed order: the version, the schema (and nothing further
    on a certificate that does not match it), then the report's digest, the payload's
    fingerprints, completeness and the report's holdout rules, statistics recomputed. Checks
    that need the report are skipped when it could not be read (``None``): its own problem is
    reported already."""
    if not isinstance(certificate, dict):
        return [
            Problem("certificate.schema", f"the certificate is a JSON {json_type(certificate)}")
        ]
    version = certificate.get("certificate_schema_version")
    if not is_int(version) or version not in SUPPORTED_CERTIFICATE_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_CERTIFICATE_VERSIONS))
        shown = "missing" if version is None else repr(version)
        return [
            Problem(
                "certificate.schema_version",
                f"certificate_schema_version {shown} is not supported (this ReproMin reads "
                f"{supported})",
            )
        ]
    structural = _schema_problems(certificate)
    if structural:
        return structural
    hold: dict[str, Any] = certificate["holdout_certification"]
    problems: list[Problem] = []
    if report_sha256 is not None and certificate["report_sha256"] != report_sha256:
        problems.append(
            Problem(
                "certificate.report",
                f"report_sha256 {certificate['report_sha256'][:12]}… is not this report's "
                f"SHA-256 {report_sha256[:12]}…: the certificate is for another report, or the "
                "report changed since",
            )
        )
    if report is not None:
        problems += _artifact(certificate, hold, report)
    problems += _complete(hold)
    problems += [
        Problem(f"certificate.{p.rule}", p.message)
        for p in check_holdout({"holdout_certification": hold, "output": {}})
    ]
    return problems


def _artifact(
    certificate: Mapping[str, Any], hold: Mapping[str, Any], report: Mapping[str, Any]
) -> list[Problem]:
    output = report.get("output")
    output = output if isinstance(output, Mapping) else {}
    if "tree_content_sha256" not in output:
        return [
            Problem(
                "certificate.artifact",
                "the report records no payload fingerprint (output.tree_content_sha256), so no "
                "certificate can be tied to its payload",
            )
        ]
    pairs = [("artifact_tree_content_sha256", "tree_content_sha256")]
    if certificate["payload_fingerprint_mode"] == "exact":
        pairs.append(("artifact_tree_sha256", "tree_sha256"))
    return [
        Problem(
            "certificate.artifact",
            f"holdout_certification.{field} differs from the report's output.{out_field}: the "
            "certified payload is not the report's",
        )
        for field, out_field in pairs
        if hold[field] != output.get(out_field)
    ]


def _complete(hold: Mapping[str, Any]) -> list[Problem]:
    planned, completed = hold["planned_runs"], hold["completed_runs"]
    interrupted = hold["interrupted"]
    if completed != planned or interrupted:
        return [
            Problem(
                "certificate.complete",
                f"{completed} of {planned} planned runs completed ({interrupted} interrupted); a "
                "certificate records every planned run",
            )
        ]
    return []


def validate_certificate_file(
    path: Path, report: Mapping[str, Any] | None, report_sha256: str | None
) -> tuple[Any, list[Problem]]:
    """Load ``path`` strictly and check it against ``report``: ``(data or None, problems)``;
    every problem names the file."""
    try:
        data = parse_report(read_report(path), path)
    except ReportLoadError as exc:
        message = exc.problem.message
        shown = message if str(path) in message else f"{path}: {message}"
        return None, [Problem("certificate.json", shown)]
    problems = [
        Problem(p.rule, f"{path}: {p.message}")
        for p in check_certificate(data, report, report_sha256)
    ]
    return data, problems
