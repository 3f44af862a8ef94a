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
import re
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docker.client import DockerClient
from docker.errors import APIError, DockerException, NotFound
from docker.utils import parse_bytes
from docker.utils.socket import SocketError, frames_iter
from requests.exceptions import RequestException

from repomin.errors import InfrastructureError, UsageError
from repomin.runners.docker_script import Capture
from repomin.runners.docker_transport import owner_alive, owner_record, reap_stale_dirs

log = logging.getLogger(__name__)

LABEL_SESSION = "io.repomin.session"
LABEL_HOST = "io.repomin.host"
LABEL_PID = "io.repomin.pid"
LABEL_PID_START = "io.repomin.pid_start"
LABEL_ROLE = "io.repomin.role"

DEFAULT_USER = "65534:65534"
#: The worker's own processes (init, keep-alive, script, command shell, a kill exec) need room.
MIN_PIDS_LIMIT = 16
MIN_MEMORY = 6 * 1024 * 1024
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


@dataclass(frozen=True, slots=True)
class Limits:
    """The validated container settings of one runner."""

    network: str
    memory: str | None
    memory_bytes: int | None
    cpus: float | None
    pids_limit: int | None
    uid: int
    gid: int

    @property
    def user(self) -> str:
        return f"{self.uid}:{self.gid}"

    @property
    def keepalive_user(self) -> str:
        other = 65533 if self.uid == 65534 else 65534
        return f"{other}:{other}"


def parse_limits(
    *,
    network: str,
    memory: str | None,
    cpus: float | None,
    pids_limit: int | None,
    user: str | None,
) -> Limits:
    """Check the settings; each problem is a :class:`UsageError` naming the value and the fix."""
    if network not in ("none", "bridge"):
        raise UsageError(f"--network {network!r} is not supported; use 'none' or 'bridge'")
    memory_bytes: int | None = None
    if memory is not None:
        try:
            memory_bytes = int(parse_bytes(memory))
        except (DockerException, ValueError):
            memory_bytes = None
        if memory_bytes is None or memory_bytes < MIN_MEMORY:
            raise UsageError(f"--memory {memory!r} is not a size of at least 6m (e.g. 512m, 2g)")
    if cpus is not None and not cpus > 0:
        raise UsageError(f"--cpus {cpus!r} must be a positive number (e.g. 1.5)")
    if pids_limit is not None and pids_limit < MIN_PIDS_LIMIT:
        raise UsageError(f"--pids-limit {pids_limit} is too small; use at least {MIN_PIDS_LIMIT}")
    spec = DEFAULT_USER if user is None else user
    match = re.fullmatch(r"(\d+)(?::(\d+))?", spec)
    if match is None:
        raise UsageError(f"--user {spec!r} must be numeric UID[:GID] (e.g. {DEFAULT_USER})")
    uid = int(match.group(1))
    gid = int(match.group(2)) if match.group(2) is not None else uid
    if uid == 0:
        raise UsageError("--user 0 (root) is refused: samples run as a non-root user")
    return Limits(network, memory, memory_bytes, cpus, pids_limit, uid, gid)


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
    removed += reap_stale_dirs()
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
        failure = f"cannot reach the Docker engine ({exc}); start dockerd or set DOCKER_HOST"
    if failure is None:
        return client
    # docker-py leaks the socket of a failed connect; release it here, quietly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    raise InfrastructureError(failure)
