"""End-to-end: ``repomin reduce`` in-process through click, on generated repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.io import structural_errors
from tests.conftest import flaky_gate, make_repo

NEEDED = ["d1/f0.txt", "d4/f1.txt", "f2.txt"]
CHECK = (
    "cat d1/f0.txt d4/f1.txt f2.txt 2>/dev/null | grep -c NEEDED | grep -qx 3 "
    "&& {{ {flaky} echo 'BUG: three needed'; exit 1; }}; exit 0"
)


def invoke(*args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    result = runner.invoke(cli, ["reduce", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def payload_files(out: Path) -> set[str]:
    return {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}


def assert_report_sound(report: dict) -> None:  # type: ignore[type-arg]
    assert structural_errors(report) == []
    for ph in report["phase_statistics"]["phases"]:
        assert ph["attempts"] == sum(
            ph[k] for k in ("no_op", "rejected", "accepted", "superseded", "aborted")
        )
        assert ph["oracle_sample_uses"] == ph["oracle_samples"] + ph["cache_hits"]
    assert report["attempts"] == sum(p["attempts"] for p in report["phase_statistics"]["phases"])
    assert report["holdout_certification"]["status"] == "not_requested"


@pytest.mark.slow
def test_deterministic_500_files(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 520, NEEDED)
    (src / "keepme.cfg").write_text("config\n")
    code, _out, err = invoke(
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        CHECK.format(flaky=""),
        "--match",
        "BUG: three",
        "--keep",
        "keepme.cfg",
        "-q",
    )
    assert code == 0, err
    assert payload_files(tmp_path / "out") == {*NEEDED, "keepme.cfg"}
    for rel in NEEDED:
        assert (tmp_path / "out" / rel).read_text() == "NEEDED\n"
    report = json.loads((tmp_path / "out.repomin/report.json").read_text())
    assert_report_sound(report)
    assert report["source"]["files"] == 521 and report["output"]["files"] == 4
    assert report["execution"]["sampling_policy"] == "single"
    assert (tmp_path / "out.repomin/REPOMIN.md").read_text().count("repomin report replay") == 1
    # The source tree is untouched.
    assert len([p for p in src.rglob("*") if p.is_file()]) == 521


@pytest.mark.slow
def test_flaky_half_the_runs(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 60, NEEDED)
    flaky = flaky_gate(tmp_path / "counter", 550)
    code, _out, err = invoke(
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        CHECK.format(flaky=flaky),
        "--match",
        "BUG: three",
        "--baseline-runs",
        "30",
        "--final-runs",
        "30",
        "-q",
        "--passes",
        "files",
    )
    assert code == 0, err
    report = json.loads((tmp_path / "out.repomin/report.json").read_text())
    assert_report_sound(report)
    ex = report["execution"]
    # default: the exact sequential design per candidate, the payload gate on the export
    assert ex["sampling_policy"] == "fast" and ex["error_control"] == "payload-gate"
    assert ex["final_validation_passed"] and ex["final_gate_index"] == ex["payload_gates"]
    assert ex["final_passes"] >= 5
    assert set(NEEDED) <= payload_files(tmp_path / "out")
    accepted = [e for e in report["events"] if e.get("decision") == "accepted"]
    assert accepted
    for e in accepted:
        assert {"design", "oracle_rate", "lower_bound"} <= e.keys()
        assert e["design"].startswith("seq-exact-v1")


def _repo(tmp_path: Path) -> Path:
    src = tmp_path / "repo"
    src.mkdir()
    (src / "a.txt").write_text("BUG\n")
    return src


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--match", "("], "invalid --match regular expression"),
        ([], "no failure specified"),
        (["--match", "BUG", "--exit-code", "1", "--process-failure"], "--process-failure cannot"),
        (["--python-exception", "--java-exception"], "only one signature mode"),
        (["--exit-code", "0", "--match", "NOPE"], "did not reproduce the failure in any"),
        (["--match", "BUG", "--timeout", "0"], "--timeout 0.0 must be positive"),
        (["--match", "BUG", "--env", "1BAD=x"], "--env '1BAD=x'"),
    ],
)
def test_bad_input_is_exit_2_one_line_nothing_written(
    tmp_path: Path, args: list[str], message: str
) -> None:
    src = _repo(tmp_path)
    code, _out, err = invoke(
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        "cat a.txt",
        "--baseline-runs",
        "3",
        *args,
    )
    assert code == 2
    lines = err.strip().splitlines()
    if "did not reproduce" in message:
        # the first failing baseline run is shown at once; the error is still one
        # line, the last, and repeats the diagnosis
        assert lines[0].startswith("repomin: baseline run 1 did not reproduce: exit code 0")
        assert "first failing baseline run: exit code 0" in lines[-1]
        lines = [line for line in lines if line.startswith("repomin: error:")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in err
    assert err.strip().splitlines()[-1] == lines[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.repomin").exists()


def test_missing_src_output_inside_src_and_existing_output(tmp_path: Path) -> None:
    code, _, err = invoke(
        str(tmp_path / "nope"), "-o", str(tmp_path / "o"), "--command", "x", "--match", "x"
    )
    assert code == 2 and "does not exist" in err
    src = _repo(tmp_path)
    code, _, err = invoke(str(src), "-o", str(src / "out"), "--command", "x", "--match", "x")
    assert code == 2 and "inside SRC" in err
    (tmp_path / "out").mkdir()
    code, _, err = invoke(str(src), "-o", str(tmp_path / "out"), "--command", "x", "--match", "x")
    assert code == 2 and "--force" in err


def test_low_baseline_rate_aborts(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    counter = tmp_path / "counter"
    # Reproduces in exactly every third run: 3 of 10, lower bound 0.087 < 0.5.
    every_third = (
        f"n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; "
        "[ $((n % 3)) -eq 0 ] && echo BUG; exit 0"
    )
    code, _, err = invoke(
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        every_third,
        "--match",
        "BUG",
        "--baseline-runs",
        "10",
        "--min-baseline-rate",
        "0.5",
        "--jobs",
        "1",
        "--user-shell-runs",
        "0",  # no diagnosis run in this shell: the counter counts baseline runs only
    )
    # 9 of 10 passes are needed for a lower bound of 0.5: after two runs that did not
    # reproduce, the rejection is certain and the baseline stops.
    assert code == 2 and "matched the failure in 0/2 runs" not in err
    assert "did not reproduce the failure in any of 2 baseline runs (stopped after 2 of 10" in err
    assert "below --min-baseline-rate 0.5" in err
    assert counter.read_text().strip() == "2"
    assert not (tmp_path / "out").exists()


def test_force_replaces_output_atomically(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    (src / "junk.txt").write_text("junk\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale").write_text("old")
    code, _, err = invoke(
        str(src),
        "-o",
        str(out),
        "--command",
        "cat a.txt",
        "--match",
        "BUG",
        "--baseline-runs",
        "3",
        "--force",
        "-q",
    )
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


@pytest.mark.slow
def test_flaky_sixty_percent_certifies_at_point_three(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 80, NEEDED, seed=9)
    flaky = flaky_gate(tmp_path / "counter", 600)
    code, out, err = invoke(
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        CHECK.format(flaky=flaky),
        "--match",
        "BUG: three",
        "--passes",
        "files",
        "--holdout-runs",
        "30",
        "--holdout-min-rate",
        "0.3",
        "--jobs",
        "2",
    )
    assert code == 0, err
    report = json.loads((tmp_path / "out.repomin/report.json").read_text())
    assert_report_sound_holdout(report)
    assert payload_files(tmp_path / "out") == set(NEEDED)
    hold = report["holdout_certification"]
    assert hold["status"] == "certified" and hold["planned_runs"] == hold["completed_runs"] == 30
    assert hold["lower_bound"] >= 0.3 and hold["exact_gate_passed"] is True
    assert hold["artifact_tree_sha256"] == report["output"]["tree_sha256"]
    assert "holdout certified" in out


def assert_report_sound_holdout(report: dict) -> None:  # type: ignore[type-arg]
    assert structural_errors(report) == []
    hold = report["holdout_certification"]
    assert [s["index"] for s in hold["samples"]] == list(range(1, hold["completed_runs"] + 1))
    assert hold["passes"] == sum(s["accepted"] for s in hold["samples"])
    assert hold["observed_rate"] == hold["passes"] / hold["planned_runs"]


def test_budget_exports_best_so_far_validated(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 60, NEEDED, seed=5)
    code, _, err = invoke(
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        CHECK.format(flaky=""),
        "--match",
        "BUG: three",
        "--max-runs",
        "6",
        "--baseline-runs",
        "3",
        "-q",
        "--jobs",
        "1",
    )
    assert code == 0, err
    report = json.loads((tmp_path / "out.repomin/report.json").read_text())
    ex = report["execution"]
    assert ex["budget_exhausted"] is True and ex["stop_reason"] == "max_runs"
    assert ex["final_runs"] == 10 and ex["final_passes"] == 10
    assert report["output"]["files"] < report["source"]["files"]
    assert_report_sound(report)
