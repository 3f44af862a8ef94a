"""The Docker engine side of the runner: settings, labels, leftovers, hijacked streams.

Everything here is shared by the runner's strategies (:mod:`repomin.runners.docker` and
:mod:`repomin.runners.docker_direct`): the validated container settings, the labels that tie a
container or volume to the session and process that made it, the reaping of what dead sessions
left behind, and the thread that feeds and drains one hijacked exec/attach connection.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from docker.client import DockerClient
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.utils import parse_repository_tag
from docker.utils.socket import SocketError, frames_iter
from requests.exceptions import RequestException

from repomin.errors import InfrastructureError, UsageError
from repomin.runners.docker_script import Capture
from repomin.runners.scratch import owner_alive, owner_record, reap_stale_scratch

log = logging.getLogger(__name__)

LABEL_SESSION = "io.repomin.session"
LABEL_HOST = "io.repomin.host"
LABEL_PID = "io.repomin.pid"
LABEL_PID_START = "io.repomin.pid_start"
LABEL_ROLE = "io.repomin.role"

#: Seconds to wait for the engine after killing a sample before the worker is recycled.
KILL_GRACE = 10.0
#: What every sample sees unless the request overrides it (mirrors the host runner).
IMPLICIT_ENVIRONMENT: Mapping[str, str] = {
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "TMP": "/tmp",
    "TEMP": "/tmp",
    "LANG": "C.UTF-8",
}
ENGINE_ERRORS = (DockerException, RequestException, SocketError, OSError)


class EngineFailure(Exception):
    """Raised inside a sample when the engine (not the command) failed; recycles the worker."""


class Pump(threading.Thread):
    """Feeds an exec's stdin and collects its multiplexed stdout/stderr frames."""

    def __init__(self, sock: Any, payload: bytes) -> None:
        super().__init__(name="repomin-docker-pump", daemon=True)
        self.sock = sock
        self.payload = payload
        self.out = Capture()
        self.err = Capture()
        self.sent = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            if self.payload:
                raw_socket(self.sock).sendall(self.payload)
            self.sent.set()
            for stream, data in frames_iter(self.sock, tty=False):
                (self.err if stream == 2 else self.out).add(data)
        except Exception as exc:  # reported to the sample's thread, which decides
            self.error = exc
        finally:
            self.sent.set()
            close_socket(self.sock)


def raw_socket(sock: Any) -> Any:
    return getattr(sock, "_sock", sock)


def close_socket(sock: Any) -> None:
    """Close a hijacked connection: the wrapper, the socket under it and its HTTP response."""
    for part in (sock, getattr(sock, "_sock", None), getattr(sock, "_response", None)):
        if part is not None:
            with contextlib.suppress(Exception):
                part.close()


def no_timeout(sock: Any) -> None:
    """Hijacked sockets inherit the client's HTTP timeout; samples may be silent for longer."""
    for candidate in (sock, getattr(sock, "_sock", None)):
        if candidate is not None and hasattr(candidate, "settimeout"):
            candidate.settimeout(None)


def session_labels(session_label: str, role: str) -> dict[str, str]:
    owner = owner_record()
    return {
        LABEL_SESSION: session_label,
        LABEL_HOST: owner["host"],
        LABEL_PID: owner["pid"],
        LABEL_PID_START: owner["pid_start"],
        LABEL_ROLE: role,
    }


def _owner_dead(labels: Mapping[str, str]) -> bool:
    try:
        pid = int(labels[LABEL_PID])
        host = labels[LABEL_HOST]
    except (KeyError, ValueError):
        return False
    return not owner_alive(host, pid, labels.get(LABEL_PID_START, ""))


#: How long ``sweep`` waits for the engine to finish removing a session's containers.
SWEEP_SECONDS = 20.0
SWEEP_POLL = 0.05


def sweep(api: Any, session_label: str, remove_container: Callable[[str], None]) -> None:
    """Remove anything carrying ``session_label`` and this process as owner, and wait until the
    engine lists none of it (the end of ``DockerRunner.close``).

    A killed worker is auto-removed by the engine while ``close`` asks for the same: the
    loser's 409 ("removal already in progress") returns at once, and the container would
    outlive this process by the engine's removal time. So the sweep repeats until nothing is
    left, at most ``SWEEP_SECONDS``.
    """
    mine = str(os.getpid())
    label = {"label": f"{LABEL_SESSION}={session_label}"}
    deadline = time.monotonic() + SWEEP_SECONDS
    try:
        while True:
            left = [
                c["Id"]
                for c in api.containers(all=True, filters=label)
                if (c.get("Labels") or {}).get(LABEL_PID) == mine
            ]
            for cid in left:
                remove_container(cid)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(SWEEP_POLL)
        if left:
            log.warning("containers still being removed: %s", ", ".join(c[:12] for c in left))
        for volume in api.volumes(filters=label).get("Volumes") or []:
            if (volume.get("Labels") or {}).get(LABEL_PID) == mine:
                with contextlib.suppress(NotFound, APIError):
                    api.remove_volume(volume["Name"], force=True)
    except ENGINE_ERRORS as exc:
        log.warning("could not sweep session %s: %s", session_label, engine_error(exc))


