"""Holdout replay: a flaky case certifies; the same payload edited to reproduce at ~0.1 is
rejected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from tests.conftest import flaky_gate

RUN_SH = "{gate}\ngrep -q NEEDED core/a.txt && echo 'BUG: flaky' && exit 1\n"


@pytest.mark.slow
def test_flaky_payload_certifies_and_a_degraded_copy_is_rejected(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    (src / "core").mkdir(parents=True)
    (src / "core/a.txt").write_text("x\nNEEDED\ny\n")
    for i in range(12):
        (src / "core" / f"noise{i}.txt").write_text(f"noise {i}\n")
        (src / f"doc{i}.md").write_text(f"doc {i}\n")
    counter = tmp_path / "counter"
    (src / "run.sh").write_text(RUN_SH.format(gate=flaky_gate(counter, 600)))
    out = tmp_path / "out"
    runner = CliRunner()
    res = runner.invoke(
        cli,
        [
            "reduce",
            str(src),
            "-o",
            str(out),
            "--command",
            "sh run.sh",
            "--match",
            "BUG: flaky",
            "--keep",
            "run.sh",
            "--passes",
            "files",
            "--holdout-runs",
            "30",
            "--holdout-min-rate",
            "0.3",
            "--no-session",
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.stderr
    report = json.loads((tmp_path / "out.repomin/report.json").read_text())
    assert report["holdout_certification"]["status"] == "certified"
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["a.txt", "run.sh"]

    # Degrade the payload by hand: it now reproduces in about 10% of runs.
    (out / "run.sh").write_text(RUN_SH.format(gate=flaky_gate(counter, 100)))
    args = [
        "report",
        "replay",
        str(tmp_path / "out.repomin/report.json"),
        "--payload",
        str(out),
        "--yes",
        "--runs",
        "30",
        "--min-rate",
        "0.3",
    ]
    refused = runner.invoke(cli, args)
    assert refused.exit_code == 2 and "--allow-modified" in refused.stderr
    rejected = runner.invoke(cli, [*args, "--allow-modified"])
    assert rejected.exit_code == 1, rejected.stdout + rejected.stderr
    assert "does not support a rate >= 0.3" in rejected.stdout
