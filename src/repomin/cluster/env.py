"""What a worker's samples depend on besides the tree: its environment, compared across workers.

A sample's environment is part of its evidence, so every worker reports ``python``
(implementation and version), ``os`` (kernel name and the distribution's ID/VERSION_ID),
``arch``, the ReproMin version and protocol it runs, and what its inner runner describes
(``backend``, ``sample_isolation`` on the host, ``docker_image_id`` in Docker). Workers whose
environment differs from the first one's are refused unless mixed workers are allowed.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import repomin

#: Bumped whenever the payload or response format between client and worker changes.
PROTOCOL = 2

#: Fields of the inner runner's ``describe()`` that are part of the environment.
RUNNER_FIELDS = ("backend", "sample_isolation", "docker_image_id")


def os_release(path: Path = Path("/etc/os-release")) -> str:
    """``ID VERSION_ID`` of the distribution, or "" when the file is missing."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"')
    return " ".join(v for v in (fields.get("ID", ""), fields.get("VERSION_ID", "")) if v)


def describe_environment(runner_description: Mapping[str, Any]) -> dict[str, str]:
    env = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": " ".join(x for x in (platform.system(), os_release()) if x),
        "arch": platform.machine(),
        "repomin": f"{repomin.__version__} protocol {PROTOCOL}",
    }
    for name in RUNNER_FIELDS:
        value = runner_description.get(name)
        if value is not None:
            env[name] = str(value)
    return env


def environment_digest(env: Mapping[str, str]) -> str:
    blob = json.dumps(dict(sorted(env.items())), separators=(",", ":"))
    return hashlib.sha256(b"repomin-worker-env-v1\n" + blob.encode()).hexdigest()


def differences(reference: Mapping[str, str], other: Mapping[str, str]) -> list[str]:
    """``name: reference != other`` for every field that differs, sorted by name."""
    names = sorted(set(reference) | set(other))
    return [
        f"{n}: {reference.get(n, '-')!s} != {other.get(n, '-')!s}"
        for n in names
        if reference.get(n) != other.get(n)
    ]
