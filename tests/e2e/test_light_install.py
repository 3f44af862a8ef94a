"""A light install (``pip install repomin``: no ``docker``, no ``distributed``/``dask``) reduces
on the host and validates, compares and replays host reports, and never tries to import the
optional packages; replaying a docker report, or on a cluster, exits 2 with the one ``pip
install`` line that adds what is missing. The subprocess and its import block are
``tests/unit/test_extras.py``'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.test_extras import one_line_with, without_extras

COMMAND = "if grep -q BUG bug.txt; then echo 'Error: BUG found' >&2; exit 1; fi"


@pytest.mark.slow
def test_a_host_reduction_and_its_report_without_the_extras(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    (src / "bug.txt").write_text("header\nBUG\nfooter\n")
    for i in range(6):
        (src / "docs" / f"page{i}.txt").write_text(f"page {i}\n")
    out = tmp_path / "out"
    reduced = without_extras(
        tmp_path,
        "reduce", str(src), "-o", str(out), "--command", COMMAND, "--match", "BUG found",
        "--baseline-runs", "2", "--final-runs", "3", "--no-session", "-q",
        timeout=600,
    )  # fmt: skip
    assert reduced.returncode == 0, reduced.stderr
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["bug.txt"]
    assert reduced.attempted == []

    sidecar = tmp_path / "out.repomin"
    report = sidecar / "report.json"
    checked = without_extras(tmp_path, "report", "validate", str(sidecar), "--payload", str(out))
    assert checked.returncode == 0, checked.stderr
    compared = without_extras(tmp_path, "report", "compare", str(report), str(report))
    assert compared.returncode == 0, compared.stderr
    replayed = without_extras(
        tmp_path, "report", "replay", str(report), "--payload", str(out), "--yes", "--runs", "2"
    )
    assert replayed.returncode == 0, replayed.stderr
    assert (checked.attempted, compared.attempted, replayed.attempted) == ([], [], [])

    on_cluster = without_extras(
        tmp_path, "report", "replay", str(report), "--payload", str(out), "--yes",
        "--cluster", "tcp://127.0.0.1:1",
    )  # fmt: skip
    assert on_cluster.returncode == 2, on_cluster.stderr
    one_line_with(on_cluster, "pip install 'repomin[cluster]'")

    data = json.loads(report.read_text())
    data["execution"].update(
        backend="docker",
        docker_image="repomin-test/busybox:1",
        docker_image_id="sha256:" + "ab" * 32,
    )
    docker_report = tmp_path / "docker-report.json"
    docker_report.write_text(json.dumps(data))
    for options in ([], ["--memory", "1g"]):
        result = without_extras(
            tmp_path, "report", "replay", str(docker_report), "--payload", str(out), "--yes",
            *options,
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        one_line_with(result, "pip install 'repomin[docker]'")
        assert "docker report" in result.stderr, result.stderr
