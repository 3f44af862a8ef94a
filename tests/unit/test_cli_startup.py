"""``repomin reduce`` starts its live display before the heavy modules load (else the
screen stays blank for the first seconds): importing the CLI must not import scipy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.cli.options import SAMPLING_MODES
from repomin.sampling.policy import SAMPLING_MODES as POLICY_MODES

SRC = Path(__file__).resolve().parents[2] / "src"


def test_importing_the_cli_loads_no_statistics() -> None:
    probe = (
        "import sys, repomin.cli.main, repomin.app.progress; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy' "
        "or m in ('repomin.sampling.policy', 'repomin.sampling.stats', 'repomin.cli.report_cmds')))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_sampling_modes_copy_equals_the_policy() -> None:
    assert SAMPLING_MODES == POLICY_MODES


def test_report_group_is_listed_and_loaded_on_use() -> None:
    runner = CliRunner()
    top = runner.invoke(cli, ["--help"])
    assert top.exit_code == 0 and "report" in top.output and "reduce" in top.output
    sub = runner.invoke(cli, ["report", "--help"])
    assert sub.exit_code == 0
    assert {"validate", "replay", "compare"} <= set(sub.output.split())
