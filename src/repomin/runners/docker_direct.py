"""Container per sample for images without a shell: the command is the container's process.

The exec strategy needs ``/bin/sh`` in the image; this one does not. The command is split with
:func:`shlex.split` and becomes the container's entrypoint, so its environment is part of the
container's configuration (visible to ``docker inspect`` while the sample runs). The tree is
bind-mounted at ``/work`` or, when the engine cannot see this host's files, put into a fresh
labelled volume with ``put_archive`` (at ``/repomin/work``: a volume's root stays root-owned).
Timeouts stop the container; ``State.OOMKilled`` reports memory exhaustion.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound
from docker.types import Mount

from repomin.runners.base import Outcome, RunRequest
from repomin.runners.docker_context import Engine
from repomin.runners.docker_engine import (
    ENGINE_ERRORS,
    IMPLICIT_ENVIRONMENT,
    KILL_GRACE,
    EngineFailure,
    Pump,
    no_timeout,
)
from repomin.runners.docker_limits import Limits
from repomin.runners.docker_script import WORKDIR, assemble
from repomin.runners.docker_transport import fill, tar_bytes
from repomin.tree import Tree

#: Where a per-sample volume is mounted (streamed trees); the tree is in ``work/`` below it.
VOLUME_ROOT = "/repomin"
_NOT_EXECUTABLE = re.compile(r"executable file not found|no such file or directory", re.I)


@dataclass(slots=True)
class _Held:
    """What one direct sample holds on the engine until :func:`_release`, and its workdir."""

    bind_dir: Path | None = None
    volume: str | None = None
    cid: str | None = None
    workdir: str = WORKDIR


def run_direct(
    engine: Engine, tree: Tree, request: RunRequest, stopped: Callable[[], bool] = lambda: False
) -> Outcome:
    """One sample as a container of its own (its process is the command; no shell needed).

    ``stopped()`` is true once the runner's ``kill_all`` stopped this sample: the container is
    then not started, or killed at once if ``kill_all`` came while it started.
    """
    lim = engine.limits
    api = engine.api
    try:
        argv = shlex.split(request.command)
    except ValueError as exc:
        return Outcome(exit_code=2, stderr=f"repomin: {exc}\n".encode(), workdir=WORKDIR)
    if not argv:
        return Outcome(exit_code=0, workdir=WORKDIR)
    held = _Held()
    try:
        mount = _mount(engine, api, lim, tree, held)
        held.cid = cid = api.create_container(
            engine.image_id,
            entrypoint=argv[:1],
            command=argv[1:],
            user=lim.user,
            environment={**IMPLICIT_ENVIRONMENT, **request.env},
            working_dir=held.workdir,
            hostname="repomin",
            labels=engine.labels("sample"),
            host_config=engine.host_config(kind="direct", mounts=[mount], auto_remove=False),
        )["Id"]
        engine.register(cid)
        engine.track_direct(cid, running=True)
        if held.volume is not None:
            archive = tar_bytes(tree, lim.uid, lim.gid, under="work")
            if not api.put_archive(cid, VOLUME_ROOT, archive):
                raise EngineFailure("the engine refused the tree archive")
        if stopped():
            return Outcome(exit_code=None, infrastructure_error="interrupted", workdir=WORKDIR)
        return _run_container(api, cid, request.timeout, held.workdir, stopped)
    finally:
        _release(engine, api, held)


def _mount(engine: Engine, api: Any, lim: Limits, tree: Tree, held: _Held) -> Mount:
    """Put the tree where the container sees it: a bind-mounted scratch directory, or a fresh
    volume (filled later, with ``put_archive``)."""
    if engine.transport == "bind":
        bind_dir = held.bind_dir = engine.bind_directory("s")
        fill(bind_dir, tree, lim.uid, lim.gid)
        return Mount(WORKDIR, str(bind_dir), type="bind", read_only=False)
    # A volume's root stays root-owned, so the tree goes one level down.
    volume = held.volume = api.create_volume(labels=engine.labels("sample"))["Name"]
    engine.track_volume(volume, live=True)
    mount = Mount(VOLUME_ROOT, volume, type="volume")
    held.workdir = f"{VOLUME_ROOT}/work"
    return mount


def _run_container(
    api: Any, cid: str, timeout: float, workdir: str, stopped: Callable[[], bool]
) -> Outcome:
    """Start the created container with its output attached; stop it at the timeout."""
    sock = api.attach_socket(cid, params={"stdout": 1, "stderr": 1, "stream": 1})
    no_timeout(sock)
    pump = Pump(sock, b"")
    pump.start()
    started = time.monotonic()
    try:
        api.start(cid)
    except APIError as exc:
        text = str(exc.explanation or exc)
        if _NOT_EXECUTABLE.search(text):
            return Outcome(exit_code=127, stderr=text.encode(), workdir=workdir)
        raise
    if stopped():  # kill_all came while the container started, and found it not running yet
        with contextlib.suppress(NotFound, APIError):
            api.kill(cid)
    pump.join(timeout)
    timed_out = pump.is_alive()
    if timed_out:
        with contextlib.suppress(NotFound, APIError):
            api.kill(cid)
        pump.join(KILL_GRACE)
    duration = time.monotonic() - started
    status = api.wait(cid, timeout=KILL_GRACE)
    state = api.inspect_container(cid)["State"]
    stdout = assemble(*pump.out.parts())
    stderr = assemble(*pump.err.parts())
    if timed_out:
        return Outcome(
            exit_code=None,
            stdout=stdout,
            stderr=stderr,
            duration=duration,
            timed_out=True,
            workdir=workdir,
        )
    return Outcome(
        exit_code=int(status.get("StatusCode", state.get("ExitCode", -1))),
        stdout=stdout,
        stderr=stderr,
        duration=duration,
        resource_exhausted=bool(state.get("OOMKilled")),
        workdir=workdir,
    )


def _release(engine: Engine, api: Any, held: _Held) -> None:
    """Remove the sample's container, volume and scratch directory (whichever it holds)."""
    if held.cid is not None:
        engine.track_direct(held.cid, running=False)
        engine.remove_container(held.cid)
    if held.volume is not None:
        with contextlib.suppress(*ENGINE_ERRORS):
            api.remove_volume(held.volume, force=True)
        engine.track_volume(held.volume, live=False)
    if held.bind_dir is not None:
        engine.scratch.drop(held.bind_dir)
