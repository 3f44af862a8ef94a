"""The runner protocol: the seam between the oracle and whatever executes commands.

A runner receives an immutable :class:`~repomin.tree.Tree` (not a directory) so that each
backend can choose how to give the sample a fresh copy: the host runner writes it to tmpfs, the
Docker runner bind-mounts or streams it. Runners are safe to call from several threads at once;
each call is one independent sample.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from repomin.tree import Tree

#: Captured output is truncated to this many bytes per stream (head and tail kept).
OUTPUT_LIMIT = 1 << 20


#: The traced run's sample id: not an oracle sample (the live display shows it as its stage and
#: leaves it out of "runs", as the summary does).
TRACE_SAMPLE_ID = "trace"


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What to run. ``env`` holds the explicit environment (names and values)."""

    command: str
    env: Mapping[str, str]
    timeout: float
    sample_id: str = "sample"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one sample did.

    ``exit_code`` follows POSIX ``subprocess`` conventions on the host (negative for a signal);
    ``signal`` is set when the process was killed by a signal (host) and left ``None`` when only
    a 128+N status is visible (shells, containers) -- signature modes decide about those.
    ``workdir`` is the absolute path where the tree was materialised for this sample, so that
    failure signatures can strip it from paths in the output. ``cpu_seconds`` is the user +
    system CPU time of the sample's processes where the runner measures it (``None``: unknown).
    """

    exit_code: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    duration: float = 0.0
    timed_out: bool = False
    resource_exhausted: bool = False
    signal: int | None = None
    workdir: str = ""
    infrastructure_error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    cpu_seconds: float | None = None

    @property
    def output(self) -> str:
        """stdout then stderr, decoded leniently (what ``--match`` searches)."""
        return (self.stdout + b"\n" + self.stderr).decode("utf-8", "replace")


@runtime_checkable
class Runner(Protocol):
    """Executes samples. ``describe()`` returns the ``execution`` fields this backend owns.

    ``kill_all()`` stops every sample running now (Ctrl-C, SIGTERM, an exhausted budget); it
    must be safe to call from a signal handler and while other threads are inside ``run``.
    The caller stops first and must not count what those samples return as evidence (the
    Docker runner marks them ``infrastructure_error="interrupted"``; the host runner returns
    them killed by ``SIGKILL``). ``close()`` releases everything the runner holds, idempotently.
    """

    backend: str

    def run(self, tree: Tree, request: RunRequest) -> Outcome: ...

    def describe(self) -> dict[str, Any]: ...

    def kill_all(self) -> None: ...

    def close(self) -> None: ...


class RunnerWrapper:
    """A :class:`Runner` around another that forwards everything it does not override
    (``describe``, ``close``, ``kill_all``, backend-specific attributes), so a wrapper can stand
    in for the runner it wraps anywhere. Subclasses override :meth:`run`."""

    def __init__(self, runner: Runner) -> None:
        self.inner = runner
        self.backend = runner.backend

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        return self.inner.run(tree, request)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def close(self) -> None:
        self.inner.close()

    def kill_all(self) -> None:
        self.inner.kill_all()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (during unpickling or a failed __init__)
            raise AttributeError(name)
        return getattr(self.inner, name)


def truncate(data: bytes, limit: int = OUTPUT_LIMIT) -> bytes:
    """Keep the head and the tail of an oversized stream (tracebacks live at the end)."""
    if len(data) <= limit:
        return data
    half = limit // 2
    return data[:half] + b"\n[... repomin: output truncated ...]\n" + data[-half:]
