"""Helpers shared by the Docker tests: the engine check, test images, labels, a sample tree."""

from __future__ import annotations

import gc
import os
import uuid
import warnings
from pathlib import Path
from typing import Any

from repomin.runners.base import Outcome, RunRequest
from repomin.tree import Entry, Tree

BUSYBOX = "repomin-test/busybox:1"
NOSHELL = "repomin-test/noshell:1"
PYTHON = "repomin-test/python:1"
LABEL_PREFIX = "repomin-pytest-"
HERE = Path(__file__).parent


def _engine() -> tuple[Any | None, str | None]:
    """A client and ``None``, or ``None`` and why the Docker tests cannot run."""
    try:
        from docker.client import DockerClient
        from docker.errors import DockerException, ImageNotFound
        from requests.exceptions import RequestException
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        return None, f"the docker SDK is not importable ({exc})"
    failure = None
    try:
        client = DockerClient.from_env(timeout=10)
        client.ping()
    except (DockerException, RequestException, OSError) as exc:
        failure = f"no Docker engine answers ({exc}); run .ci/docker-setup.sh"
    if failure is not None:
        # docker-py leaks the socket of a failed connect (the traceback holds it): collect it
        # now, quietly, rather than in whichever test happens to run the garbage collector.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        return None, failure
    try:
        client.images.get(BUSYBOX)
    except ImageNotFound:
        return None, f"test image {BUSYBOX} is missing; run docker/build-test-images.sh"
    except (DockerException, RequestException) as exc:
        return None, f"the Docker engine failed ({exc})"
    return client, None


CLIENT, SKIP_REASON = _engine()


def has_image(ref: str) -> bool:
    if CLIENT is None:
        return False
    try:
        CLIENT.images.get(ref)
    except Exception:
        return False
    return True


def leftovers(label: str | None = None) -> list[str]:
    """Names of containers and volumes with a test label owned by this process."""
    assert CLIENT is not None
    found: list[str] = []
    pid = str(os.getpid())
    for container in CLIENT.api.containers(all=True, filters={"label": "io.repomin.session"}):
        labels = container.get("Labels") or {}
        session = labels.get("io.repomin.session", "")
        if labels.get("io.repomin.pid") != pid or not session.startswith(LABEL_PREFIX):
            continue
        if label is None or session == label:
            found.append(f"container {container['Id'][:12]} ({session})")
    volumes = CLIENT.api.volumes(filters={"label": "io.repomin.session"}).get("Volumes") or []
    for volume in volumes:
        labels = volume.get("Labels") or {}
        session = labels.get("io.repomin.session", "")
        if labels.get("io.repomin.pid") != pid or not session.startswith(LABEL_PREFIX):
            continue
        if label is None or session == label:
            found.append(f"volume {volume['Name']} ({session})")
    return found


def new_label() -> str:
    return f"{LABEL_PREFIX}{uuid.uuid4().hex[:12]}"


TREE = Tree.of(
    {
        "README.txt": Entry("file", b"hello from the tree\n"),
        "bin/run.sh": Entry("file", b'#!/bin/sh\necho ran "$@"\nexit 3\n', 0o755),
        "data/empty": Entry("dir"),
        "data/secret.txt": Entry("file", b"private\n", 0o600),
        "link": Entry("symlink", b"README.txt"),
    }
)


def run(runner: Any, command: str, timeout: float = 10.0, **env: str) -> Outcome:
    return runner.run(TREE, RunRequest(command, env, timeout))  # type: ignore[no-any-return]
