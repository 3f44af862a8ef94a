"""The versions of the tools that produced the failure, for the people who read the report.

A reproducer is read with "which Python, which pytest, which compiler?" in mind: the same tree
can fail on one version and pass on the next. So when samples run on this machine (the host
backend, no cluster), :func:`probe_versions` asks each tool the command names for its version,
once, the way the user's own shell would find it (their ``PATH`` and environment, plus
``--env``), and records the first line it prints: ``python3`` -> ``Python 3.11.7``, ``python -m
pytest`` -> ``pytest 9.2.0``, ``node`` -> ``v20.20.0``, ``gcc`` -> ``gcc (Debian 12.2.0-14)
12.2.0``; plus the operating system (``platform.platform()``). These are not samples: they run
no part of the tree, in a scratch directory, and a tool that does not answer within
:data:`PROBE_TIMEOUT` seconds is left out. With Docker or a cluster the tools that ran are not
this machine's, so nothing is probed (the report records the image or the workers instead).
Only tools named by a bare name (found on ``PATH``) or an absolute path are asked; a relative
path names a file of the tree, which runs only inside a sample.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping

from repomin.analysis.refs.graph import command_tokens

#: Seconds a tool may take to print its version.
PROBE_TIMEOUT = 10.0

#: Longest version line recorded.
VERSION_LIMIT = 200

#: Tool name (a command's basename) -> the arguments that make it print its version.
VERSION_FLAGS: dict[str, tuple[str, ...]] = {
    "python": ("--version",),
    "pytest": ("--version",),
    "node": ("--version",),
    "npm": ("--version",),
    "tsc": ("--version",),
    "java": ("-version",),
    "javac": ("-version",),
    "mvn": ("-v",),
    "gradle": ("--version",),
    "gcc": ("--version",),
    "g++": ("--version",),
    "cc": ("--version",),
    "c++": ("--version",),
    "clang": ("--version",),
    "clang++": ("--version",),
    "make": ("--version",),
    "cmake": ("--version",),
    "rustc": ("--version",),
    "cargo": ("--version",),
    "go": ("version",),
}
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")


def tools_of(command: str) -> list[tuple[str, list[str]]]:
    """(label, argv) of each version probe for the tools ``command`` names, each once;
    ``python -m pytest`` asks that interpreter for its pytest."""
    tokens = command_tokens(command)
    probes: dict[str, list[str]] = {}
    for index, token in enumerate(tokens):
        if "/" in token and not token.startswith("/"):
            continue  # a path into the tree: never run outside a sample
        name = token.rsplit("/", 1)[-1]
        if _PYTHON.match(name):
            probes.setdefault(name, [token, "--version"])
            if tokens[index + 1 : index + 3] == ["-m", "pytest"]:
                probes.setdefault("pytest", [token, "-m", "pytest", "--version"])
        elif name in VERSION_FLAGS:
            probes.setdefault(name, [token, *VERSION_FLAGS[name]])
    return list(probes.items())


def probe_versions(command: str, env: Mapping[str, str]) -> dict[str, str]:
    """The operating system and the first line each named tool prints for its version."""
    found = {"os": platform.platform()}
    environ = {**os.environ, **env}
    with tempfile.TemporaryDirectory(prefix="repomin-versions-") as scratch:
        for label, argv in tools_of(command):
            if shutil.which(argv[0], path=environ.get("PATH")) is None:
                continue
            line = _first_line(argv, environ, scratch)
            if line:
                found[label] = line
    return found


def _first_line(argv: list[str], env: Mapping[str, str], cwd: str) -> str | None:
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = (proc.stdout + b"\n" + proc.stderr).decode("utf-8", "replace")
    for line in text.splitlines():
        clean = "".join(ch for ch in line.strip() if ch.isprintable())
        if clean:
            return clean[:VERSION_LIMIT]
    return None
