"""The Docker runner: each sample in a hardened container, one long-lived container per job slot.

Default strategy ``exec-per-sample``: a pool of ``jobs`` worker containers (read-only root, no
capabilities, no new privileges, numeric non-root user, no network unless asked, memory / CPU /
pids limits, tmpfs scratch, no logs). Each sample is one ``docker exec`` of
:data:`~repomin.runners.docker_script.SAMPLE_SCRIPT` over a fresh copy of the tree at ``/work``;
the script reaps the previous sample's processes and wipes scratch space first. The deadline is
kept by the client: at the timeout a second exec kills the sample's processes. OOM kills and
hits of the pids limit are read from the container cgroup's event counters before and after the
sample, so they are attributed to the right sample even though containers are reused.

``fresh_container=True`` (``container-per-sample``) throws the worker away after every sample;
for an image without ``/bin/sh`` the command then runs as the container's own process (split
with :func:`shlex.split`; its environment is then part of the container's configuration).

Engine failures are never verdicts: they recycle the worker, are retried :data:`RETRIES` times
and then come back as ``Outcome(exit_code=None, infrastructure_error=...)``. Every container and
volume carries the session label and the owner's host and pid; :meth:`DockerRunner.close`
removes them, a worker's keep-alive exits when the client dies (so even ``kill -9`` leaves
nothing running), and :func:`reap_stale` removes what dead sessions left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import queue
import secrets
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker.errors import APIError, ImageNotFound, NotFound
from docker.types import LogConfig, Mount
from docker.utils import parse_repository_tag

from repomin.errors import InfrastructureError, UsageError
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.docker_direct import run_direct
from repomin.runners.docker_engine import (
    DEFAULT_USER,
    ENGINE_ERRORS,
    IMPLICIT_ENVIRONMENT,
    KILL_GRACE,
    LABEL_PID,
    LABEL_SESSION,
    EngineFailure,
    Limits,
    Pump,
    close_socket,
    connect,
    no_timeout,
    parse_limits,
    reap_stale,
    session_labels,
)
from repomin.runners.docker_script import (
    KEEPALIVE,
    REAP_SCRIPT,
    SAMPLE_SCRIPT,
    STREAM_BLOCK,
    WORKDIR,
    assemble,
    increased,
    split_header,
    split_trailer,
)
from repomin.runners.docker_transport import (
    ScratchRoot,
    fill,
    probe_bind,
    probe_shell,
    tar_bytes,
    wipe,
)
from repomin.tree import Tree

__all__ = ["DEFAULT_USER", "DockerRunner", "Limits", "parse_limits", "reap_stale"]

log = logging.getLogger(__name__)

#: Extra attempts of one sample inside the runner after an engine error (on a fresh worker).
RETRIES = 2


@dataclass(eq=False)
class _Worker:
    """One live container and what belongs to it (mutated only by the thread holding its slot)."""

    cid: str
    keepalive: Any
    bind_dir: Path | None
    samples: int = 0


@dataclass(eq=False)
class _Slot:
    index: int
    worker: _Worker | None = None
    busy: bool = False


class DockerRunner:
    """Runs samples in containers. Thread-safe; at most ``jobs`` samples run at once."""

    backend = "docker"

    def __init__(
        self,
        *,
        image: str,
        network: str = "none",
        memory: str | None = None,
        cpus: float | None = None,
        pids_limit: int | None = None,
        user: str | None = None,
        fresh_container: bool = False,
        pull: bool = False,
        jobs: int = 1,
        session_label: str,
        client: Any | None = None,
        transport: str | None = None,
    ) -> None:
        if jobs < 1:
            raise UsageError(f"--jobs {jobs} must be at least 1")
        if transport not in (None, "bind", "stream"):
            raise UsageError(f"tree transport {transport!r} is not 'bind' or 'stream'")
        self.limits = parse_limits(
            network=network, memory=memory, cpus=cpus, pids_limit=pids_limit, user=user
        )
        self.image = image
        self.fresh_container = fresh_container
        self.session_label = session_label
        self.client = connect(client, jobs)
        self.api = self.client.api
        # Reentrant: kill_all() may run in a signal handler on a thread that holds the lock.
        self._lock = threading.RLock()
        self._closed = False
        self._containers: set[str] = set()
        self._volumes: set[str] = set()
        self._sockets: list[Any] = []
        self._counter = itertools.count(1)
        self._kills = 0
        self._tars: dict[str, bytes] = {}
        self._direct: list[str] = []
        self._all_slots: list[_Slot] = []
        try:
            reap_stale(self.client)
        except ENGINE_ERRORS as exc:
            log.warning("could not reap stale repomin containers: %s", exc)
        self.image_id = self._resolve_image(image, pull)
        self.transport = "stream"
        self.has_shell = True
        self._slots: queue.Queue[_Slot] = queue.Queue()
        self._all_slots = [_Slot(index) for index in range(jobs)]
        for slot in self._all_slots:
            self._slots.put(slot)
        self._scratch = ScratchRoot(session_label)
        atexit.register(self.close)
        try:
            self._set_up(transport)
        except APIError as exc:
            self.close()
            if exc.status_code == 400:
                raise UsageError(
                    f"the Docker engine rejected the container settings: {exc.explanation or exc}"
                ) from exc
            raise InfrastructureError(f"the Docker engine failed at start-up: {exc}") from exc
        except ENGINE_ERRORS as exc:
            self.close()
            raise InfrastructureError(f"the Docker engine failed at start-up: {exc}") from exc
        except BaseException:
            self.close()
            raise

    # -- set-up ------------------------------------------------------------------------------

    def _set_up(self, transport: str | None) -> None:
        """Choose the tree transport, check for a shell, and start the first worker.

        Starting a worker here surfaces settings the engine rejects (e.g. too many CPUs) as a
        usage error before any sample runs.
        """
        why_not: str | None = "asked for"
        if transport != "stream":
            lim = self.limits
            labels = self._labels("probe")
            why_not = probe_bind(self.api, self.image_id, self._scratch, lim.uid, lim.gid, labels)
        if why_not is not None and transport == "bind":
            raise UsageError(f"the bind tree transport does not work here: {why_not}")
        self.transport = "bind" if why_not is None else "stream"
        if why_not is not None:
            log.info("streaming trees into containers: %s", why_not)
        if self.fresh_container:
            self.has_shell = probe_shell(
                self.api, self.image_id, self._labels("probe"), self._host_config(direct=True)
            )
        if self.has_shell:
            self._all_slots[0].worker = self._start_worker()

    def _resolve_image(self, ref: str, pull: bool) -> str:
        try:
            if pull:
                repository, tag = parse_repository_tag(ref)
                self.client.images.pull(repository, tag=tag or "latest")
            return str(self.client.images.get(ref).id)
        except (ImageNotFound, NotFound) as exc:
            hint = "pull it (docker pull, or --pull)" if not pull else "check the reference"
            raise UsageError(
                f"Docker image {ref!r} not found; build it (docker/build-test-images.sh builds "
                f"repomin-test/busybox:1) or {hint}"
            ) from exc
        except ENGINE_ERRORS as exc:
            raise InfrastructureError(f"cannot resolve Docker image {ref!r}: {exc}") from exc

    def _labels(self, role: str) -> dict[str, str]:
        return session_labels(self.session_label, role)

    def _host_config(self, *, direct: bool, mounts: list[Mount] | None = None) -> Any:
        lim = self.limits
        tmpfs = {"/tmp": "rw,nosuid,nodev,exec,mode=1777"}
        if self.transport == "stream" and not direct:
            tmpfs[WORKDIR] = f"rw,nosuid,nodev,exec,mode=0755,uid={lim.uid},gid={lim.gid}"
        return self.api.create_host_config(
            network_mode=lim.network,
            read_only=True,
            tmpfs=tmpfs,
            mounts=mounts or [],
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=True,
            ipc_mode="private",
            mem_limit=lim.memory_bytes,
            memswap_limit=lim.memory_bytes,
            pids_limit=lim.pids_limit,
            nano_cpus=None if lim.cpus is None else int(lim.cpus * 1e9),
            log_config=LogConfig(type="none"),
            auto_remove=not direct,
        )

    def _register(self, cid: str) -> None:
        """Record a new container; if the runner closed meanwhile, remove it at once."""
        with self._lock:
            closed = self._closed
            if not closed:
                self._containers.add(cid)
        if closed:
            self._remove_container(cid)
            raise EngineFailure("the runner is closed")

    def _start_worker(self) -> _Worker:
        bind_dir: Path | None = None
        mounts: list[Mount] = []
        if self.transport == "bind":
            name = f"w{next(self._counter)}"
            bind_dir = self._scratch.directory(name, self.limits.uid, self.limits.gid)
            mounts.append(Mount(WORKDIR, str(bind_dir), type="bind", read_only=False))
        cid = self.api.create_container(
            self.image_id,
            entrypoint=KEEPALIVE[:2],
            command=KEEPALIVE[2:],
            user=self.limits.keepalive_user,
            stdin_open=True,
            working_dir="/",
            hostname="repomin",
            labels=self._labels("worker"),
            host_config=self._host_config(direct=False, mounts=mounts),
        )["Id"]
        self._register(cid)
        try:
            keepalive = self.api.attach_socket(cid, params={"stdin": 1, "stream": 1})
            with self._lock:
                self._sockets.append(keepalive)
            self.api.start(cid)
        except BaseException:
            self._remove_container(cid)
            raise
        log.debug("started worker %s", cid[:12])
        return _Worker(cid, keepalive, bind_dir)

    # -- the protocol ------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        lim = self.limits
        return {
            "backend": "docker",
            "docker_image": self.image,
            "docker_image_id": self.image_id,
            "docker_network": lim.network,
            "docker_memory": lim.memory,
            "docker_cpus": lim.cpus,
            "docker_pids_limit": lim.pids_limit,
            "docker_user": lim.user,
            "docker_strategy": "container-per-sample"
            if self.fresh_container
            else "exec-per-sample",
            "docker_tree_transport": self.transport,
        }

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        outcome = Outcome(exit_code=None, infrastructure_error="the runner is closed")
        for attempt in range(1 + RETRIES):
            if self._closed:
                return outcome
            slot = self._slots.get()
            kills = self._kills
            slot.busy = True
            try:
                outcome = self._attempt(slot, tree, request)
            finally:
                slot.busy = False
                self._slots.put(slot)
            if outcome.infrastructure_error is None:
                return outcome
            if self._kills != kills:
                return Outcome(exit_code=None, infrastructure_error="interrupted", workdir=WORKDIR)
            log.warning(
                "sample %s: engine error on attempt %d: %s",
                request.sample_id,
                attempt + 1,
                outcome.infrastructure_error,
            )
        return outcome

    def _attempt(self, slot: _Slot, tree: Tree, request: RunRequest) -> Outcome:
        try:
            if not self.has_shell:
                return run_direct(self, tree, request)
            if slot.worker is None:
                slot.worker = self._start_worker()
            outcome, healthy = self._sample_exec(slot.worker, tree, request)
            if not healthy or self.fresh_container:
                self._recycle(slot)
            return outcome
        except (EngineFailure, *ENGINE_ERRORS) as exc:
            self._recycle(slot)
            message = str(exc) or type(exc).__name__
            return Outcome(exit_code=None, infrastructure_error=message, workdir=WORKDIR)

    def _recycle(self, slot: _Slot) -> None:
        worker, slot.worker = slot.worker, None
        if worker is None:
            return
        self._remove_container(worker.cid)
        close_socket(worker.keepalive)
        with self._lock:
            if worker.keepalive in self._sockets:
                self._sockets.remove(worker.keepalive)
        if worker.bind_dir is not None:
            shutil.rmtree(worker.bind_dir, ignore_errors=True)

    def _remove_container(self, cid: str) -> None:
        with contextlib.suppress(*ENGINE_ERRORS):
            self.api.remove_container(cid, force=True, v=True)
        with self._lock:
            self._containers.discard(cid)

    # -- exec-per-sample ---------------------------------------------------------------------

    def _sample_exec(
        self, worker: _Worker, tree: Tree, request: RunRequest
    ) -> tuple[Outcome, bool]:
        """One sample in a live worker; returns the outcome and whether the worker is reusable."""
        lim = self.limits
        nonce = secrets.token_hex(8)
        payload = b""
        if worker.bind_dir is not None:
            wipe(worker.bind_dir)
            fill(worker.bind_dir, tree, lim.uid, lim.gid)
        else:
            payload = self._tar(tree)
        mode = "stream" if worker.bind_dir is None else "bind"
        argv = [str(lim.uid), nonce, mode, str(len(payload)), request.command]
        exec_id = self.api.exec_create(
            worker.cid,
            ["/bin/sh", "-c", SAMPLE_SCRIPT, "repomin", *argv],
            user=lim.user,
            environment={**IMPLICIT_ENVIRONMENT, **request.env},
            stdin=bool(payload),
            workdir="/",
        )["Id"]
        sock = self.api.exec_start(exec_id, socket=True)
        no_timeout(sock)
        pump = Pump(sock, payload)
        pump.start()
        if not pump.sent.wait(max(60.0, request.timeout)):
            raise EngineFailure("the engine did not accept the tree in time")
        started = time.monotonic()
        pump.join(request.timeout)
        timed_out = pump.is_alive()
        healthy = True
        if timed_out:
            healthy = self._kill_sample(worker) is not None
            pump.join(KILL_GRACE)
            if pump.is_alive():
                raise EngineFailure("the engine did not end a timed-out sample")
        duration = time.monotonic() - started
        worker.samples += 1
        if pump.error is not None and not timed_out:
            raise EngineFailure(f"lost the sample's output stream: {pump.error}")

        script_status = None if timed_out else self.api.exec_inspect(exec_id).get("ExitCode")
        stdout = assemble(*pump.out.parts())
        head, tail = pump.err.parts()
        header, head = split_header(head, nonce)
        trailer = None
        # Only a script that finished wrote the trailer: a sample that printed a fake one and
        # then killed the script must not choose its own verdict.
        if script_status == 0 and tail is None:
            trailer, head = split_trailer(head, nonce)
        elif script_status == 0 and tail is not None:
            trailer, tail = split_trailer(tail, nonce)
        stderr = assemble(head, tail)
        common: dict[str, Any] = {
            "stdout": stdout,
            "stderr": stderr,
            "duration": duration,
            "workdir": WORKDIR,
            "extra": {"docker_container": worker.cid[:12]},
        }
        if timed_out:
            if healthy and worker.bind_dir is not None:
                wipe(worker.bind_dir)
            return Outcome(exit_code=None, timed_out=True, **common), healthy

        if trailer is not None and trailer.setup_error is not None:
            raise EngineFailure(
                f"could not prepare the sample ({trailer.setup_error}); with --memory, the tree "
                "must fit into the memory limit"
            )
        if trailer is None:
            # The script itself was killed: by the sample (kill -9 -1) or by the OOM killer.
            counters = self._kill_sample(worker)
            if counters is None:
                raise EngineFailure("could not clean up after a sample that killed its runner")
            if script_status is None:
                raise EngineFailure("the engine lost the sample's exit status")
            oom, pids = counters
            exit_code, reaped, clean = int(script_status), True, True
        else:
            exit_code = trailer.exit_code if trailer.exit_code is not None else -1
            oom, pids = trailer.oom_kills, trailer.pids_max_events
            reaped, clean = trailer.reaped, trailer.clean
        exhausted = header is not None and (
            increased(header.oom_kills, oom) or increased(header.pids_max_events, pids)
        )
        healthy = reaped and clean
        if healthy and worker.bind_dir is not None:
            wipe(worker.bind_dir)
        return Outcome(exit_code=exit_code, resource_exhausted=exhausted, **common), healthy

    def _tar(self, tree: Tree) -> bytes:
        """The tree's archive; the last few are kept, as a candidate is usually sampled often."""
        with self._lock:
            cached = self._tars.get(tree.digest)
        if cached is not None:
            return cached
        archive = tar_bytes(tree, self.limits.uid, self.limits.gid)
        archive += bytes(-len(archive) % STREAM_BLOCK)
        with self._lock:
            self._tars[tree.digest] = archive
            while len(self._tars) > len(self._all_slots) + 1:
                self._tars.pop(next(iter(self._tars)))
        return archive

    def _kill_sample(self, worker: _Worker) -> tuple[int | None, int | None] | None:
        """Kill every process of the sample's uid; the cgroup counters, or ``None`` on failure."""
        try:
            exec_id = self.api.exec_create(
                worker.cid,
                ["/bin/sh", "-c", REAP_SCRIPT, "repomin", str(self.limits.uid)],
                user=self.limits.user,
                workdir="/",
            )["Id"]
            output = self.api.exec_start(exec_id).decode("ascii", "replace").split()
        except ENGINE_ERRORS as exc:
            log.warning("could not kill a sample in %s: %s", worker.cid[:12], exc)
            return None
        if len(output) != 3 or output[0] != "0":
            return None
        return _int_or_none(output[1]), _int_or_none(output[2])

    # -- container-per-sample for images without a shell -------------------------------------

    # -- shutdown ----------------------------------------------------------------------------

    def kill_all(self) -> None:
        """Stop every running sample now (Ctrl-C, SIGTERM, budget); their workers are recycled."""
        with self._lock:
            self._kills += 1
            targets = [s.worker.cid for s in self._all_slots if s.busy and s.worker is not None]
            targets += self._direct
        for cid in targets:
            with contextlib.suppress(*ENGINE_ERRORS):
                self.api.kill(cid)

    def close(self) -> None:
        """Remove every container and volume of this runner (idempotent; also run at exit)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            containers = list(self._containers)
            volumes = list(self._volumes)
            sockets = list(self._sockets)
        atexit.unregister(self.close)
        for cid in containers:
            self._remove_container(cid)
        for sock in sockets:
            close_socket(sock)
        for volume in volumes:
            with contextlib.suppress(*ENGINE_ERRORS):
                self.api.remove_volume(volume, force=True)
        self._sweep()
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            scratch.remove()

    def _sweep(self) -> None:
        """Remove anything still carrying this session's label and this process as owner."""
        mine = str(os.getpid())
        try:
            leftovers = self.api.containers(
                all=True, filters={"label": f"{LABEL_SESSION}={self.session_label}"}
            )
            for container in leftovers:
                if (container.get("Labels") or {}).get(LABEL_PID) == mine:
                    self._remove_container(container["Id"])
            volumes = self.api.volumes(
                filters={"label": f"{LABEL_SESSION}={self.session_label}"}
            ).get("Volumes")
            for volume in volumes or []:
                if (volume.get("Labels") or {}).get(LABEL_PID) == mine:
                    with contextlib.suppress(NotFound, APIError):
                        self.api.remove_volume(volume["Name"], force=True)
        except ENGINE_ERRORS as exc:
            log.warning("could not sweep containers of session %s: %s", self.session_label, exc)


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None
