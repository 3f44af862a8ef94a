"""``execution.sample_seconds``, its basis and ``sample_wall_seconds`` through the real pipeline.

Every report here is written by :func:`repomin.app.reduce.execute` and checked by the validator; the
end line and ``REPOMIN.md`` are rendered from it.
"""

from __future__ import annotations

import copy
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from repomin.app.reduce import ReduceOptions, execute
from repomin.failure.contract import FailureSpec
from repomin.report.human import cost_text, render_terminal
from repomin.report.validate import validate_report
from repomin.runners.base import Outcome, RunRequest
from repomin.sampling.policy import SamplingConfig
from repomin.tree import Tree
from tests.stub_runner import StubRunner

WALL, CPU = 0.25, 0.125  # exact in binary: sums compare exactly


class CostRunner(StubRunner):
    """Fails while ``keep.txt`` is present; each run took WALL seconds, and CPU seconds of
    CPU time on the runs ``measured`` selects (by call number, from 0)."""

    def __init__(self, measured: str) -> None:
        self.measured = measured
        self.calls = 0

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        n, self.calls = self.calls, self.calls + 1
        cpu = {"all": CPU, "none": None, "odd": CPU if n % 2 else None}[self.measured]
        code, err = (1, b"BUG\n") if "keep.txt" in tree else (0, b"")
        return Outcome(exit_code=code, stderr=err, duration=WALL, cpu_seconds=cpu)


def options(tmp_path: Path, command: str = "fake") -> ReduceOptions:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("keep.txt", "a.txt", "b.txt", "c.txt"):
        (src / name).write_text(name)
    return ReduceOptions(
        src=src,
        output=tmp_path / "out",
        command=command,
        spec=FailureSpec(match="BUG"),
        sampling=SamplingConfig(baseline_runs=3),
        schedule=("files",),
        jobs=1,
        timeout=60.0,
        use_session=False,
        user_shell_runs=0,
    )


@pytest.mark.parametrize("measured", ["all", "none", "odd"])
def test_sample_seconds_sum_cpu_where_measured_and_wall_elsewhere(
    tmp_path: Path, measured: str
) -> None:
    runner = CostRunner(measured)
    report = execute(options(tmp_path), runner_factory=lambda _: runner).report
    ex = report["execution"]
    n = ex["oracle_samples"]
    assert n == runner.calls > 4  # every run is an oracle sample (no traced run here)
    with_cpu = {"all": n, "none": 0, "odd": n // 2}[measured]
    assert ex["sample_seconds_basis"] == {"all": "cpu", "none": "wall", "odd": "mixed"}[measured]
    assert ex["sample_seconds"] == round(with_cpu * CPU + (n - with_cpu) * WALL, 3)
    assert ex["sample_wall_seconds"] == n * WALL
    assert validate_report(report).valid, validate_report(report).lines()
    kind = {"all": "CPU of samples", "none": "sample wall", "odd": "CPU where measured"}
    assert kind[measured] in cost_text(ex)


def test_a_real_host_reduction_reports_cpu_seconds(tmp_path: Path) -> None:
    # Each sample burns 0.05 s of CPU time, so the sum is at least 0.05 x samples.
    code = (
        "import os, time\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.05: pass\n"
        "raise SystemExit('BUG' if os.path.exists('keep.txt') else 0)\n"
    )
    command = f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(code)}"
    result = execute(options(tmp_path, command))
    ex = result.report["execution"]
    assert result.exit_code == 0 and ex["sample_seconds_basis"] == "cpu"
    assert ex["sample_seconds"] >= 0.05 * ex["oracle_samples"]
    assert ex["sample_wall_seconds"] > 0 and validate_report(result.report).valid
    first = render_terminal(result.report, tmp_path / "out", result.report_path, [])[0]
    assert f"in {ex['oracle_samples']} runs ({ex['sample_seconds']:.1f} s CPU of samples, " in first
    notes = (result.report_path.parent / "REPOMIN.md").read_text()
    assert f"{ex['sample_seconds']:.1f} s CPU of samples" in notes


def _broken(report: dict[str, Any], **changes: Any) -> set[str]:
    bad = copy.deepcopy(report)
    for key, value in changes.items():
        if value is None:
            bad["execution"].pop(key)
        else:
            bad["execution"][key] = value
    return validate_report(bad).rules()


def test_the_validator_checks_the_cost_fields(tmp_path: Path) -> None:
    runner = CostRunner("none")
    report = execute(options(tmp_path), runner_factory=lambda _: runner).report
    ex = report["execution"]
    rule = {"execution.sample_seconds"}
    assert _broken(report) == set()
    assert _broken(report, sample_seconds=ex["sample_seconds"] + 1) == rule  # wall basis
    assert _broken(report, sample_seconds_basis=None) == rule
    assert _broken(report, sample_wall_seconds=None) == set()  # older reports lack it
    assert _broken(report, sample_seconds_basis="cpu", sample_seconds=0.5) == set()
    assert _broken(report, sample_seconds_basis="sometimes") == {"schema"}
