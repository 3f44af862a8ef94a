"""End-to-end reductions through ``repomin reduce --cluster``.

The payload/holdout tests use the shared cluster of ``.ci/run`` (``REPOMIN_TEST_CLUSTER``);
the fault tests start a private one because they kill its processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_repo, reduce_argv

from ._support import SRC, LocalCluster, shared_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

NEEDED = ["d2/f0.txt", "f1.txt"]


def _command(marks: Path, extra: str = "") -> str:
    # Every run leaves a mark, so the test can count processes against the report's samples.
    return (
        f"mktemp -p {marks} >/dev/null; sleep 0.05; {extra}"
        "cat d2/f0.txt f1.txt 2>/dev/null | grep -c NEEDED | grep -qx 2 "
        "&& { echo BUG; exit 1; }; exit 0"
    )


def _reduce(src: Path, out: Path, command: str, *extra: str, **kw: Any) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("REPOMIN_CLUSTER", None)
    argv = reduce_argv(
        src, out, command, "BUG", "--baseline-runs", "4", "--final-runs", "3", "--no-trace", "-q",
        *extra,
    )  # fmt: skip
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def _finish(proc: subprocess.Popen[bytes], code: int = 0) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == code, (out + err).decode()[-3000:]
    return err.decode()


def _payload(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out.parent / f"{out.name}.repomin/report.json").read_text())
    return data


def _validate(out: Path) -> None:
    report = out.parent / f"{out.name}.repomin/report.json"
    done = subprocess.run(
        [sys.executable, "-m", "repomin", "report", "validate", str(report), "--payload", str(out)],
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _marks(path: Path) -> int:
    return len(list(path.iterdir()))


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """A 60-file deterministic case and its payload reduced locally with ``--jobs 1``."""
    root = tmp_path_factory.mktemp("case")
    src = root / "repo"
    make_repo(src, 60, NEEDED, seed=3)
    marks = root / "ref-marks"
    marks.mkdir()
    ref = root / "ref"
    _finish(_reduce(src, ref, _command(marks), "--jobs", "1", "--no-session"))
    return src, _payload(ref)


def test_same_payload_as_local_and_every_run_counted(
    tmp_path: Path, case: tuple[Path, dict[str, bytes]]
) -> None:
    address = shared_cluster()
    src, reference = case
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "out"
    _finish(_reduce(src, out, _command(marks), "--cluster", address, "--no-session"))
    assert _payload(out) == reference
    _validate(out)
    ex = _report(out)["execution"]
    assert ex["backend"] == "host" and ex["dispatch_engine"] == "dask"
    assert ex["jobs"] == ex["cluster_threads"] >= 1  # --jobs defaults to the worker threads
    assert address not in json.dumps(_report(out))
    assert ex["oracle_samples"] == _marks(marks)
    assert 0 < ex["cluster_bytes_per_sample"] < 20_000


def test_flaky_case_certified_by_the_holdout(tmp_path: Path) -> None:
    address = shared_cluster()
    src = tmp_path / "repo"
    make_repo(src, 12, NEEDED, seed=5)
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "out"
    flaky = "[ $(od -An -N1 -tu1 /dev/urandom) -lt 200 ] || exit 0; "
    _finish(
        _reduce(
            src,
            out,
            _command(marks, flaky),
            "--cluster",
            address,
            "--no-session",
            "--baseline-runs",
            "20",
            "--final-runs",
            "20",
            "--holdout-runs",
            "30",
            "--holdout-min-rate",
            "0.4",
        )
    )
    report = _report(out)
    assert report["holdout_certification"]["status"] == "certified"
    assert sorted(_payload(out)) == sorted(NEEDED)
    assert report["execution"]["oracle_samples"] == _marks(marks)
    _validate(out)


def _wait_for_journal(journal: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_text().strip():
            return
        time.sleep(0.05)
    _, err = proc.communicate()
    pytest.fail(f"no accepted mutation before exit {proc.returncode}: {err.decode()[-2000:]}")


def test_worker_killed_mid_reduction(tmp_path: Path, case: tuple[Path, dict[str, bytes]]) -> None:
    src, reference = case
    cluster = LocalCluster(tmp_path / "dask", workers=3)
    try:
        marks = tmp_path / "marks"
        marks.mkdir()
        out = tmp_path / "out"
        proc = _reduce(src, out, _command(marks), "--cluster", cluster.address)
        _wait_for_journal(tmp_path / "out.repomin-session" / "journal.jsonl", proc)
        cluster.kill_worker(cluster.workers[1])
        _finish(proc)
        assert _payload(out) == reference
        _validate(out)  # complete coverage: every accounting identity holds
        ex = _report(out)["execution"]
        # The killed worker's running sample (one thread) may have started: it counts nowhere.
        assert ex["oracle_samples"] <= _marks(marks) <= ex["oracle_samples"] + 1
    finally:
        cluster.stop()


def test_scheduler_killed_exits_3_and_resume_finishes(
    tmp_path: Path, case: tuple[Path, dict[str, bytes]]
) -> None:
    src, reference = case
    cluster = LocalCluster(tmp_path / "dask", workers=2)
    marks = tmp_path / "marks"
    marks.mkdir()
    out = tmp_path / "out"
    session = tmp_path / "out.repomin-session"
    try:
        proc = _reduce(src, out, _command(marks), "--cluster", cluster.address, "--jobs", "2")
        _wait_for_journal(session / "journal.jsonl", proc)
        cluster.kill_scheduler()
        err = _finish(proc, 3)
    finally:
        cluster.stop()
    assert "lost the Dask scheduler" in err and "--resume" in err
    assert (session / "config.json").exists() and not out.exists()
    _finish(_reduce(src, out, _command(marks), "--jobs", "2", "--resume"))
    assert _payload(out) == reference
    assert _report(out)["execution"]["resumed"] is True
    _validate(out)
