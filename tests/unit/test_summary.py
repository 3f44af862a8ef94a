"""The ``--json`` summary (summary_schema_version 2) and the ``--format markdown`` table."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.errors import UsageError
from repomin.failure.contract import FailureSpec
from repomin.report.summary import (
    build_summary,
    escape_cell,
    oracle_mode,
    render_markdown,
    retention_ratio,
    safe_version,
)
from repomin.report.validate import ValidationResult, validate_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"

#: The contract: exactly these keys, in this order (pinned here literally, not imported).
SUMMARY_V2_KEYS = [
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
]


def load(name: str = "v1.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def summarise(data: Any, path: Path = FIXTURES / "v1.json") -> dict[str, Any]:
    return build_summary(data, validate_report(data), report_path=path)


def test_contract_exact_key_set_through_the_cli() -> None:
    result = CliRunner().invoke(cli, ["report", "validate", str(FIXTURES / "v1.json"), "--json"])
    assert result.exit_code == 0
    summary = json.loads(result.stdout)
    assert list(summary) == SUMMARY_V2_KEYS
    assert len(result.stdout.strip().splitlines()) == 1


def test_values_of_a_real_report() -> None:
    data = load()
    summary = summarise(data)
    assert summary["valid"] is True
    assert summary["summary_schema_version"] == 2
    assert summary["schema_version"] == 1
    assert summary["holdout_status"] == "certified"
    assert summary["report_path"] == str((FIXTURES / "v1.json").resolve())
    assert summary["payload_path"] is None
    assert summary["repomin_version"] == data["repomin_version"]
    assert summary["backend"] == "host"
    assert summary["oracle_mode"] == "match"
    src, out = data["source"], data["output"]
    assert summary["removed_files"] == src["files"] - out["files"]
    assert summary["removed_bytes"] == src["bytes"] - out["bytes"]
    assert summary["file_retention_ratio"] == round(out["files"] / src["files"], 6)
    assert summary["byte_retention_ratio"] == round(out["bytes"] / src["bytes"], 6)
    hold = data["holdout_certification"]
    assert (
        summary["holdout_planned_runs"],
        summary["holdout_completed_runs"],
        summary["holdout_passes"],
    ) == (hold["planned_runs"], hold["completed_runs"], hold["passes"])
    assert summary["attempts"] == data["attempts"]
    assert summary["accepted_mutations"] == data["accepted_mutations"]
    assert summary["cache_hits"] == data["cache_hits"]
    assert summary["runs"] == data["execution"]["oracle_samples"]  # the count reduce prints
    assert summary["budget_exhausted"] is False
    assert summary["payload_fingerprint_verified"] is False
    assert summary["payload_fingerprint_mode"] is None


def test_summary_holds_no_private_report_content() -> None:
    data = load()
    data["execution"]["environment_names"] = ["SECRET_TOKEN_NAME"]
    text = json.dumps(summarise(data))
    for private in (
        data["command"],
        data["failure_match"],
        "SECRET_TOKEN_NAME",
        data["execution"]["environment_sha256"],
        data["output"]["tree_sha256"],
        "environment",
    ):
        assert private not in text


def test_legacy_report_summary() -> None:
    summary = summarise(load("legacy.json"))
    assert summary["valid"] is True
    assert summary["repomin_version"] is None
    assert summary["holdout_status"] is None
    assert summary["holdout_planned_runs"] is None
    assert summary["oracle_mode"] == "match"


@pytest.mark.parametrize(
    ("kept", "source", "ratio"),
    [(1, 3, 0.333333), (2, 3, 0.666667), (0, 5, 0.0), (7, 7, 1.0), (9, 3, 3.0), (1, 0, None)],
)
def test_retention_ratio(kept: int, source: int, ratio: float | None) -> None:
    assert retention_ratio(kept, source) == ratio


def test_zero_source_and_growth() -> None:
    data = load()
    data["source"] = {"files": 0, "bytes": 10}
    data["output"]["files"], data["output"]["bytes"] = 2, 25
    summary = build_summary(data, ValidationResult(()), report_path=Path("r.json"))
    assert summary["file_retention_ratio"] is None
    assert summary["byte_retention_ratio"] == 2.5
    assert summary["removed_files"] == -2
    assert summary["removed_bytes"] == -15


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.1.0", "0.1.0"),
        ("1.2.3rc1", "1.2.3rc1"),
        ("0.1.0.dev7", "0.1.0.dev7"),
        ("2.0.post1+g1a2b3c", "2.0.post1+g1a2b3c"),
        ("1." + "1" * 62, "1." + "1" * 62),
        ("1." + "1" * 63, None),
        ("0.1.0\n| injected |", None),
        ("<b>1.0</b>", None),
        ("", None),
        ("v1.0", None),
        (None, None),
        (1.0, None),
        (["0.1.0"], None),
    ],
)
def test_safe_version(version: Any, expected: str | None) -> None:
    assert safe_version(version) == expected


def test_overlong_version_is_null_in_the_summary() -> None:
    data = load()
    data["repomin_version"] = "9" * 200
    summary = summarise(data)
    assert summary["valid"] is True
    assert summary["repomin_version"] is None


SPECS = [
    dict(zip(("match", "exit_code", "flag"), combo, strict=True))
    for combo in itertools.product(
        (None, "BUG"),
        (None, 3),
        (None, "java_exception", "python_exception", "process_failure"),
    )
]


@pytest.mark.parametrize("combo", SPECS)
def test_oracle_mode_agrees_with_failure_spec(combo: dict[str, Any]) -> None:
    flags = {
        f: combo["flag"] == f for f in ("java_exception", "python_exception", "process_failure")
    }
    raw = {"match": combo["match"], "exit_code": combo["exit_code"], **flags}
    try:
        expected: str | None = FailureSpec(
            match=combo["match"], exit_code=combo["exit_code"], **flags
        ).oracle_mode
    except UsageError:
        expected = None  # an invalid spec: the validator rejects it; the summary stays enumerated
        if combo["flag"] == "process_failure":
            expected = "process_failure"
    assert oracle_mode({"failure_spec": raw}) == expected


def test_oracle_mode_of_legacy_and_broken_contracts() -> None:
    assert oracle_mode({"failure_match": "x"}) == "match"
    assert oracle_mode({"python_exception_signature": {}}) == "python_exception"
    assert oracle_mode({"python_exception_signature": {}, "java_exception_signature": {}}) is None
    assert oracle_mode({"failure_spec": {"java_exception": True, "python_exception": True}}) is None
    assert oracle_mode({"failure_spec": "garbage"}) is None
    assert oracle_mode({}) is None


@pytest.mark.parametrize("garbage", [None, [], "text", 3, {"source": "x", "output": [1]}])
def test_summary_is_total(garbage: Any) -> None:
    summary = build_summary(garbage, validate_report(garbage), report_path=Path("r.json"))
    assert list(summary) == SUMMARY_V2_KEYS
    assert summary["valid"] is False
    assert summary["source_files"] is None
    assert summary["file_retention_ratio"] is None


def test_wrong_types_become_null() -> None:
    data = load()
    data["attempts"] = True
    data["cache_hits"] = 2**70
    data["execution"]["backend"] = "<script>"
    data["execution"]["budget_exhausted"] = "no"
    data["holdout_certification"]["status"] = "|x|"
    summary = summarise(data)
    assert summary["valid"] is False
    for key in ("attempts", "cache_hits", "backend", "budget_exhausted", "holdout_status"):
        assert summary[key] is None, key


# -- Markdown --------------------------------------------------------------------------------

MARKDOWN_LABELS = [
    "Summary schema version",
    "Report schema version",
    "ReproMin version",
    "Execution backend",
    "Oracle type",
    "Source files",
    "Source bytes",
    "Output files",
    "Output bytes",
    "Removed files",
    "Removed bytes",
    "File retention ratio",
    "Byte retention ratio",
    "Reduction attempts",
    "Runs of the command",
    "Accepted mutations",
    "Holdout status",
    "Holdout planned runs",
    "Holdout completed runs",
    "Holdout passes",
    "Payload fingerprint verified",
    "Payload fingerprint mode",
]


def _rows(markdown: str) -> dict[str, str]:
    rows = [line for line in markdown.splitlines() if line.startswith("| ")][2:]
    cells = [row.strip("| ").split(" | ") for row in rows]
    return {label: value for label, value in cells}


def test_markdown_fixed_whitelist() -> None:
    markdown = render_markdown(summarise(load()))
    rows = _rows(markdown)
    assert list(rows) == MARKDOWN_LABELS
    assert rows["Holdout status"] == "certified"
    assert rows["Oracle type"] == "match"
    assert rows["Payload fingerprint verified"] == "n/a"
    assert rows["Payload fingerprint mode"] == "n/a"
    assert render_markdown(summarise(load())) == markdown  # deterministic


def test_markdown_of_a_real_report_never_leaks(tmp_path: Path) -> None:
    data = load()
    data["failure_spec"]["python_exception"] = True
    data["python_exception_signature"] = {
        "kind": "python_exception",
        "exception_class": "VerySpecificSignatureError",
        "message": "signature message text",
        "frames": [{"file": "pkg/mod.py", "function": "frame_function_name"}],
    }
    data["execution"]["environment_names"] = ["REPOMIN_FIXTURE_TOKEN", "OTHER_PRIVATE_NAME"]
    side = tmp_path / "private-dir-name.repomin"
    side.mkdir()
    report = side / "report.json"
    report.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["report", "validate", str(report), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("## ReproMin report summary")
    for private in (
        data["command"],
        "sh run.sh",
        data["failure_match"],
        "FATAL",
        "widget overflow",
        "REPOMIN_FIXTURE_TOKEN",
        "OTHER_PRIVATE_NAME",
        "VerySpecificSignatureError",
        "signature message text",
        "frame_function_name",
        "private-dir-name",
        str(tmp_path),
        "report.json",
        data["execution"]["environment_sha256"],
        data["output"]["tree_sha256"],
    ):
        assert private not in out, private
    assert "| Oracle type | python\\_exception |" in out


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a|b", "a\\|b"),
        ("`code`", "\\`code\\`"),
        ("<img src=x>", "&lt;img src=x&gt;"),
        ("line\nbreak\r\n", "line break  "),
        ("a & b", "a &amp; b"),
        ("*bold* _it_ [l](u) ~s~", "\\*bold\\* \\_it\\_ \\[l\\](u) \\~s\\~"),
        ("back\\slash", "back\\\\slash"),
        ("tab\tesc\x1b", "tab esc "),
        ("rtl\u202eoverride", "rtl override"),
    ],
)
def test_escape_cell(raw: str, escaped: str) -> None:
    assert escape_cell(raw) == escaped


def test_every_markdown_value_is_escaped() -> None:
    summary = dict(summarise(load()))
    summary.update(repomin_version="1|2", backend="<b>", holdout_status="a\nb")
    rows = _rows(render_markdown(summary))
    assert rows["ReproMin version"] == "1\\|2"
    assert rows["Execution backend"] == "&lt;b&gt;"
    assert rows["Holdout status"] == "a b"
