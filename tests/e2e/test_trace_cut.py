"""End-to-end: on a generated 5,000-file repository where the command opens 10 files, the
trace-guided cut removes all the others in one accepted candidate (visible in ``events``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_repo
from tests.e2e._reduce import reduce_ok

NEEDED = [f"d{i}/needed{i}.txt" for i in range(1, 11)]
COMMAND = (
    f"cat {' '.join(NEEDED)} 2>/dev/null | grep -c NEEDED | grep -qx 10 "
    "&& { echo 'BUG: ten needed'; exit 1; }; exit 0"
)


def reduce(src: Path, out: Path, *extra: str) -> dict[str, Any]:
    return reduce_ok(src, out, COMMAND, "BUG: ten", "--jobs", "2", *extra)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_trace_cut_on_5000_files(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 5000, NEEDED, seed=3)
    report = reduce(src, tmp_path / "out")

    assert report["source"]["files"] == 5000
    assert report["execution"]["trace"] == "strace"
    accepted = [e for e in report["events"] if e.get("decision") == "accepted"]
    first = accepted[0]
    assert first["phase"] == "trace" and first["files"] == 10
    assert "delete the 4990 files" in first["description"]
    info = next(e for e in report["events"] if e["phase"] == "trace" and e["decision"] == "info")
    assert "touched 10 of 5000 files" in info["description"]
    trace = next(p for p in report["phase_statistics"]["phases"] if p["name"] == "trace")
    assert (trace["accepted"], trace["rejected"], trace["oracle_samples"]) == (1, 0, 1)
    assert trace["files_removed"] == 4990
    files = next(p for p in report["phase_statistics"]["phases"] if p["name"] == "files")
    assert files["accepted"] == 0  # nothing left for file deletion to find
    payload = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*"))
    assert [p for p in payload if p.endswith(".txt")] == sorted(NEEDED)
    for rel in NEEDED:
        assert (tmp_path / "out" / rel).read_text() == "NEEDED\n"


@pytest.mark.slow
def test_no_trace_is_recorded_and_still_reduces(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 120, NEEDED, seed=5)
    report = reduce(src, tmp_path / "out", "--no-trace")
    assert report["execution"]["trace"] == "disabled"
    assert "trace" not in report["execution"]["reduction_strategy"]
    assert all(e["phase"] != "trace" for e in report["events"])
    assert report["output"]["files"] == 10
