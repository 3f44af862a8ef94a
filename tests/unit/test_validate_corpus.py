"""The validator's fixture corpus: every rule has a valid case and at least one breaking edit.

Each case of ``tests/fixtures/reports/cases.json`` is written to a file and checked through the
real CLI (``repomin report validate``): valid cases exit 0 and print nothing on stderr; every
invalid case exits 2 and prints a ``repomin: error: RULE: ...`` line naming the broken rule.
"""

from __future__ import annotations

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