def reap_stale(client: Any) -> int:
    """Remove labelled containers and volumes whose owning session is dead; returns the count.

    A session is dead when it ran on this host and its pid is gone (or now belongs to a process
    started at another time). Sessions of other hosts are left alone.
    """
    api = client.api
    removed = 0
    for container in api.containers(all=True, filters={"label": LABEL_SESSION}):
        if _owner_dead(container.get("Labels") or {}):
            with contextlib.suppress(NotFound, APIError):
                api.remove_container(container["Id"], force=True, v=True)
                removed += 1
    for volume in api.volumes(filters={"label": LABEL_SESSION}).get("Volumes") or []:
        if _owner_dead(volume.get("Labels") or {}):
            with contextlib.suppress(NotFound, APIError):
                api.remove_volume(volume["Name"], force=True)
                removed += 1
    removed += reap_stale_scratch()
    if removed:
        log.info("removed %d leftovers of dead repomin sessions", removed)
    return removed


def connect(client: Any | None = None, jobs: int = 1) -> Any:
    """A Docker client that answers, or :class:`InfrastructureError` with the reason."""
    failure = None
    try:
        if client is None:
            client = DockerClient.from_env(max_pool_size=max(10, 2 * jobs + 4))
        client.ping()
    except ENGINE_ERRORS as exc:
        failure = (
            f"cannot reach the Docker engine ({engine_error(exc)}); start dockerd or set "
            "DOCKER_HOST"
        )
    if failure is None:
        return client
    # docker-py leaks the socket of a failed connect; release it here, quietly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    raise InfrastructureError(failure)


def engine_error(exc: BaseException) -> str:
    """One readable line for an engine error (no raw exception tuples, no tracebacks).

    ``APIError`` gives its status and the engine's explanation; connection errors are reduced
    to their innermost cause (``requests`` nests them as tuples).
    """
    if isinstance(exc, EngineFailure):
        message = str(exc)  # written for the user already; its cause is in the text
    elif isinstance(exc, APIError):
        status = exc.response.status_code if exc.response is not None else None
        text = str(exc.explanation or exc)
        message = f"{status} {text}" if status else text
    else:
        root: BaseException = exc
        seen = {id(root)}
        while True:
            inner = next(
                (a for a in getattr(root, "args", ()) if isinstance(a, BaseException)), None
            )
            inner = inner or root.__cause__ or root.__context__
            if inner is None or id(inner) in seen:
                break
            seen.add(id(inner))
            root = inner
        if isinstance(root, OSError) and root.strerror:
            message = root.strerror
        else:
            message = " ".join(str(a) for a in root.args if isinstance(a, str | int)) or str(root)
        message = message or type(exc).__name__
    return " ".join(message.split())[:300]


def resolve_image(client: Any, ref: str, pull: bool) -> str:
    """The image's id (pulled first when asked); a missing image is a usage error with the fix."""
    try:
        if pull:
            repository, tag = parse_repository_tag(ref)
            client.images.pull(repository, tag=tag or "latest")
        return str(client.images.get(ref).id)
    except (ImageNotFound, NotFound) as exc:
        hint = "pull it (docker pull, or --pull)" if not pull else "check the reference"
        raise UsageError(
            f"Docker image {ref!r} not found; build it (docker/build-test-images.sh builds "
            f"repomin-test/busybox:1) or {hint}"
        ) from exc
    except ENGINE_ERRORS as exc:
        raise InfrastructureError(
            f"cannot resolve Docker image {ref!r}: {engine_error(exc)}"
        ) from exc


def host_memory(client: Any) -> int | None:
    """The engine host's RAM in bytes (``None`` when the engine does not say)."""
    try:
        total = client.info().get("MemTotal")
    except ENGINE_ERRORS:
        return None
    return int(total) if isinstance(total, int) else None
