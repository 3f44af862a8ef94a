"""A real ``make`` tree whose generated file is newer than its source: under ReproMin make never
regenerates it, in the samples (the baseline reproduces) and in the exported payload."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.fingerprint import fingerprint

OLD, NEW = 1_500_000_000_111_111_111, 1_600_000_000_222_222_222
MAKEFILE = """\
all: gen.txt
\t@cat gen.txt; if grep -q BUG gen.txt; then exit 1; fi

gen.txt: src.txt
\t@echo REGENERATED; cp src.txt gen.txt
"""


def _src(root: Path) -> Path:
    root.mkdir()
    (root / "Makefile").write_text(MAKEFILE)
    (root / "src.txt").write_text("fixed\n")
    (root / "gen.txt").write_text("BUG: stale generated file\n")
    for i in range(4):
        (root / f"noise{i}.txt").write_text(f"noise {i}\n")
    os.utime(root / "src.txt", ns=(OLD, OLD))
    os.utime(root / "Makefile", ns=(OLD, OLD))
    os.utime(root / "gen.txt", ns=(NEW, NEW))
    return root


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_never_regenerates_under_repomin(tmp_path: Path) -> None:
    src, out = _src(tmp_path / "src"), tmp_path / "out"
    result = CliRunner().invoke(
        cli,
        [
            "reduce", str(src), "-o", str(out), "--command", "make", "--match", "BUG: stale",
            "--baseline-runs", "2", "--final-runs", "2", "--no-session", "--no-trace", "-q",
        ],
        catch_exceptions=False,
    )  # fmt: skip
    # Without SRC's mtimes the copy's src.txt is as new as gen.txt or newer, make regenerates
    # gen.txt, and the baseline does not reproduce (exit 2).
    assert result.exit_code == 0, result.output
    assert not (out / "noise0.txt").exists()
    assert os.stat(out / "gen.txt").st_mtime_ns == NEW
    for kept in ("Makefile", "src.txt"):
        if (out / kept).exists():
            assert os.stat(out / kept).st_mtime_ns == OLD, f"{kept} lost its mtime"
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["output"]["tree_sha256"] == fingerprint(out).tree_sha256
    ran = subprocess.run(["make"], cwd=out, capture_output=True, text=True, check=False)
    assert "REGENERATED" not in ran.stdout and "BUG: stale" in ran.stdout
