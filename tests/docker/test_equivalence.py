"""The same tree and deterministic command give the same outcome on the host and in Docker.

This is what makes a reduction with ``--backend docker`` end where the host backend ends.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from repomin.runners.base import RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree
from tests.docker._support import PYTHON, has_image

pytestmark = pytest.mark.docker

# Tools both coreutils and busybox have, with output they agree on byte for byte.
COMMAND = (
    "find . | LC_ALL=C sort; "
    'for f in $(find . -type f | LC_ALL=C sort); do md5sum < "$f"; done; '
    "test -x tool/run && ./tool/run; "
    "grep -rl BUG . | LC_ALL=C sort >&2; "
    "grep -rq BUG . && exit 3; exit 0"
)


def generated_tree(seed: int) -> Tree:
    rng = random.Random(seed)
    entries: dict[str, Entry] = {}
    for i in range(60):
        depth = rng.randint(0, 3)
        path = "/".join(f"d{rng.randint(0, 4)}" for _ in range(depth))
        body = "".join(rng.choice("abcdefgh \n") for _ in range(rng.randint(0, 400)))
        if i == 17:
            body += "\nBUG here\n"
        entries[f"{path}/f{i}.txt" if path else f"f{i}.txt"] = Entry("file", body.encode())
    entries["tool/run"] = Entry("file", b"#!/bin/sh\necho tool ran\n", 0o755)
    entries["kept/empty"] = Entry("dir")
    return Tree.of(entries)


@pytest.fixture(scope="module")
def host() -> Any:
    runner = HostRunner()
    yield runner
    runner.close()


@pytest.mark.parametrize("transport", ["bind", "stream"])
def test_docker_and_host_agree(module_runner: Any, host: Any, transport: str) -> None:
    from repomin.errors import UsageError

    try:
        docker = module_runner(transport=transport)
    except UsageError as exc:
        pytest.skip(f"the {transport} transport is not available here: {exc}")
    for seed in range(2):
        tree = generated_tree(seed)
        smaller = tree.without([p for p in tree if p.startswith("d1")])
        for candidate in (tree, smaller):
            request = RunRequest(COMMAND, {}, 20)
            on_host, in_docker = host.run(candidate, request), docker.run(candidate, request)
            assert in_docker.exit_code == on_host.exit_code
            assert in_docker.stdout == on_host.stdout
            assert in_docker.stderr == on_host.stderr
            assert in_docker.stdout.count(b"\n") > 60


def test_python_failures_look_the_same(module_runner: Any, host: Any) -> None:
    if not has_image(PYTHON):
        pytest.skip(f"{PYTHON} is missing; run docker/build-test-images.sh --python")
    import shutil

    if shutil.which("python3") is None:
        pytest.skip("no python3 on the host")
    docker = module_runner(image=PYTHON, memory="128m")
    tree = Tree.of(
        {
            "pkg/__init__.py": Entry("file", b""),
            "pkg/core.py": Entry("file", b"def f(x):\n    return 1 / x\n"),
            "main.py": Entry("file", b"from pkg.core import f\nprint('start')\nf(0)\n"),
        }
    )
    request = RunRequest("python3 -B main.py", {"PYTHONHASHSEED": "0"}, 20)
    on_host, in_docker = host.run(tree, request), docker.run(tree, request)
    assert in_docker.exit_code == on_host.exit_code == 1
    assert in_docker.stdout == on_host.stdout == b"start\n"
    # Tracebacks differ only in the directory the tree was materialised in.
    host_err = on_host.stderr.decode().replace(on_host.workdir, "<tree>")
    docker_err = in_docker.stderr.decode().replace(in_docker.workdir, "<tree>")
    assert docker_err == host_err
    assert docker_err.rstrip().endswith("ZeroDivisionError: division by zero")
    big = docker.run(tree, RunRequest("python3 -c 'b = bytearray(400 * 2**20)'", {}, 20))
    assert big.resource_exhausted
