"""A whole reduction with ``backend="docker"`` ends where the host backend ends.

Runs the application (not the CLI, whose Docker options the lead wires) on a generated
repository with a deterministic command, once per backend, and compares payload and report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from repomin.app.reduce import ReduceOptions, execute
from repomin.failure.contract import FailureSpec
from repomin.sampling.oracle import SamplingConfig
from tests.conftest import make_repo
from tests.docker._support import BUSYBOX, leftovers, new_label

pytestmark = pytest.mark.docker

NEEDED = ["d1/f0.txt", "d2/f1.txt"]
CHECK = (
    "cat d1/f0.txt d2/f1.txt 2>/dev/null | grep -c NEEDED | grep -qx 2 "
    "&& { echo 'BUG: both needed'; exit 1; }; exit 0"
)


def reduce(src: Path, out: Path, backend: str, **backend_options: Any) -> dict[str, Any]:
    options = ReduceOptions(
        src=src,
        output=out,
        command=CHECK,
        spec=FailureSpec(match="BUG: both"),
        timeout=20,
        backend=backend,
        backend_options=backend_options,
        sampling=SamplingConfig(baseline_runs=5, final_runs=3),
        jobs=2,
        use_session=False,
    )
    result = execute(options)
    assert result.exit_code == 0
    return result.report


def payload(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_docker_reduction_matches_the_host_one(client: Any, tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src, 24, NEEDED, seed=3)
    host = reduce(src, tmp_path / "host-out", "host")
    label = new_label()
    docker = reduce(
        src, tmp_path / "docker-out", "docker", image=BUSYBOX, session_label=label, memory="128m"
    )
    assert payload(tmp_path / "docker-out") == payload(tmp_path / "host-out")
    assert payload(tmp_path / "docker-out") == {rel: "NEEDED\n" for rel in NEEDED}
    for key in ("files", "bytes", "tree_content_sha256"):
        assert docker["output"][key] == host["output"][key]
    execution = docker["execution"]
    assert execution["backend"] == "docker"
    assert execution["docker_image"] == BUSYBOX
    assert execution["docker_image_id"] == client.images.get(BUSYBOX).id
    assert execution["docker_network"] == "none"
    assert execution["docker_memory"] == "128m"
    assert leftovers(label) == []
