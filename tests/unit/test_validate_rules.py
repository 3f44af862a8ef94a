"""Validator behaviour the file corpus cannot express: in-memory values, ordering, hostile text."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report import validate as validate_mod
from repomin.report.rules import MAX_LINE, RULES
from repomin.report.validate import (
    ReportLoadError,
    ValidationResult,
    check_report,
    load_report,
    validate_report,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"


def load(name: str = "v1.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_in_memory_values(value: float) -> None:
    data = load()
    data["events"][1]["oracle_rate"] = value
    problems = check_report(data)
    assert [(p.rule, p.message) for p in problems] == [
        ("json.non_finite", "non-finite number at events/1/oracle_rate")
    ]


def test_schema_problems_stop_before_cross_field_rules() -> None:
    data = load()
    data["accepted_mutations"] += 1  # accounting.totals ...
    del data["events"][0]["description"]  # ... hidden behind a schema problem
    assert {p.rule for p in check_report(data)} == {"schema"}


def test_several_problems_are_all_reported() -> None:
    data = load()
    data["accepted_mutations"] += 1
    data["execution"]["cache_hits"] += 1
    data["holdout_certification"]["observed_rate"] = 0.25
    data["events"][2]["index"] = 99
    rules = {p.rule for p in check_report(data)}
    assert rules == {
        "accounting.totals",
        "execution.cache_hits",
        "holdout.observed_rate",
        "events.index",
    }


def test_hostile_values_are_printed_safely(tmp_path: Path) -> None:
    data = load()
    data["execution"]["backend"] = "\x1b[2J\x1b[31mpwned\u202e" + "A" * 1000
    report = tmp_path / "r.json"
    report.write_text(json.dumps(data))
    result = CliRunner().invoke(cli, ["report", "validate", str(report)])
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr and "\u202e" not in result.stderr
    for line in result.stderr.splitlines():
        assert len(line) <= len("repomin: error: ") + len("schema: ") + MAX_LINE
    assert "\\x1b[2J" in result.stderr


def test_integers_beyond_the_digit_limit_are_malformed(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text('{"schema_version": 1, "attempts": ' + "9" * 5000 + "}")
    with pytest.raises(ReportLoadError) as info:
        load_report(report)
    assert info.value.problem.rule == "json.malformed"


def test_deep_nesting_is_malformed_not_a_crash(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ReportLoadError) as info:
        load_report(report)
    assert info.value.problem.rule == "json.malformed"


def test_oversized_report_is_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(validate_mod, "MAX_REPORT_BYTES", 100)
    report = tmp_path / "r.json"
    report.write_text(json.dumps(load()))
    with pytest.raises(ReportLoadError) as info:
        load_report(report)
    assert info.value.problem.rule == "json.unreadable"
    assert "larger than 64 MiB" in info.value.problem.message


def test_verified_is_derived_from_the_mode() -> None:
    assert ValidationResult((), None, "exact").payload_fingerprint_verified
    assert ValidationResult((), None, "content").payload_fingerprint_verified
    assert not ValidationResult((), None, "unavailable").payload_fingerprint_verified
    assert not ValidationResult((), None, None).payload_fingerprint_verified


def test_every_problem_names_a_registered_rule() -> None:
    assert all(rule.replace(".", "").replace("_", "").isalpha() for rule in RULES)
    data = load("v1_rejected.json")
    hold = data["holdout_certification"]
    hold.update(timeouts=5, confidence=0.9, k_crit=0)
    data["events"][0]["oracle_passes"] = 9
    problems = validate_report(data).problems
    assert problems
    assert {p.rule for p in problems} <= set(RULES)


def test_huge_holdout_is_not_recomputed() -> None:
    data = load()
    hold = data["holdout_certification"]
    hold.update(planned_runs=10**8, completed_runs=10**8, passes=10**8)
    del hold["samples"]
    hold.update(timeouts=0, resource_exhausted=0, interrupted=0, ordinary_failures=0)
    rules = {p.rule for p in validate_report(data).problems}
    assert rules == {"holdout.recomputed"}


def test_certified_holdout_of_a_real_run_recomputes_exactly() -> None:
    from repomin.sampling.stats import holdout_test

    hold = load()["holdout_certification"]
    result = holdout_test(hold["passes"], hold["planned_runs"], hold["min_rate"], hold["alpha"])
    assert result.certified and hold["exact_gate_passed"]
    assert hold["p_value"] == result.p_value
    assert hold["k_crit"] == result.k_crit


def _holdout(outcomes: list[str], status: str) -> dict[str, Any]:
    from repomin.sampling.stats import holdout_test

    samples = [
        {
            "index": i + 1,
            "outcome": o,
            "accepted": o == "passed",
            "timed_out": o == "timed_out",
            "resource_exhausted": False,
        }
        for i, o in enumerate(outcomes)
    ]
    passes = outcomes.count("passed")
    res = holdout_test(passes, len(outcomes), 0.5, 0.05)
    return {
        "status": status,
        "schema_version": 1,
        "planned_runs": len(outcomes),
        "completed_runs": len(outcomes),
        "passes": passes,
        "min_rate": 0.5,
        "alpha": 0.05,
        "timeouts": outcomes.count("timed_out"),
        "resource_exhausted": 0,
        "interrupted": 0,
        "ordinary_failures": outcomes.count("failed"),
        "samples": samples,
        "observed_rate": res.observed_rate,
        "lower_bound": res.lower_bound,
        "upper_bound": res.upper_bound,
        "p_value": res.p_value,
        "confidence": res.confidence,
        "k_crit": res.k_crit,
        "exact_gate_passed": res.certified,
    }


def test_rejected_with_a_passing_gate_needs_a_veto() -> None:
    data = load()
    data["holdout_certification"] = _holdout(["passed"] * 9 + ["timed_out"], "rejected")
    assert data["holdout_certification"]["exact_gate_passed"] is True
    assert validate_report(data).valid, validate_report(data).lines()
    data["holdout_certification"] = _holdout(["passed"] * 9 + ["failed"], "rejected")
    assert validate_report(data).rules() == {"holdout.status"}
    data["holdout_certification"] = _holdout(["passed"] * 9 + ["failed"], "certified")
    assert validate_report(data).valid


def test_failure_spec_without_the_optional_exit_code_is_valid() -> None:
    data = load()
    assert check_report(data) == []
    assert data["failure_spec"].get("exit_code") is None
    del data["failure_spec"]["exit_code"]  # the spec makes exit_code optional
    assert check_report(data) == []
    data["failure_spec"]["process_failure"] = True
    data["failure_spec"]["exit_code"] = 3
    assert "failure_spec.process_exit_code" in {p.rule for p in check_report(data)}


def test_a_fifo_or_a_directory_is_refused_without_blocking(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    # the CLI first (a plain read would block forever: the timeout fails the test instead)
    run = subprocess.run(
        [sys.executable, "-m", "repomin", "report", "validate", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2, run.stderr
    assert "not a regular file" in run.stderr
    with pytest.raises(ReportLoadError) as info:
        load_report(fifo)
    assert info.value.problem.rule == "json.unreadable"
    assert "not a regular file" in info.value.problem.message
    with pytest.raises(ReportLoadError):
        load_report(tmp_path)
