"""The validator's fixture corpus: every rule has a valid case and at least one breaking edit.

Each case of ``tests/fixtures/reports/cases.json`` is written to a file and checked through the
real CLI (``repomin report validate``): valid cases exit 0 and print nothing on stderr; every
invalid case exits 2 and prints a ``repomin: error: RULE: ...`` line naming the broken rule.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.validate import RULES, validate_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
#: Rules that need a payload on disk; tests/unit/test_validate_payload.py covers them.
PAYLOAD_RULES = {rule for rule in RULES if rule.startswith("payload.")}


def _load_corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location("repomin_report_corpus", FIXTURES / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus()
CASES: list[dict[str, Any]] = corpus.load_cases()


def _rules_in(stderr: str) -> set[str]:
    prefix = "repomin: error: "
    lines = [line[len(prefix) :] for line in stderr.splitlines() if line.startswith(prefix)]
    return {line.split(":", 1)[0] for line in lines}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_through_the_cli(case: dict[str, Any], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_bytes(corpus.render(case))
    result = CliRunner().invoke(cli, ["report", "validate", str(report)])
    if case["rule"] is None:
        assert result.exit_code == 0, result.output
        assert result.stderr == ""
        assert result.stdout.startswith("repomin: report valid")
        return
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.startswith("repomin: error: ")]
    assert any(
        line.startswith(f"repomin: error: {case['rule']}: ") and case["expect"] in line
        for line in lines
    ), result.stderr
    if case.get("only", True):
        assert _rules_in(result.stderr) == {case["rule"]}, result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case_in_process_agrees(case: dict[str, Any], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_bytes(corpus.render(case))
    _data, result = validate_file(report)
    if case["rule"] is None:
        assert result.valid, result.lines()
    else:
        assert case["rule"] in result.rules()
        assert all(p.rule in RULES for p in result.problems)


def test_every_report_rule_has_an_invalid_case() -> None:
    broken = {c["rule"] for c in CASES if c["rule"] is not None}
    missing = set(RULES) - PAYLOAD_RULES - broken
    assert not missing, f"rules without a breaking case: {sorted(missing)}"
    assert broken <= set(RULES)


def test_every_base_is_a_valid_case() -> None:
    bases = {c["base"] for c in CASES if "base" in c}
    valid_bases = {c["base"] for c in CASES if c["rule"] is None and len(c) == 3}
    stored = {p.name for p in FIXTURES.glob("*.json") if p.name != "cases.json"}
    assert bases == valid_bases == stored


def test_case_ids_are_unique() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))


def test_json_summary_of_an_invalid_report_says_so(tmp_path: Path) -> None:
    case = next(c for c in CASES if c["id"] == "accounting-totals-accepted")
    report = tmp_path / "report.json"
    report.write_bytes(corpus.render(case))
    result = CliRunner().invoke(cli, ["report", "validate", str(report), "--json"])
    assert result.exit_code == 2
    summary = json.loads(result.stdout)
    assert summary["valid"] is False
    assert summary["summary_schema_version"] == 2
    assert "accounting.totals: " in result.stderr


def test_markdown_of_an_invalid_report_prints_nothing(tmp_path: Path) -> None:
    case = next(c for c in CASES if c["id"] == "holdout-observed-rate")
    report = tmp_path / "report.json"
    report.write_bytes(corpus.render(case))
    result = CliRunner().invoke(cli, ["report", "validate", str(report), "--format", "markdown"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "holdout.observed_rate: " in result.stderr


def test_missing_report_file_is_one_clear_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", "validate", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert result.stderr.startswith("repomin: error: json.unreadable: cannot read ")
    assert len(result.stderr.splitlines()) == 1


def test_sidecar_directory_is_accepted_for_its_report(tmp_path: Path) -> None:
    side = tmp_path / "out.repomin"
    side.mkdir()
    (side / "report.json").write_bytes(corpus.render(CASES[0]))
    result = CliRunner().invoke(cli, ["report", "validate", str(side)])
    assert result.exit_code == 0, result.output


def test_json_and_markdown_are_exclusive(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_bytes(corpus.render(CASES[0]))
    result = CliRunner().invoke(
        cli, ["report", "validate", str(report), "--json", "--format", "markdown"]
    )
    assert result.exit_code == 2
    assert "--json conflicts with --format markdown" in result.stderr


# -- certificates (``validate --certificate``): every rule has a breaking case ------------------
#
# The base certificate is written by the product's own writer for the valid v1 report (its
# certified holdout's six samples replayed as a certificate's runs); each case edits it with the
# corpus's edit language and is checked through the real CLI against that report.

HEX = "0123456789abcdef" * 4
CERTIFICATE_CASES: list[dict[str, Any]] = [
    {"id": "cert-valid", "rule": None},
    {"id": "cert-valid-rejected", "base": "rejected", "rule": None},
    {"id": "cert-valid-content-mode", "rule": None,
     "set": {"payload_fingerprint_mode": "content",
             "holdout_certification/artifact_tree_sha256": HEX}},
    {"id": "cert-not-json", "raw": "certified: yes", "rule": "certificate.json",
     "expect": "malformed JSON at line 1"},
    {"id": "cert-nan", "replace_text": ['"alpha": 0.05', '"alpha": NaN'],
     "rule": "certificate.json", "expect": "non-finite number NaN"},
    {"id": "cert-duplicate-key", "replace_text": ['"min_rate": ', '"passes": 6, "min_rate": '],
     "rule": "certificate.json", "expect": "duplicate key 'passes'", "only": True},
    {"id": "cert-not-utf8", "raw_hex": "7b22ff227d", "rule": "certificate.json",
     "expect": "is not UTF-8"},
    {"id": "cert-version", "set": {"certificate_schema_version": 2},
     "rule": "certificate.schema_version", "expect": "certificate_schema_version 2 is not"},
    {"id": "cert-version-missing", "delete": ["certificate_schema_version"],
     "rule": "certificate.schema_version", "expect": "missing is not supported"},
    {"id": "cert-array", "raw": "[]", "rule": "certificate.schema",
     "expect": "the certificate is a JSON array"},
    {"id": "cert-interrupted-status", "set": {"holdout_certification/status": "interrupted"},
     "rule": "certificate.schema", "expect": "holdout_certification/status"},
    {"id": "cert-no-terminal-group", "delete": ["holdout_certification/p_value"],
     "rule": "certificate.schema", "expect": "'p_value' is a required property"},
    {"id": "cert-no-environment", "delete": ["environment"], "rule": "certificate.schema",
     "expect": "'environment' is a required property"},
    {"id": "cert-wrong-digest", "set": {"report_sha256": HEX}, "rule": "certificate.report",
     "expect": "is not this report's SHA-256"},
    {"id": "cert-other-payload",
     "set": {"holdout_certification/artifact_tree_content_sha256": HEX},
     "rule": "certificate.artifact", "expect": "artifact_tree_content_sha256 differs"},
    {"id": "cert-exact-mode-other-tree",
     "set": {"holdout_certification/artifact_tree_sha256": HEX},
     "rule": "certificate.artifact", "expect": "artifact_tree_sha256 differs"},
    {"id": "cert-incomplete", "add": {"holdout_certification/planned_runs": 1},
     "rule": "certificate.complete", "expect": "6 of 7 planned runs completed", "only": False},
    {"id": "cert-certified-incomplete", "add": {"holdout_certification/planned_runs": 1},
     "rule": "certificate.holdout.certified", "expect": "certified after 6 of 7",
     "only": False},
    {"id": "cert-holdout-version", "set": {"holdout_certification/schema_version": 2},
     "rule": "certificate.holdout.schema_version", "expect": "schema_version 2"},
    {"id": "cert-passes-above-completed", "set": {"holdout_certification/passes": 7},
     "rule": "certificate.holdout.runs", "expect": "passes 7 exceeds completed_runs 6",
     "only": False},
    {"id": "cert-indexes-not-contiguous",
     "set": {"holdout_certification/samples/2/index": 4,
             "holdout_certification/samples/3/index": 3},
     "rule": "certificate.holdout.indexes", "expect": "first break at position 3"},
    {"id": "cert-index-gap", "set": {"holdout_certification/samples/5/index": 9},
     "rule": "certificate.holdout.indexes", "expect": "not 1..6 in order"},
    {"id": "cert-sample-flag", "set": {"holdout_certification/samples/0/accepted": False},
     "rule": "certificate.holdout.sample_outcome",
     "expect": "sample 1: outcome 'passed' disagrees with accepted"},
    {"id": "cert-edited-passes", "add": {"holdout_certification/passes": -1},
     "rule": "certificate.holdout.aggregates", "expect": "passes 5 != 6 samples",
     "only": False},
    {"id": "cert-ordinary-failures", "add": {"holdout_certification/ordinary_failures": 1},
     "rule": "certificate.holdout.ordinary_failures", "expect": "ordinary_failures 1 != 0",
     "only": False},
    {"id": "cert-observed-rate", "set": {"holdout_certification/observed_rate": 0.5},
     "rule": "certificate.holdout.observed_rate", "expect": "passes / planned_runs"},
    {"id": "cert-confidence", "set": {"holdout_certification/confidence": 0.9},
     "rule": "certificate.holdout.confidence", "expect": "!= 1 - alpha"},
    {"id": "cert-lower-bound", "set": {"holdout_certification/lower_bound": 0.7},
     "rule": "certificate.holdout.recomputed", "expect": "lower_bound 0.7 != exact"},
    {"id": "cert-p-value", "set": {"holdout_certification/p_value": 0.001},
     "rule": "certificate.holdout.recomputed", "expect": "p_value 0.001 != exact"},
    {"id": "cert-min-rate", "set": {"holdout_certification/min_rate": 0.3},
     "rule": "certificate.holdout.recomputed", "expect": "at min_rate 0.3", "only": False},
    {"id": "cert-gate", "base": "rejected",
     "set": {"holdout_certification/exact_gate_passed": True},
     "rule": "certificate.holdout.exact_gate", "expect": "exact test on 6/6", "only": False},
    {"id": "cert-status", "base": "rejected", "set": {"holdout_certification/status": "certified"},
     "rule": "certificate.holdout.status", "expect": "certified but exact_gate_passed false"},
]  # fmt: skip


def _certificate_bases() -> tuple[bytes, dict[str, dict[str, Any]]]:
    """The v1 report's bytes and the certificates the writer makes for it (p0 0.5: certified,
    p0 0.9: six of six runs do not reach it)."""
    from repomin.report.certificate import build_certificate
    from repomin.report.fingerprint import Fingerprint

    raw = corpus.render(CASES[0])
    report = json.loads(raw)
    out = report["output"]
    artifact = Fingerprint(
        out["files"], out["bytes"], out["tree_sha256"], out["tree_content_sha256"]
    )
    environment = {
        "backend": "host", "sample_isolation": "namespace", "home": "fresh",
        "timeout_seconds": 60.0, "dispatch_engine": "local", "docker_image_id": None,
        "environment_names": ["REPOMIN_FIXTURE_TOKEN"], "environment_digest_verified": True,
        "runner": {"backend": "host", "sample_isolation": "namespace"},
    }  # fmt: skip
    bases = {
        name: build_certificate(
            samples=report["holdout_certification"]["samples"],
            min_rate=p0,
            alpha=0.05,
            jobs=2,
            artifact=artifact,
            report=report,
            report_sha256=hashlib.sha256(raw).hexdigest(),
            environment=environment,
        )
        for name, p0 in (("certified", 0.5), ("rejected", 0.9))
    }
    return raw, bases


@pytest.mark.parametrize("case", CERTIFICATE_CASES, ids=[c["id"] for c in CERTIFICATE_CASES])
def test_certificate_case_through_the_cli(case: dict[str, Any], tmp_path: Path) -> None:
    raw, bases = _certificate_bases()
    report, certificate = tmp_path / "report.json", tmp_path / "cert.json"
    report.write_bytes(raw)
    certificate.write_bytes(corpus.render(case, bases[case.get("base", "certified")]))
    args = ["report", "validate", str(report), "--certificate", str(certificate)]
    result = CliRunner().invoke(cli, args)
    if case["rule"] is None:
        assert result.exit_code == 0, result.output
        assert result.stderr == ""
        status = bases[case.get("base", "certified")]["holdout_certification"]["status"]
        assert f"repomin: certificate valid: {certificate}: holdout {status}" in result.stdout
        return
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.startswith("repomin: error: ")]
    prefix = f"repomin: error: {case['rule']}: "
    assert any(line.startswith(prefix) and case["expect"] in line for line in lines), lines
    assert all(str(certificate) in line for line in lines)  # each line names the file
    if case.get("only", True):
        assert _rules_in(result.stderr) == {case["rule"]}, result.stderr
    assert "Traceback" not in result.output


def test_every_certificate_rule_has_an_invalid_case() -> None:
    from repomin.report.certificate import CERTIFICATE_RULES

    broken = {c["rule"] for c in CERTIFICATE_CASES if c["rule"] is not None}
    assert set(CERTIFICATE_RULES) == broken
    assert not set(CERTIFICATE_RULES) & set(RULES)  # the report's rules stay the report's
