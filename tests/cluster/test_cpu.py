"""A sample run on a Dask worker comes back with the worker's measured CPU time."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from repomin.cluster.runner import ClusterRunner
from repomin.runners.base import RunRequest
from repomin.tree import Entry, Tree

from ._support import LocalCluster

pytestmark = pytest.mark.cluster

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"


def test_the_workers_cpu_seconds_reach_the_client(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "dask", workers=1)
    runner = ClusterRunner(cluster.address, {"backend": "host"})
    try:
        tree = Tree.of({"a.txt": Entry("file", b"x\n")})
        command = f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(BURN)}"
        out = runner.run(tree, RunRequest(command, {}, 60.0, "cpu"))
        assert out.exit_code == 0 and out.infrastructure_error is None
        assert out.cpu_seconds is not None and 0.3 <= out.cpu_seconds <= 0.3 + 0.35
        idle = runner.run(tree, RunRequest("sleep 0.3", {}, 60.0, "idle"))
        assert idle.cpu_seconds is not None and idle.cpu_seconds < 0.15
    finally:
        runner.close()
        cluster.stop()
