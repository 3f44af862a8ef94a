"""The certificate's writer and rules (``repomin.report.certificate``) on the stored v1 report.

Every rule's breaking case through the CLI is in ``test_validate_corpus.py``; here: what the
writer makes (the report's holdout, made by the same function, and its own check), what it
refuses, where it writes (atomically, never through a link, never into the payload or over the
report), and the checks that depend on what is known about the report.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.errors import UsageError
from repomin.report.certificate import (
    CERTIFICATE_KIND,
    build_certificate,
    check_certificate,
    check_destination,
    validate_certificate_file,
    write_certificate,
)
from repomin.report.fingerprint import Fingerprint
from repomin.report.holdout_rules import check_holdout
from repomin.sampling.holdout import interrupted_record

V1 = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "v1.json"
ENVIRONMENT: dict[str, Any] = {
    "backend": "host",
    "sample_isolation": "namespace",
    "home": "fresh",
    "timeout_seconds": 60.0,
    "dispatch_engine": "local",
    "docker_image_id": None,
    "environment_names": [],
    "environment_digest_verified": None,
    "runner": {"backend": "host", "sample_isolation": "namespace"},
}


def report() -> tuple[bytes, dict[str, Any]]:
    raw = V1.read_bytes()
    data: dict[str, Any] = json.loads(raw)
    return raw, data


def artifact(data: dict[str, Any], complete: str | None = None) -> Fingerprint:
    out = data["output"]
    return Fingerprint(
        out["files"], out["bytes"], complete or out["tree_sha256"], out["tree_content_sha256"]
    )


def certificate(min_rate: float = 0.5, **kw: Any) -> dict[str, Any]:
    raw, data = report()
    args: dict[str, Any] = {
        "samples": data["holdout_certification"]["samples"],
        "min_rate": min_rate,
        "alpha": 0.05,
        "jobs": 2,
        "artifact": artifact(data),
        "report": data,
        "report_sha256": hashlib.sha256(raw).hexdigest(),
        "environment": ENVIRONMENT,
    }
    args.update(kw)
    return build_certificate(**args)


def test_the_holdout_is_the_reports_holdout_made_by_the_same_function() -> None:
    raw, data = report()
    made = certificate(now=datetime(2026, 12, 1, 9, 30, 5, tzinfo=UTC))
    assert made["certificate_schema_version"] == 1 and made["kind"] == CERTIFICATE_KIND
    assert made["created_utc"] == "2026-12-01T09:30:05Z"
    assert made["report_sha256"] == hashlib.sha256(raw).hexdigest()
    assert made["payload_fingerprint_mode"] == "exact"
    # the reduction's holdout of the same six runs at the same p0 and alpha, field for field
    assert made["holdout_certification"] == data["holdout_certification"]
    assert check_certificate(made, data, made["report_sha256"]) == []


def test_a_rejected_test_is_a_valid_certificate() -> None:
    made = certificate(min_rate=0.9)  # 6/6 cannot show p >= 0.9 at 0.05: 0.9^6 = 0.53
    hold = made["holdout_certification"]
    assert hold["status"] == "rejected" and hold["exact_gate_passed"] is False
    assert hold["k_crit"] == 7 and hold["p_value"] == pytest.approx(0.9**6)
    assert check_certificate(made, report()[1], made["report_sha256"]) == []


def test_a_payload_that_matched_by_content_only_is_recorded_so() -> None:
    _raw, data = report()
    made = certificate(artifact=artifact(data, complete="ab" * 32))
    assert made["payload_fingerprint_mode"] == "content"
    assert made["holdout_certification"]["artifact_tree_sha256"] == "ab" * 32
    assert check_certificate(made, data, made["report_sha256"]) == []
    exact = copy.deepcopy(made)
    exact["payload_fingerprint_mode"] = "exact"  # a claim the fingerprints do not back
    assert [p.rule for p in check_certificate(exact, data, None)] == ["certificate.artifact"]


def test_the_writer_refuses_runs_that_did_not_all_complete() -> None:
    _raw, data = report()
    samples = [*data["holdout_certification"]["samples"][:5], interrupted_record(6)]
    with pytest.raises(ValueError, match="needs every run; the holdout is interrupted"):
        certificate(samples=samples)


def test_checks_that_need_the_report_wait_for_it() -> None:
    made = certificate()
    made["report_sha256"] = "00" * 32
    made["holdout_certification"]["artifact_tree_content_sha256"] = "11" * 32
    rules = {p.rule for p in check_certificate(made, report()[1], "22" * 32)}
    assert rules == {"certificate.report", "certificate.artifact"}
    # the report could not be read: its own problem is reported, nothing is compared with it
    assert check_certificate(made, None, None) == []


def test_a_legacy_report_without_fingerprints_cannot_have_a_certificate() -> None:
    made = certificate()
    _raw, legacy = report()
    for key in ("tree_sha256", "tree_content_sha256"):
        del legacy["output"][key]
    problems = check_certificate(made, legacy, None)
    assert [p.rule for p in problems] == ["certificate.artifact"]
    assert "records no payload fingerprint" in problems[0].message


def test_the_recorded_holdout_rules_are_the_reports() -> None:
    def edit(hold: dict[str, Any]) -> None:
        hold["samples"][4]["index"] = 6
        hold["samples"][5]["index"] = 5
        hold["lower_bound"] = 0.5

    made = certificate()
    edit(made["holdout_certification"])
    rules = [p.rule for p in check_certificate(made, report()[1], None)]
    assert rules == ["certificate.holdout.indexes", "certificate.holdout.recomputed"]
    # the same edits in the report's own holdout break the report's rules of the same names
    _raw, data = report()
    edit(data["holdout_certification"])
    assert [p.rule for p in check_holdout(data)] == ["holdout.indexes", "holdout.recomputed"]


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "cert.json"
    with path.open("wb") as fh:
        fh.truncate((64 << 20) + 1)  # sparse: costs no disk, would cost 64 MiB to read
    data, problems = validate_certificate_file(path, report()[1], None)
    assert data is None
    assert [(p.rule, p.message) for p in problems] == [
        ("certificate.json", f"{path}: {(64 << 20) + 1} bytes is larger than 64 MiB")
    ]


def test_a_missing_file_is_one_problem(tmp_path: Path) -> None:
    _data, problems = validate_certificate_file(tmp_path / "nope.json", None, None)
    assert [p.rule for p in problems] == ["certificate.json"]
    assert problems[0].message.startswith(f"cannot read {tmp_path / 'nope.json'}")


def test_destination_refusals(tmp_path: Path) -> None:
    payload, sidecar = tmp_path / "out", tmp_path / "out.repomin"
    (payload / "sub").mkdir(parents=True)
    sidecar.mkdir()
    rep = sidecar / "report.json"
    rep.write_text("{}")
    cases = {
        tmp_path / "missing" / "cert.json": "its directory",
        sidecar: "is a directory",
        payload / "sub" / "cert.json": "lies inside the payload",
        rep: "is the report",
    }
    for path, expect in cases.items():
        with pytest.raises(UsageError, match=expect):
            check_destination(path, payload=payload, report=rep)
    # a link into the payload's directory is resolved before the check
    (tmp_path / "into").symlink_to(payload / "sub")
    with pytest.raises(UsageError, match="inside the payload"):
        check_destination(tmp_path / "into" / "cert.json", payload=payload, report=rep)
    check_destination(sidecar / "cert.json", payload=payload, report=rep)  # beside: fine


def test_writing_replaces_a_link_and_never_follows_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    path = tmp_path / "cert.json"
    path.symlink_to(victim)
    made = certificate()
    write_certificate(path, made)
    assert victim.read_text() == "keep me\n"
    assert not path.is_symlink() and json.loads(path.read_text()) == made
    assert sorted(os.listdir(tmp_path)) == ["cert.json", "victim.txt"]  # no temporary left


def test_hostile_text_in_a_valid_certificate_is_printed_escaped(tmp_path: Path) -> None:
    made = certificate()
    made["environment"]["sample_isolation"] = "\x1b[2Jfine\u202e"
    rep, cert = tmp_path / "report.json", tmp_path / "cert.json"
    rep.write_bytes(V1.read_bytes())
    cert.write_text(json.dumps(made))
    result = CliRunner().invoke(cli, ["report", "validate", str(rep), "--certificate", str(cert)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert "host backend (\\x1b[2Jfine\\u202e)" in result.stdout


def test_json_summary_is_invalid_with_an_invalid_certificate(tmp_path: Path) -> None:
    made = certificate()
    made["holdout_certification"]["p_value"] = 0.5
    rep, cert = tmp_path / "report.json", tmp_path / "cert.json"
    rep.write_bytes(V1.read_bytes())
    cert.write_text(json.dumps(made))
    args = ["report", "validate", str(rep), "--certificate", str(cert)]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["valid"] is False
    assert "certificate.holdout.recomputed: " in result.stderr
    markdown = CliRunner().invoke(cli, [*args, "--format", "markdown"])
    assert markdown.exit_code == 2 and markdown.stdout == ""


def test_several_certificates_are_each_checked(tmp_path: Path) -> None:
    rep = tmp_path / "report.json"
    rep.write_bytes(V1.read_bytes())
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(certificate()))
    other = certificate()
    other["report_sha256"] = "00" * 32
    bad.write_text(json.dumps(other))
    args = ["report", "validate", str(rep), "--certificate", str(good), "--certificate"]
    result = CliRunner().invoke(cli, [*args, str(bad)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"repomin: error: certificate.report: {bad}: report_sha256 000000000000… is not this "
        f"report's SHA-256 {hashlib.sha256(V1.read_bytes()).hexdigest()[:12]}…: the "
        "certificate is for another report, or the report changed since"
    ]
    both = CliRunner().invoke(cli, [*args, str(good)])
    assert both.exit_code == 0 and both.stdout.count("repomin: certificate valid: ") == 2
