"""A whole ``repomin reduce`` through the CLI, for the end-to-end tests that only need its
report: the tree written from a mapping, the reduction run with test-sized sampling, the exit
code and the report's structure checked before the test reads what it is about."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.io import structural_errors


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """``files`` (relative path -> text) written under ``root``; returns ``root``."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def reduce_ok(
    src: Path, out: Path, command: str, match: str, *extra: str, final_runs: int = 3
) -> dict[str, Any]:
    """``repomin reduce SRC -o OUT`` with 2 baseline runs, no session and ``extra`` options;
    asserts it exits 0 with a structurally valid report, and returns the report."""
    result = CliRunner().invoke(
        cli,
        [
            "reduce", str(src), "-o", str(out), "--command", command, "--match", match,
            "--baseline-runs", "2", "--final-runs", str(final_runs), "--no-session", "-q",
            *extra,
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    sidecar = out.parent / f"{out.name}.repomin"
    report: dict[str, Any] = json.loads((sidecar / "report.json").read_text())
    assert structural_errors(report) == []
    return report
