"""The optional parts of ReproMin: ``pip install repomin`` is the host runner and the report
tools; ``repomin[docker]`` adds the Docker SDK and ``repomin[cluster]`` Dask's ``distributed``.

The commands run in a real subprocess whose imports of ``docker``, ``distributed`` and ``dask``
fail as if they were not installed (a meta-path finder installed by a ``sitecustomize`` on
``PYTHONPATH``; every attempt is logged). The light commands must not even try them; a command
that needs one exits 2 with one line naming the ``pip install`` that adds it. A whole host
reduction under the same block is ``tests/e2e/test_light_install.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from repomin.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
V1 = ROOT / "tests" / "fixtures" / "reports" / "v1.json"
#: The top-level modules of the optional packages (``dask`` comes with ``distributed``).
BLOCKED = ("docker", "distributed", "dask")
#: Each extra and the one package it adds.
EXTRAS = {"docker": "docker", "cluster": "distributed"}

SITECUSTOMIZE = f"""
import os
import sys

BLOCKED = {set(BLOCKED)!r}


class BlockOptional:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in BLOCKED:
            return None
        with open(os.environ["REPOMIN_TEST_IMPORT_LOG"], "a") as log:
            log.write(name + "\\n")
        raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)


sys.meta_path.insert(0, BlockOptional())
"""


@dataclass(frozen=True)
class Blocked:
    """A ``repomin`` subprocess without the optional packages: its result and what it tried."""

    returncode: int
    stdout: str
    stderr: str
    attempted: list[str]


def without_extras(tmp_path: Path, *args: str, timeout: float = 120) -> Blocked:
    """``python -m repomin ARGS`` (or ``python -c CODE`` when ``args[0] == "-c"``) with
    ``docker``, ``distributed`` and ``dask`` made unimportable."""
    site = tmp_path / "block-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "attempted-imports.log"
    log.write_text("")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(SRC)]),
        "REPOMIN_TEST_IMPORT_LOG": str(log),
    }
    env.pop("REPOMIN_CLUSTER", None)
    argv = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "repomin", *args]
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=tmp_path
    )
    attempted = sorted({line for line in log.read_text().splitlines() if line})
    return Blocked(done.returncode, done.stdout, done.stderr, attempted)


def one_line_with(result: Blocked, pip_line: str) -> str:
    """The single stderr line of a refused command; it names ``pip_line``."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("repomin: error: "), lines[0]
    assert pip_line in lines[0], lines[0]
    return lines[0]


def tiny_tree(root: Path) -> Path:
    root.mkdir()
    (root / "bug.txt").write_text("BUG\n")
    (root / "noise.txt").write_text("nothing here\n")
    return root


def test_the_block_blocks(tmp_path: Path) -> None:
    """The probe itself: with the block, importing each optional package fails and is logged."""
    code = (
        "import importlib\n"
        "for name in ('docker', 'distributed', 'dask', 'docker.errors'):\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError:\n"
        "        print('blocked', name)\n"
    )
    result = without_extras(tmp_path, "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:4] == [
        "blocked docker",
        "blocked distributed",
        "blocked dask",
        "blocked docker.errors",
    ]
    assert result.attempted == ["dask", "distributed", "docker"]  # docker.errors: docker first


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("reduce", "--help"),
        ("report", "--help"),
        ("report", "replay", "--help"),
        ("report", "validate", str(V1)),
        ("report", "compare", str(V1), str(V1)),
    ],
    ids=["help", "reduce-help", "report-help", "replay-help", "validate", "compare"],
)
def test_light_commands_never_import_the_extras(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = without_extras(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert result.attempted == []


def test_validating_a_docker_report_needs_no_docker(tmp_path: Path) -> None:
    data = json.loads(V1.read_text())
    data["execution"].update(
        backend="docker",
        docker_image="repomin-test/busybox:1",
        docker_image_id="sha256:" + "ab" * 32,
        docker_network="none",
        docker_memory="512m",
    )
    report = tmp_path / "docker-report.json"
    report.write_text(json.dumps(data))
    result = without_extras(tmp_path, "report", "validate", str(report))
    assert result.returncode == 0, result.stderr
    assert "report valid" in result.stdout
    assert result.attempted == []


def test_backend_docker_without_the_sdk_names_the_extra(tmp_path: Path) -> None:
    src = tiny_tree(tmp_path / "src")
    out = tmp_path / "out"
    result = without_extras(
        tmp_path,
        "reduce", str(src), "-o", str(out), "--command", "cat bug.txt; exit 1", "--match", "BUG",
        "--backend", "docker", "--image", "repomin-test/busybox:1",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    line = one_line_with(result, "pip install 'repomin[docker]'")
    assert "--backend docker" in line
    assert not out.exists()
    assert result.attempted == ["docker"]


def test_cluster_without_dask_names_the_extra(tmp_path: Path) -> None:
    src = tiny_tree(tmp_path / "src")
    out = tmp_path / "out"
    result = without_extras(
        tmp_path,
        "reduce", str(src), "-o", str(out), "--command", "cat bug.txt; exit 1", "--match", "BUG",
        "--cluster", "tcp://127.0.0.1:1",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    line = one_line_with(result, "pip install 'repomin[cluster]'")
    assert "--cluster" in line
    assert not out.exists()
    assert result.attempted == ["distributed"]


def test_require_names_the_extra_for_a_missing_module() -> None:
    from repomin.runners.extras import require

    with pytest.raises(UsageError) as caught:
        require("repomin_test_no_such_module", "docker", "--backend docker")
    message = caught.value.message
    assert message.startswith("--backend docker needs the repomin_test_no_such_module package")
    assert message.endswith("pip install 'repomin[docker]'")
    assert "\n" not in message


def test_require_returns_an_installed_module() -> None:
    from repomin.runners.extras import require

    assert require("json", "docker").dumps([]) == "[]"


def test_require_reports_a_broken_install(tmp_path: Path) -> None:
    """An extra that is installed but fails to import is named too, with the reason."""
    from repomin.runners.extras import require

    pkg = tmp_path / "repomin_test_broken_extra"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import repomin_test_missing_dependency\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(UsageError) as caught:
            require("repomin_test_broken_extra", "cluster", "--cluster")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("repomin_test_broken_extra", None)
    message = caught.value.message
    assert "failed to import" in message and "repomin_test_missing_dependency" in message
    assert message.endswith("pip install 'repomin[cluster]'")


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = requirement
        for stop in "<>=![; ":
            name = name.partition(stop)[0]
        names.add(name.lower())
    return names


def test_pyproject_keeps_docker_and_dask_in_their_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = _requirement_names(project["dependencies"])
    assert base.isdisjoint({"docker", "distributed", "dask"}), base
    extras = project["optional-dependencies"]
    for extra, module in EXTRAS.items():
        assert _requirement_names(extras[extra]) == {module}, extras[extra]
    # .ci/run installs '.[test]' only: the suite (Docker and cluster tests included) needs both.
    assert "repomin[cluster,docker]" in extras["test"], extras["test"]
