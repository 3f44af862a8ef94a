"""``tool_versions`` of a Docker reduction are the image's: asked through the runner, not on
this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from repomin.app.reduce import ReduceOptions, execute
from repomin.app.versions import probe_through
from repomin.failure.contract import FailureSpec
from repomin.sampling.oracle import SamplingConfig
from tests.docker._support import PYTHON, has_image, leftovers, new_label
from tests.docker.conftest import RunnerFactory

pytestmark = pytest.mark.docker


def _image_says(client: Any, image: str, script: str) -> str:
    out: bytes = client.containers.run(
        image, ["sh", "-c", script], remove=True, network_mode="none"
    )
    return out.decode().strip()


def test_a_docker_reduction_records_the_images_python(client: Any, tmp_path: Path) -> None:
    if not has_image(PYTHON):
        pytest.skip(f"{PYTHON} is missing; run docker/build-test-images.sh --python")
    src = tmp_path / "repo"
    src.mkdir()
    (src / "fail.py").write_text("import helper\nraise ValueError('broken ' + helper.WORD)\n")
    (src / "helper.py").write_text("WORD = 'here'\n")
    (src / "unused.txt").write_text("noise\n" * 50)
    label = new_label()
    options = ReduceOptions(
        src=src,
        output=tmp_path / "out",
        command="python3 fail.py",
        spec=FailureSpec(match="ValueError: broken"),
        timeout=30,
        backend="docker",
        backend_options={"image": PYTHON, "session_label": label, "memory": "256m"},
        sampling=SamplingConfig(baseline_runs=2, final_runs=2),
        jobs=2,
        use_session=False,
    )
    result = execute(options)
    assert result.exit_code == 0
    versions = result.report["tool_versions"]
    expected = _image_says(client, PYTHON, "python3 --version")
    assert expected.startswith("Python 3.")
    assert versions["python3"] == expected
    pretty = _image_says(client, PYTHON, "grep ^PRETTY_NAME= /etc/os-release | cut -d= -f2-")
    assert versions["os"].startswith(pretty.strip('"') + " (Linux ")
    assert leftovers(label) == []


def test_a_tool_the_image_lacks_is_absent(module_runner: RunnerFactory) -> None:
    runner = module_runner(memory="64m")  # busybox: no python3, no /etc/os-release
    versions = probe_through(runner, "python3 -m pytest && gcc a.c", {})
    assert versions is not None
    assert set(versions) == {"os"} and versions["os"].startswith("Linux ")
