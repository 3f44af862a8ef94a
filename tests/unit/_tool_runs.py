"""Running real tools in tmp_path for the identity and echo tests (tests/unit/test_identity_*.py,
tests/unit/test_echo.py): every helper returns the ``Outcome`` a host runner would have built
from the same run, with ``workdir`` set to the tree the command ran in."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from repomin.failure.facets import Candidate
from repomin.failure.identity import observe
from repomin.runners.base import Outcome

#: Environment variables that would change what the tools print (colours, width, plugins).
_DROPPED = ("PYTEST_", "PYTHON", "FORCE_COLOR", "NO_COLOR", "PY_COLORS", "NODE_OPTIONS", "CLICOLOR")


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        LC_ALL="C",
        LANG="C",
        COLUMNS="80",
        TERM="dumb",
    )
    env.update(extra or {})
    return env


def _no_core_dumps() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def need(tool: str) -> str:
    """The tool's path, or skip the test with a visible reason."""
    found = shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} not installed")
    return found


def write(root: Path, files: Mapping[str, str]) -> Path:
    """Write ``files`` (relative path -> dedented text) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def run(
    workdir: Path,
    *argv: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> Outcome:
    """Run ``argv`` in ``cwd`` (default: ``workdir``), the tree being ``workdir``."""
    proc = subprocess.run(
        list(argv),
        cwd=cwd or workdir,
        capture_output=True,
        timeout=timeout,
        env=_env(env),
        preexec_fn=_no_core_dumps,
        check=False,
    )
    rc = proc.returncode
    return Outcome(
        exit_code=rc,
        stdout=proc.stdout,
        stderr=proc.stderr,
        signal=-rc if rc < 0 else None,
        workdir=str(workdir),
    )


def python(
    workdir: Path, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> Outcome:
    """This interpreter (the venv's, where pytest is installed) run with ``args``."""
    return run(workdir, sys.executable, *args, cwd=cwd, env=env)


def pytest_run(
    workdir: Path, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> Outcome:
    """``python -m pytest -p no:cacheprovider ARGS`` in the tree."""
    return python(workdir, "-m", "pytest", "-p", "no:cacheprovider", *args, cwd=cwd, env=env)


def facet(outcome: Outcome, name: str) -> list[Candidate]:
    """The values of one facet this outcome shows (``[]``: none)."""
    return observe(outcome).get(name, [])


def by_test(outcome: Outcome) -> dict[str, Candidate]:
    """The python facet's values keyed by their test id."""
    return {value["test"]: value for value in facet(outcome, "python")}


class Runs:
    """Outcomes by name, each run on first use and then kept.

    The fixtures that hold them are session-scoped: under ``-n`` xdist interleaves the tests of
    several modules on one worker, and a module-scoped fixture would be set up (and its tools
    run) again each time the worker came back to its module.
    """

    def __init__(self, make: Callable[[str], Outcome]) -> None:
        self._make = make
        self._done: dict[str, Outcome] = {}

    def __getitem__(self, name: str) -> Outcome:
        if name not in self._done:
            self._done[name] = self._make(name)
        return self._done[name]
