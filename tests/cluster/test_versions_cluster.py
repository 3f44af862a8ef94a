"""``tool_versions`` of a cluster reduction come from a worker: asked through the runner."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from repomin.app.versions import probe_through
from repomin.cluster.runner import ClusterRunner

from ._support import LocalCluster

pytestmark = pytest.mark.cluster


def test_the_versions_are_the_workers(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "dask", workers=1)
    try:
        runner = ClusterRunner(cluster.address, {"backend": "host"})
        try:
            versions = probe_through(runner, f"'{sys.executable}' -m pytest -q", {})
        finally:
            runner.close()
    finally:
        cluster.stop()
    assert versions is not None
    major, minor = sys.version_info[:2]
    assert versions[os.path.basename(sys.executable)].startswith(f"Python {major}.{minor}.")
    assert versions["pytest"].startswith("pytest ")
    assert os.uname().release in versions["os"]
