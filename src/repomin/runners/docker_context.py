"""What every Docker strategy needs from the runner, injected as one object: :class:`Engine`.

The strategies (:mod:`~repomin.runners.docker_exec`, :mod:`~repomin.runners.docker_direct`,
the agent in :mod:`~repomin.runners.docker_agent`) receive an :class:`Engine` and use only its
public methods: the low-level API client, the resolved image, the validated limits, the
session's labels, host configurations, the registry of live containers and volumes (so
``close()`` and ``kill_all()`` find them), per-worker bind directories, and worker start-up.
Nothing here imports :mod:`repomin.runners.docker`, so there is no import circle.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.types import LogConfig, Mount

from repomin.runners.base import OUTPUT_LIMIT
from repomin.runners.docker_agent import AgentChannel
from repomin.runners.docker_agent_script import AGENT_SCRIPT, CONTROL
from repomin.runners.docker_engine import (
    ENGINE_ERRORS,
    EngineFailure,
    close_socket,
    no_timeout,
    session_labels,
)
from repomin.runners.docker_limits import CONTROL_SIZE, Limits
from repomin.runners.docker_script import KEEPALIVE, WORKDIR
from repomin.runners.docker_transport import ScratchRoot

log = logging.getLogger(__name__)

#: Capabilities the agent keeps (to switch to the sample user and to kill its processes).
AGENT_CAPABILITIES = ["KILL", "SETGID", "SETUID"]


@dataclass(eq=False)
class Worker:
    """One live container and what belongs to it (mutated only by the thread holding its slot)."""

    cid: str
    stream: Any
    bind_dir: Path | None
    agent: AgentChannel | None = None


class Engine:
    """The runner's shared engine state; thread-safe (one re-entrant lock)."""

    def __init__(
        self, api: Any, image_id: str, limits: Limits, session_label: str, scratch: ScratchRoot
    ) -> None:
        self.api = api
        self.image_id = image_id
        self.limits = limits
        self.session_label = session_label
        self.scratch = scratch
        self.transport = "stream"
        # Reentrant: kill_all() may run in a signal handler on a thread that holds the lock.
        self.lock = threading.RLock()
        self.closed = False
        self.containers: set[str] = set()
        self.volumes: set[str] = set()
        self.sockets: list[Any] = []
        self.direct: list[str] = []
        self._counter = itertools.count(1)

    def labels(self, role: str) -> dict[str, str]:
        return session_labels(self.session_label, role)

    def next_name(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter)}"

    def host_config(
        self, *, kind: str, mounts: list[Mount] | None = None, auto_remove: bool = True
    ) -> Any:
        """Hardened settings; ``kind`` is ``agent``, ``exec`` or ``direct``."""
        lim = self.limits
        tmpfs = {"/tmp": lim.tmpfs_options(mode="1777", size=lim.tmp_size)}
        if self.transport == "stream" and kind != "direct":
            tmpfs[WORKDIR] = lim.tmpfs_options(mode="0755", size=lim.work_size, owner=True)
        if kind == "agent":
            tmpfs[CONTROL] = f"rw,nosuid,nodev,noexec,mode=0700,size={CONTROL_SIZE}"
        return self.api.create_host_config(
            network_mode=lim.network,
            read_only=True,
            tmpfs=tmpfs,
            shm_size=lim.shm_size,
            mounts=mounts or [],
            cap_drop=["ALL"],
            cap_add=AGENT_CAPABILITIES if kind == "agent" else None,
            security_opt=["no-new-privileges"],
            init=True,
            ipc_mode="private",
            mem_limit=lim.memory_bytes,
            memswap_limit=lim.memory_bytes,
            pids_limit=lim.pids_limit,
            nano_cpus=None if lim.cpus is None else int(lim.cpus * 1e9),
            log_config=LogConfig(type="none"),
            auto_remove=auto_remove,
        )

    # -- the registry ------------------------------------------------------------------------

    def register(self, cid: str) -> None:
        """Record a new container; if the runner closed meanwhile, remove it at once."""
        with self.lock:
            closed = self.closed
            if not closed:
                self.containers.add(cid)
        if closed:
            self.remove_container(cid)
            raise EngineFailure("the runner is closed")

    def remove_container(self, cid: str) -> None:
        with contextlib.suppress(*ENGINE_ERRORS):
            self.api.remove_container(cid, force=True, v=True)
        with self.lock:
            self.containers.discard(cid)

    def track_direct(self, cid: str, running: bool) -> None:
        """Add (or remove) a container-per-sample container to what ``kill_all`` stops."""
        with self.lock:
            if running:
                self.direct.append(cid)
            elif cid in self.direct:
                self.direct.remove(cid)

    def track_volume(self, name: str, live: bool) -> None:
        with self.lock:
            if live:
                self.volumes.add(name)
            else:
                self.volumes.discard(name)

    def bind_directory(self, prefix: str) -> Path:
        """A fresh host directory for ``/work``: a ``nosuid,nodev`` tmpfs of ``--work-size``."""
        lim = self.limits
        size = lim.work_size or "none"
        return self.scratch.directory(self.next_name(prefix), lim.uid, lim.gid, size=size)

    # -- workers -----------------------------------------------------------------------------

    def start_worker(self, *, agent: bool) -> Worker:
        """A new worker container: the sample agent, or a keep-alive for ``docker exec``."""
        lim = self.limits
        bind_dir: Path | None = None
        mounts: list[Mount] = []
        if self.transport == "bind":
            bind_dir = self.bind_directory("w")
            mounts.append(Mount(WORKDIR, str(bind_dir), type="bind", read_only=False))
        if agent:
            process = ["/bin/sh", "-c", AGENT_SCRIPT, "repomin-agent"]
            process += [str(lim.uid), str(lim.gid), str(OUTPUT_LIMIT)]
            user, role = "0:0", "agent"
        else:
            process, user, role = KEEPALIVE, lim.keepalive_user, "worker"
        try:
            cid = self.api.create_container(
                self.image_id,
                entrypoint=process[:2],
                command=process[2:],
                user=user,
                stdin_open=True,
                working_dir="/",
                hostname="repomin",
                labels=self.labels(role),
                host_config=self.host_config(kind="agent" if agent else "exec", mounts=mounts),
            )["Id"]
        except BaseException:
            if bind_dir is not None:
                self.scratch.drop(bind_dir)
            raise
        try:
            self.register(cid)
            params = {"stdin": 1, "stream": 1}
            if agent:
                params.update(stdout=1, stderr=1)
            stream = self.api.attach_socket(cid, params=params)
            no_timeout(stream)
            with self.lock:
                self.sockets.append(stream)
            self.api.start(cid)
        except BaseException:
            self.remove_container(cid)
            if bind_dir is not None:
                self.scratch.drop(bind_dir)
            raise
        log.debug("started %s %s", role, cid[:12])
        return Worker(cid, stream, bind_dir, AgentChannel(stream) if agent else None)

    def retire(self, worker: Worker) -> None:
        """Remove a worker's container, connection and bind directory."""
        self.remove_container(worker.cid)
        if worker.agent is not None:
            worker.agent.close()
        close_socket(worker.stream)
        with self.lock:
            if worker.stream in self.sockets:
                self.sockets.remove(worker.stream)
        if worker.bind_dir is not None:
            self.scratch.drop(worker.bind_dir)
