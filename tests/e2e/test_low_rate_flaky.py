"""End-to-end: a failure that shows in one run in five, reduced by ``repomin reduce`` with
default options (the adaptive baseline, the payload gate sized for power and stopped once
certain), and a rarer one refused with the cost of reducing it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.validate import validate_report
from repomin.sampling import stats
from tests.conftest import flaky_gate, make_repo

NEEDED = ["d1/f0.txt", "d4/f1.txt", "f2.txt"]
CHECK = (
    "cat d1/f0.txt d4/f1.txt f2.txt 2>/dev/null | grep -c NEEDED | grep -qx 3 "
    "&& {{ {flaky} echo 'BUG: three needed'; exit 1; }}; exit 0"
)


def reduce(tmp_path: Path, per_mille: int, *extra: str) -> tuple[int, str]:
    src = tmp_path / "repo"
    make_repo(src, 30, NEEDED, seed=3)
    command = CHECK.format(flaky=flaky_gate(tmp_path / "counter", per_mille))
    args = [str(src), "-o", str(tmp_path / "out"), "--command", command, "--match", "BUG: three"]
    result = CliRunner().invoke(
        cli, ["reduce", *args, "--jobs", "2", "--user-shell-runs", "0", *extra]
    )
    return result.exit_code, result.stderr


def test_a_one_in_five_failure_is_reduced_with_default_options(tmp_path: Path) -> None:
    code, err = reduce(tmp_path, 200)
    assert code == 0, err
    # 4 of the first 20 runs reproduce (lower bound 0.071), or 3 when the traced run beside the
    # baseline drew one of the counter's reproducing numbers first: the baseline looks again
    looked = re.search(
        r"baseline ([34])/20: lower bound (0\.\d+) is below --min-baseline-rate 0\.1", err
    )
    assert looked is not None, err
    assert float(looked.group(2)) == round(stats.lower_bound(int(looked.group(1)), 20, 0.95), 3)
    out = tmp_path / "out"
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == set(NEEDED)
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert not validate_report(report).problems
    ex = report["execution"]
    passes, runs = ex["baseline_passes"], ex["baseline_runs"]
    assert runs >= 40 and ex["baseline_runs_cap"] == 160  # 8/40, or 7/40 then more
    assert stats.lower_bound(passes, runs, 0.95) >= 0.1
    assert ex["baseline_policy"] == "adaptive-clopper-pearson-v1"
    assert ex["min_candidate_rate"] == stats.lower_bound(passes, runs, 0.95) / 2
    assert ex["final_validation_passed"] is True
    assert ex["final_policy"] == "curtailed-exact-binomial-v1"
    # sized for power 0.95 at the 80% lower bound of 8/40 (125 runs at gate 1), stopped once
    # the 12 passes the test needs were in
    planned = ex["final_planned_runs"]
    assert (planned >= 125 or (passes, runs) != (8, 40)) and ex["final_stopped_early"] is True
    assert ex["final_runs"] < planned and ex["final_passes"] >= stats.critical_count(
        planned, ex["min_candidate_rate"], ex["final_alpha"]
    )


def test_a_one_in_twenty_failure_is_refused_with_its_cost(tmp_path: Path) -> None:
    code, err = reduce(tmp_path, 50, "--no-session")
    assert code == 2
    line = next(x for x in err.splitlines() if x.startswith("repomin: error: baseline"))
    assert "below --min-baseline-rate 0.1" in line
    assert "a search decision costs about" in line and "at --jobs 2" in line
    assert "--min-baseline-rate 0.0" in line and "--baseline-runs" in line
    assert not (tmp_path / "out").exists()
