"""CONTRIBUTING.md's guide pass at full width on a real Dask cluster.

``tests/unit/guide_pass.py`` was written from the guide alone: one candidate per ``.txt``
file through ``problem.try_first``, nothing about slots, batches or the oracle. Registered
with the guide's one ``REGISTRY`` line and run through ``repomin.app.reduce.execute`` with the
shared cluster of ``.ci/run`` and three slots, the search layer decides its candidates several
at a time on the workers and folds the accepted ones (a ``fold of N candidates`` event), and
the payload is the one ``--jobs 1`` reaches on this machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import repomin.passes
from repomin.cluster.wiring import ClusterConfig
from tests.unit.guide_pass import DropText
from tests.unit.test_guide_pass import JUNK, reduce_with_guide_pass

from ._support import shared_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_the_guide_pass_runs_at_full_width_on_the_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = shared_cluster()
    monkeypatch.setitem(repomin.passes.REGISTRY, DropText.name, DropText)  # the guide's line
    (tmp_path / "local").mkdir()
    (tmp_path / "cluster").mkdir()
    _, local = reduce_with_guide_pass(tmp_path / "local", jobs=1)
    cluster = ClusterConfig(address, jobs_from_cluster=False)
    report, payload = reduce_with_guide_pass(tmp_path / "cluster", jobs=3, cluster=cluster)

    assert payload == local
    ex = report["execution"]
    assert ex["dispatch_engine"] == "dask" and ex["jobs"] == 3
    folds = [
        e
        for e in report["events"]
        if e["phase"] == "droptext"
        and e["decision"] == "accepted"
        and e["description"].startswith("fold of ")
    ]
    assert folds, [e["description"] for e in report["events"]]  # candidates decided together
    own = {p["name"]: p for p in report["phase_statistics"]["phases"]}["droptext"]
    assert own["accepted"] == len(JUNK) and own["files_removed"] == len(JUNK)
