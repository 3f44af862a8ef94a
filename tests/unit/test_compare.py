"""``repomin report compare``: the comparison schema, its limits, warnings and privacy."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.errors import UsageError
from repomin.report.compare import (
    CATEGORICAL_FIELDS,
    MAX_EXACT_DELTA,
    MAX_REPORTS,
    NUMERIC_FIELDS,
    RUN_FIELDS,
    build_comparison,
    check_labels,
    private_digest,
)
from repomin.report.compare_rules import PAIR_RULES, WARNING_CODES
from repomin.report.validate import validate_report

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "reports"
SECRET = "SECRET-do-not-copy-7f3a"
SECRET_ENV = "SECRET_DO_NOT_COPY_7F3A"


def base(name: str = "v1.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text("utf-8"))
    return data


def edited(edit: Callable[[dict[str, Any]], None], name: str = "v1.json") -> dict[str, Any]:
    report = copy.deepcopy(base(name))
    edit(report)
    return report


def codes(document: dict[str, Any]) -> list[str]:
    return [w["code"] for w in document["context_warnings"]]


# -- document shape ------------------------------------------------------------------------------


def test_document_has_the_spec_fields_and_exact_run_keys() -> None:
    doc = build_comparison([base(), base()])
    assert list(doc) == [
        "comparison_schema_version",
        "descriptive_only",
        "run_count",
        "runs",
        "deltas",
        "context_warnings",
    ]
    assert doc["comparison_schema_version"] == 1
    assert doc["descriptive_only"] is True
    assert doc["run_count"] == 2
    for run in doc["runs"]:
        assert tuple(run) == RUN_FIELDS
    (d,) = doc["deltas"]
    assert set(d) == {
        "from_index",
        "from_label",
        "to_index",
        "to_label",
        "numeric_deltas",
        "changed_fields",
    }
    assert tuple(d["numeric_deltas"]) == NUMERIC_FIELDS
    assert d["changed_fields"] == []


def test_snapshot_values_come_from_the_report() -> None:
    report = base()
    run = build_comparison([report, report])["runs"][0]
    assert run["source_files"] == report["source"]["files"]
    assert run["output_bytes"] == report["output"]["bytes"]
    assert run["byte_retention_ratio"] == round(
        report["output"]["bytes"] / report["source"]["bytes"], 6
    )
    assert run["oracle_mode"] == "match"
    assert run["holdout_status"] == report["holdout_certification"]["status"]
    assert run["holdout_passes"] == report["holdout_certification"]["passes"]
    assert run["phase_coverage"] == "complete"


def test_identical_modern_reports_raise_no_warning() -> None:
    assert build_comparison([base(), base()])["context_warnings"] == []


# -- ordering and limits -----------------------------------------------------------------------


def _sized(files: int) -> dict[str, Any]:
    return edited(lambda r: r["source"].__setitem__("files", files))


def test_order_is_kept_as_given() -> None:
    reports = [_sized(30), _sized(10), _sized(20)]
    doc = build_comparison(reports)
    assert [r["source_files"] for r in doc["runs"]] == [30, 10, 20]
    assert [r["index"] for r in doc["runs"]] == [1, 2, 3]
    assert [d["numeric_deltas"]["source_files"] for d in doc["deltas"]] == [-20, 10]
    assert [(d["from_index"], d["to_index"]) for d in doc["deltas"]] == [(1, 2), (2, 3)]
    reversed_doc = build_comparison(list(reversed(reports)))
    assert [r["source_files"] for r in reversed_doc["runs"]] == [20, 10, 30]


def test_at_most_32_reports() -> None:
    doc = build_comparison([base()] * MAX_REPORTS)
    assert doc["run_count"] == 32
    assert len(doc["deltas"]) == 31
    with pytest.raises(UsageError, match="at most 32"):
        build_comparison([base()] * (MAX_REPORTS + 1))


def test_at_least_2_reports() -> None:
    with pytest.raises(UsageError, match="at least 2"):
        build_comparison([base()])


# -- labels --------------------------------------------------------------------------------------


def test_default_labels() -> None:
    doc = build_comparison([base(), base(), base()])
    assert [r["label"] for r in doc["runs"]] == ["run1", "run2", "run3"]
    assert doc["deltas"][1]["from_label"] == "run2"


def test_given_labels_are_display_only() -> None:
    doc = build_comparison([base(), base()], ["v0.1", "main_2-x"])
    assert [r["label"] for r in doc["runs"]] == ["v0.1", "main_2-x"]
    assert doc["context_warnings"] == []


@pytest.mark.parametrize(
    "bad",
    ["", "a" * 33, "café", "two words", "-flag", ".hidden", "a/b", "x\n", "a|b"],
)
def test_invalid_labels_are_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="short ASCII identifier"):
        check_labels(["ok", bad], 2)


def test_longest_label_is_accepted() -> None:
    assert check_labels(["a" * 32, "b"], 2) == ["a" * 32, "b"]


def test_duplicate_labels_are_refused() -> None:
    with pytest.raises(UsageError, match="unique"):
        check_labels(["same", "same"], 2)


def test_label_count_must_match() -> None:
    with pytest.raises(UsageError, match="one label per report"):
        check_labels(["only-one"], 2)


# -- context warnings ----------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(report: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = report
        for key in parents:
            node = node[key]
        node[last] = value

    return edit


PAIR_EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "version_changed": _set("repomin_version", "0.2.0"),
    "source_size_changed": _set("source.bytes", 317),
    "input_selection_changed": _set("execution.keep_paths", [f"{SECRET}/kept"]),
    "backend_changed": _set("execution.backend", "docker"),
    "dispatch_changed": _set("execution.cluster_scheduler_sha256", "ab" * 32),
    "jobs_changed": _set("execution.jobs", 4),
    "timeout_changed": _set("execution.timeout_seconds", 40.0),
    "cache_changed": _set("execution.cache_enabled", False),
    "budget_changed": _set("execution.max_runs", 100),
    "semantic_context_changed": _set("execution.semantic_endpoint", f"http://{SECRET}/v1"),
    "container_context_changed": _set("execution.docker_image", f"{SECRET}:latest"),
    "environment_changed": _set("execution.environment_sha256", "0" * 64),
    "working_directory_changed": _set("execution.working_directory", "elsewhere"),
    "oracle_mode_changed": _set("failure_spec.exit_code", 1),
    "oracle_identity_changed": _set("command", f"sh run.sh {SECRET}"),
    "baseline_sampling_changed": _set("execution.min_baseline_rate", 0.3),
    "candidate_sampling_changed": _set("execution.candidate_runs_cap", 30),
    "final_validation_changed": _set("execution.final_runs", 20),
    "reduction_strategy_changed": _set("execution.reduction_strategy", "repomin-hdd-v1:files"),
    "holdout_controls_changed": _set("holdout_certification.min_rate", 0.7),
    "holdout_policy_changed": _set("holdout_certification.policy", "holdout-other-v2"),
    "holdout_status_changed": _set("holdout_certification.status", "rejected"),
    "phase_definitions_changed": lambda r: r["phase_statistics"]["phases"].pop(),
    "phase_coverage_changed": _set("phase_statistics.coverage", "partial"),
}


def test_every_pairwise_warning_has_an_edit() -> None:
    assert set(PAIR_EDITS) == {rule.code for rule in PAIR_RULES}


@pytest.mark.parametrize("code", list(PAIR_EDITS))
def test_each_pairwise_warning(code: str) -> None:
    doc = build_comparison([base(), edited(PAIR_EDITS[code])])
    (warning,) = [w for w in doc["context_warnings"] if w["code"] == code]
    assert warning["run_indexes"] == [1, 2]
    assert warning["run_labels"] == ["run1", "run2"]
    assert warning["message"]
    # The same edit on both sides is no change.
    same = build_comparison([edited(PAIR_EDITS[code]), edited(PAIR_EDITS[code])])
    assert code not in codes(same)


def test_warnings_follow_the_run_order() -> None:
    doc = build_comparison(
        [base(), edited(PAIR_EDITS["jobs_changed"]), edited(PAIR_EDITS["jobs_changed"]), base()]
    )
    jobs = [w["run_indexes"] for w in doc["context_warnings"] if w["code"] == "jobs_changed"]
    assert jobs == [[1, 2], [3, 4]]


@pytest.mark.parametrize("version", [None, "", "not a version", "1.0; rm -rf /", "1" * 65])
def test_version_unavailable(version: str | None) -> None:
    doc = build_comparison([base(), edited(_set("repomin_version", version))])
    assert doc["runs"][1]["repomin_version"] is None
    assert "version_unavailable" in codes(doc)
    assert "repomin_version" in doc["deltas"][0]["changed_fields"]
    if version:
        assert version not in json.dumps(doc)


def test_missing_version_is_unavailable() -> None:
    doc = build_comparison([base(), edited(lambda r: r.pop("repomin_version"))])
    assert "version_unavailable" in codes(doc)


def test_partial_coverage_warning_for_a_legacy_report() -> None:
    doc = build_comparison([base(), base("legacy.json")])
    warnings = [w for w in doc["context_warnings"] if w["code"] == "phase_coverage_partial"]
    assert [w["run_indexes"] for w in warnings] == [[2]]
    assert doc["runs"][1]["phase_coverage"] == "partial"
    assert "phase_coverage" in doc["deltas"][0]["changed_fields"]


def test_every_warning_code_is_reachable() -> None:
    seen: set[str] = set()
    for edit in PAIR_EDITS.values():
        seen.update(codes(build_comparison([base(), edited(edit)])))
    seen.update(codes(build_comparison([base(), edited(_set("repomin_version", None))])))
    seen.update(codes(build_comparison([base(), edited(_set("source.files", 0))])))
    assert seen == set(WARNING_CODES)


# -- ratios and deltas ---------------------------------------------------------------------------


def test_null_ratio_when_the_source_is_empty() -> None:
    doc = build_comparison([base(), edited(_set("source.files", 0))])
    run = doc["runs"][1]
    assert run["file_retention_ratio"] is None
    assert run["byte_retention_ratio"] is not None
    assert doc["deltas"][0]["numeric_deltas"]["file_retention_ratio"] is None
    assert "ratio_unavailable" in codes(doc)


def test_null_ratio_when_counts_are_not_exact_in_a_double() -> None:
    doc = build_comparison([base(), edited(_set("source.bytes", MAX_EXACT_DELTA + 1))])
    assert doc["runs"][1]["byte_retention_ratio"] is None


def test_ratios_are_rounded_to_six_decimals() -> None:
    report = edited(_set("source.bytes", 3))
    report["output"]["bytes"] = 1
    run = build_comparison([report, report])["runs"][0]
    assert run["byte_retention_ratio"] == 0.333333


def test_ratio_deltas_are_rounded() -> None:
    a = edited(_set("source.bytes", 3))
    a["output"]["bytes"] = 1
    b = edited(_set("source.bytes", 7))
    b["output"]["bytes"] = 1
    delta = build_comparison([a, b])["deltas"][0]["numeric_deltas"]["byte_retention_ratio"]
    assert delta == round(0.142857 - 0.333333, 6)


def test_integer_deltas_are_exact_within_the_bound() -> None:
    doc = build_comparison([edited(_set("attempts", 0)), edited(_set("attempts", MAX_EXACT_DELTA))])
    assert doc["deltas"][0]["numeric_deltas"]["attempts"] == MAX_EXACT_DELTA


def test_oversized_integer_deltas_are_null() -> None:
    doc = build_comparison(
        [edited(_set("attempts", 0)), edited(_set("attempts", MAX_EXACT_DELTA + 1))]
    )
    assert doc["runs"][1]["attempts"] == MAX_EXACT_DELTA + 1
    assert doc["deltas"][0]["numeric_deltas"]["attempts"] is None
    back = build_comparison(
        [edited(_set("attempts", MAX_EXACT_DELTA + 1)), edited(_set("attempts", 0))]
    )
    assert back["deltas"][0]["numeric_deltas"]["attempts"] is None


def test_counters_beyond_64_bits_are_null() -> None:
    doc = build_comparison([base(), edited(_set("cache_hits", 2**63))])
    assert doc["runs"][1]["cache_hits"] is None
    assert doc["deltas"][0]["numeric_deltas"]["cache_hits"] is None


def test_missing_holdout_counts_are_null() -> None:
    doc = build_comparison([base(), base("legacy.json")])
    assert doc["runs"][1]["holdout_planned_runs"] is None
    assert doc["deltas"][0]["numeric_deltas"]["holdout_planned_runs"] is None


def test_categorical_changes_are_listed_in_order() -> None:
    other = edited(_set("execution.backend", "docker"))
    other["execution"]["budget_exhausted"] = True
    doc = build_comparison([base(), other])
    assert doc["deltas"][0]["changed_fields"] == ["backend", "budget_exhausted"]
    assert set(doc["deltas"][0]["changed_fields"]) <= set(CATEGORICAL_FIELDS)


# -- privacy -------------------------------------------------------------------------------------


def _private_everywhere(report: dict[str, Any]) -> None:
    report["command"] = f"sh run.sh --token {SECRET}"
    report["failure_match"] = report["failure_spec"]["match"] = f"FATAL {SECRET}"
    ex = report["execution"]
    ex["environment_names"] = [SECRET_ENV]
    ex["ignored_paths"] = [f"{SECRET}/ignored"]
    ex["keep_paths"] = [f"{SECRET}/kept"]
    ex["gitignore_files"] = [f"{SECRET}/.gitignore"]
    ex["semantic_endpoint"] = f"http://{SECRET}.invalid/v1"
    ex["semantic_model"] = f"{SECRET}-model"
    ex["docker_image"] = f"{SECRET}/image:1"
    ex["docker_image_id"] = "sha256:" + "ab" * 32


def test_private_fields_are_never_copied() -> None:
    doc = build_comparison([base(), edited(_private_everywhere)])
    text = json.dumps(doc)
    assert SECRET not in text
    assert SECRET_ENV not in text
    assert "sh run.sh" not in text
    assert "ab" * 32 not in text
    for rule in PAIR_RULES:
        assert private_digest(rule.code, rule.extract(edited(_private_everywhere))) not in text
    assert {
        "oracle_identity_changed",
        "environment_changed",
        "input_selection_changed",
        "semantic_context_changed",
        "container_context_changed",
    } <= set(codes(doc))


def test_fingerprints_and_timing_are_not_copied() -> None:
    report = base()
    text = json.dumps(build_comparison([report, report]))
    assert report["output"]["tree_sha256"] not in text
    assert "duration_seconds" not in text
    assert "wall_time_seconds" not in text


def test_private_digest_is_stable_and_domain_separated() -> None:
    assert private_digest("a", {"x": 1, "y": 2}) == private_digest("a", {"y": 2, "x": 1})
    assert private_digest("a", [1]) != private_digest("b", [1])


# -- the command -----------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, report: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(report), "utf-8")
    return path


def test_fixture_reports_are_valid() -> None:
    for name in ("v1.json", "legacy.json"):
        assert validate_report(base(name)).valid


def test_cli_prints_the_comparison_in_order(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.json", base())
    b = _write(tmp_path, "b.json", edited(_private_everywhere))
    result = CliRunner().invoke(
        cli, ["report", "compare", str(b), str(a), "--label", "new", "--label", "old"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [r["label"] for r in doc["runs"]] == ["new", "old"]
    assert SECRET not in result.output
    assert SECRET_ENV not in result.output
    assert "sh run.sh" not in result.output
    assert str(tmp_path) not in result.output


def test_cli_accepts_a_sidecar_directory_and_writes_a_file(tmp_path: Path) -> None:
    side = tmp_path / "OUT.repomin"
    side.mkdir()
    _write(side, "report.json", base())
    other = _write(tmp_path, "other.json", base())
    target = tmp_path / "cmp.json"
    result = CliRunner().invoke(
        cli, ["report", "compare", str(side), str(other), "-o", str(target)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text("utf-8"))["run_count"] == 2


def test_cli_refuses_an_invalid_report(tmp_path: Path) -> None:
    good = _write(tmp_path, "good.json", base())
    bad = _write(tmp_path, "bad.json", edited(_set("schema_version", 99)))
    result = CliRunner().invoke(cli, ["report", "compare", str(good), str(bad)])
    assert result.exit_code == 2
    assert "report 2" in result.output
    assert "comparison_schema_version" not in result.output


def test_cli_refuses_too_many_reports_before_reading(tmp_path: Path) -> None:
    missing = [str(tmp_path / f"missing{i}.json") for i in range(MAX_REPORTS + 1)]
    result = CliRunner().invoke(cli, ["report", "compare", *missing])
    assert result.exit_code == 2
    assert "at most 32" in result.output


def test_cli_refuses_bad_labels(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.json", base())
    result = CliRunner().invoke(cli, ["report", "compare", str(a), str(a), "--label", "x y"])
    assert result.exit_code == 2
    assert "label" in result.output


def test_salted_environment_digests_compare_by_names_only() -> None:
    """Two reports with the same names and salted digests (which always differ) are not an
    environment change; a different name still is."""
    first, second = base(), base()
    for report, salt in ((first, "aa"), (second, "bb")):
        ex = report["execution"]
        ex["environment_digest_scheme"] = "repomin-env-scrypt-v2"
        ex["environment_digest_salt"] = salt * 16
        ex["environment_sha256"] = salt[0] * 64
    assert "environment_changed" not in codes(build_comparison([first, second]))
    second["execution"]["environment_names"] = ["OTHER"]
    assert "environment_changed" in codes(build_comparison([first, second]))


def test_a_different_home_is_an_environment_change() -> None:
    first, second = base(), base()
    second["execution"]["home"] = "inherit"
    assert "environment_changed" in codes(build_comparison([first, second]))


def test_a_report_from_before_home_compares_as_fresh() -> None:
    first, second = base(), base()
    first["execution"].pop("home", None)
    second["execution"]["home"] = "fresh"
    assert "environment_changed" not in codes(build_comparison([first, second]))


def test_runs_made_by_a_curtailed_gate_or_an_adaptive_baseline_are_not_a_configuration() -> None:
    """Two reductions with the same design make different numbers of runs (a gate that stopped
    once certain, a baseline that looked again): the design fields are compared instead."""
    first, second = base(), base()
    for report, made, looked in ((first, 12, 20), (second, 15, 40)):
        ex = report["execution"]
        ex.update(final_runs=made, final_planned_runs=34, baseline_runs=looked)
        ex.update(baseline_runs_cap=160)
    found = codes(build_comparison([first, second]))
    assert "final_validation_changed" not in found and "baseline_sampling_changed" not in found
    second["execution"]["final_planned_runs"] = 96
    assert "final_validation_changed" in codes(build_comparison([first, second]))
