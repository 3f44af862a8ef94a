"""The Docker runner: each sample in a hardened container, one long-lived container per job slot.

Strategies (``execution.docker_strategy``):

- ``agent-per-worker`` (default): a pool of ``jobs`` worker containers, each running the sample
  agent (:mod:`~repomin.runners.docker_agent_script`) fed over its attached stream -- no engine
  API call per sample. The agent reaps, wipes, unpacks, runs the command as the sample user in
  its own session with a watchdog, and reports exit status, cgroup OOM/pids counters, full
  scratch filesystems and bounded output.
- ``exec-per-sample``: the same pool with one ``docker exec`` per sample
  (:mod:`~repomin.runners.docker_exec`); used when the image cannot switch users for the agent
  (no ``nsenter``/``setpriv``) or when asked for (``strategy="exec"``).
- ``container-per-sample`` (``fresh_container=True``, or automatically for an image without
  ``/bin/sh``, with a notice): a new container for every sample
  (:mod:`~repomin.runners.docker_direct` when there is no shell).

Containers are hardened (read-only root, ``cap_drop=ALL``, ``no-new-privileges``, numeric
non-root sample user, no network unless asked, private IPC, init) and limited by default
(:mod:`~repomin.runners.docker_limits`: memory, pids, sized ``nosuid,nodev`` tmpfs for ``/tmp``,
``/dev/shm`` and ``/work``). Engine failures are never verdicts: they recycle the worker, are
retried :data:`RETRIES` times and then come back as ``Outcome(infrastructure_error=...)``, one
readable line. Every container and volume carries the session label and the owner's host and
pid; :meth:`DockerRunner.close` removes them, a worker exits when the client's connection
closes (so even ``kill -9`` leaves nothing running), and :func:`reap_stale` removes what dead
sessions left behind (host scratch directories of either backend included).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import queue
from dataclasses import dataclass
from typing import Any

from docker.errors import APIError

from repomin.errors import InfrastructureError, UsageError
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.docker_context import Engine, Worker
from repomin.runners.docker_direct import run_direct
from repomin.runners.docker_engine import (
    ENGINE_ERRORS,
    EngineFailure,
    close_socket,
    connect,
    engine_error,
    host_memory,
    reap_stale,
    resolve_image,
    sweep,
)
from repomin.runners.docker_exec import run_agent, run_exec
from repomin.runners.docker_limits import (
    DEFAULT_USER,
    Limits,
    LimitSpec,
    check_fits,
    parse_limits,
)
from repomin.runners.docker_script import STREAM_BLOCK, WORKDIR
from repomin.runners.docker_transport import ScratchRoot, fill, probe_bind, probe_shell, tar_bytes
from repomin.runners.docker_transport import wipe as wipe_dir
from repomin.tree import Tree

__all__ = ["DEFAULT_USER", "DockerRunner", "Limits", "parse_limits", "reap_stale"]

log = logging.getLogger(__name__)

#: Extra attempts of one sample inside the runner after an engine error (on a fresh worker).
RETRIES = 2
STRATEGIES = {
    "agent": "agent-per-worker",
    "exec": "exec-per-sample",
    "fresh": "container-per-sample",
}


def _interrupted() -> Outcome:
    return Outcome(exit_code=None, infrastructure_error="interrupted", workdir=WORKDIR)


def _check_choices(
    jobs: int, transport: str | None, strategy: str | None, fresh_container: bool
) -> None:
    """The runner's choices are usage errors before anything else is checked."""
    if jobs < 1:
        raise UsageError(f"--jobs {jobs} must be at least 1")
    if transport not in (None, "bind", "stream"):
        raise UsageError(f"tree transport {transport!r} is not 'bind' or 'stream'")
    if strategy not in (None, "agent", "exec"):
        raise UsageError(f"Docker strategy {strategy!r} is not 'agent' or 'exec'")
    if strategy is not None and fresh_container:
        raise UsageError("a Docker strategy and --fresh-container exclude each other")


@dataclass(eq=False)
class _Slot:
    index: int
    worker: Worker | None = None
    busy: bool = False


class DockerRunner:
    """Runs samples in containers. Thread-safe; at most ``jobs`` samples run at once."""

    backend = "docker"

    def __init__(
        self,
        *,
        image: str,
        network: str = "none",
        memory: LimitSpec = None,
        cpus: float | None = None,
        pids_limit: LimitSpec = None,
        user: str | None = None,
        fresh_container: bool = False,
        pull: bool = False,
        jobs: int = 1,
        session_label: str,
        client: Any | None = None,
        transport: str | None = None,
        strategy: str | None = None,
        tmp_size: LimitSpec = None,
        work_size: LimitSpec = None,
    ) -> None:
        _check_choices(jobs, transport, strategy, fresh_container)
        settings = functools.partial(
            parse_limits,
            network=network,
            memory=memory,
            cpus=cpus,
            pids_limit=pids_limit,
            user=user,
            tmp_size=tmp_size,
            work_size=work_size,
        )
        settings()  # bad values are usage errors before the engine is asked
        self.image = image
        self.fresh_container = fresh_container
        self.session_label = session_label
        self.client = connect(client, jobs)
        self.api = self.client.api
        self._closed = False
        self._kills = 0
        self._tars: dict[str, bytes] = {}
        self._fits: set[str] = set()
        self._all_slots = [_Slot(index) for index in range(jobs)]
        self._engine: Engine | None = None
        try:
            reap_stale(self.client)
        except ENGINE_ERRORS as exc:
            log.warning("could not reap stale repomin containers: %s", engine_error(exc))
        host_ram = None if memory is not None else host_memory(self.client)
        self.limits = settings(host_memory=host_ram, jobs=jobs)
        self.image_id = resolve_image(self.client, image, pull)
        self.strategy = "fresh" if fresh_container else (strategy or "agent")
        self.strategy_reason: str | None = None
        self.has_shell = True
        self._slots: queue.Queue[_Slot] = queue.Queue()
        for slot in self._all_slots:
            self._slots.put(slot)
        self._scratch = ScratchRoot(session_label)
        self._engine = Engine(self.api, self.image_id, self.limits, session_label, self._scratch)
        atexit.register(self.close)
        self._start_up(transport, strategy)

    @property
    def engine(self) -> Engine:
        assert self._engine is not None
        return self._engine

    @property
    def transport(self) -> str:
        return self.engine.transport

    # -- set-up ------------------------------------------------------------------------------

    def _start_up(self, transport: str | None, strategy: str | None) -> None:
        """:meth:`_set_up`, closing the runner if it fails; an engine error becomes a usage
        error (settings the engine rejects) or an infrastructure error, one readable line."""
        try:
            self._set_up(transport, strategy)
        except APIError as exc:
            self.close()
            if exc.status_code == 400:
                raise UsageError(
                    f"the Docker engine rejected the container settings: {engine_error(exc)}"
                ) from exc
            raise InfrastructureError(
                f"the Docker engine failed at start-up: {engine_error(exc)}"
            ) from exc
        except (EngineFailure, *ENGINE_ERRORS) as exc:
            self.close()
            raise InfrastructureError(
                f"the Docker engine failed at start-up: {engine_error(exc)}"
            ) from exc
        except BaseException:
            self.close()
            raise

    def _set_up(self, transport: str | None, strategy: str | None) -> None:
        """Choose the tree transport and the strategy, and start the first worker.

        Starting a worker here surfaces settings the engine rejects (e.g. too many CPUs) as a
        usage error before any sample runs.
        """
        engine = self.engine
        why_not: str | None = "asked for"
        if transport != "stream":
            lim = self.limits
            labels = engine.labels("probe")
            why_not = probe_bind(self.api, self.image_id, self._scratch, lim.uid, lim.gid, labels)
        if why_not is not None and transport == "bind":
            raise UsageError(f"the bind tree transport does not work here: {why_not}")
        engine.transport = "bind" if why_not is None else "stream"
        if why_not is not None:
            log.info("streaming trees into containers: %s", why_not)
        self.has_shell = probe_shell(
            self.api, self.image_id, engine.labels("probe"), engine.host_config(kind="direct")
        )
        if not self.has_shell:
            if strategy is not None:
                raise UsageError(
                    f"image {self.image!r} has no /bin/sh, which the {strategy} strategy "
                    "needs; drop it (one container per sample is used) or add a shell"
                )
            if not self.fresh_container:
                # Chosen automatically: recorded, and shown by the pipeline as a notice.
                self.strategy_reason = "the image has no /bin/sh"
            self.strategy = "fresh"
            return
        self._all_slots[0].worker = self._start_worker()

    def _start_worker(self) -> Worker:
        if self.strategy != "agent":
            return self.engine.start_worker(agent=False)
        worker = self.engine.start_worker(agent=True)
        assert worker.agent is not None
        try:
            ready = worker.agent.handshake()
        except BaseException:
            self.engine.retire(worker)
            raise
        if ready:
            return worker
        self.engine.retire(worker)
        if self.strategy_reason is None and self._kills == 0:
            self.strategy, self.strategy_reason = "exec", "the image has no nsenter or setpriv"
            return self.engine.start_worker(agent=False)
        raise EngineFailure("the sample agent cannot switch to the sample user in this image")

    # -- the protocol ------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "docker",
            "sample_isolation": "container",
            "docker_image": self.image,
            "docker_image_id": self.image_id,
            **self.limits.describe(),
            "docker_strategy": STRATEGIES[self.strategy],
            "docker_strategy_reason": self.strategy_reason,
            "docker_tree_transport": self.transport,
        }

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        if tree.digest not in self._fits:
            sizes = [len(e.data) for e in tree.entries.values() if e.kind == "file"]
            check_fits(sizes, self.limits.work_size)  # a usage error: retrying cannot help
            with self.engine.lock:
                self._fits.add(tree.digest)
        outcome = Outcome(exit_code=None, infrastructure_error="the runner is closed")
        # A kill_all() from now on stops this sample, also while it waits for a slot or for
        # its worker to start: it must not start after an interrupt.
        kills = self._kills
        for attempt in range(1 + RETRIES):
            if self._closed:
                return outcome
            slot = self._slots.get()
            slot.busy = True
            try:
                outcome = self._attempt(slot, tree, request, kills)
            finally:
                slot.busy = False
                self._slots.put(slot)
            if outcome.infrastructure_error is None:
                return outcome
            if self._kills != kills:
                return _interrupted()
            log.warning(
                "sample %s: engine error on attempt %d: %s",
                request.sample_id,
                attempt + 1,
                outcome.infrastructure_error,
            )
        return outcome

    def _attempt(self, slot: _Slot, tree: Tree, request: RunRequest, kills: int) -> Outcome:
        if self._kills != kills or self._closed:
            return _interrupted()
        try:
            if not self.has_shell:
                return run_direct(self.engine, tree, request, lambda: self._kills != kills)
            if slot.worker is None:
                slot.worker = self._start_worker()
                if self._kills != kills:  # interrupted while it started (kill_all missed it)
                    return _interrupted()
            worker = slot.worker
            payload = self._prepare(worker, tree)
            if worker.agent is not None:
                outcome, healthy = run_agent(worker, request, payload)
            else:
                outcome, healthy = run_exec(self.engine, worker, request, payload)
            if not healthy or self.fresh_container:
                self._recycle(slot)
            return outcome
        except (EngineFailure, *ENGINE_ERRORS) as exc:
            self._recycle(slot)
            return Outcome(exit_code=None, infrastructure_error=engine_error(exc), workdir=WORKDIR)

    def _prepare(self, worker: Worker, tree: Tree) -> bytes:
        """Put the tree in the worker's bind directory, or return its archive to stream."""
        if worker.bind_dir is None:
            return self._tar(tree)
        lim = self.limits
        wipe_dir(worker.bind_dir)
        try:
            fill(worker.bind_dir, tree, lim.uid, lim.gid)
        except OSError as exc:
            raise EngineFailure(
                f"could not write the tree to /work ({exc.strerror or exc}); the tree must fit "
                f"into --work-size ({lim.work_size or 'none'})"
            ) from exc
        return b""

    def _recycle(self, slot: _Slot) -> None:
        worker, slot.worker = slot.worker, None
        if worker is not None:
            self.engine.retire(worker)

    def _tar(self, tree: Tree) -> bytes:
        """The tree's archive; the last few are kept, as a candidate is usually sampled often."""
        engine = self.engine
        with engine.lock:
            cached = self._tars.get(tree.digest)
        if cached is not None:
            return cached
        archive = tar_bytes(tree, self.limits.uid, self.limits.gid)
        archive += bytes(-len(archive) % STREAM_BLOCK)
        with engine.lock:
            self._tars[tree.digest] = archive
            while len(self._tars) > len(self._all_slots) + 1:
                self._tars.pop(next(iter(self._tars)))
        return archive

    # -- shutdown ----------------------------------------------------------------------------

    def kill_all(self) -> None:
        """Stop every running sample now (Ctrl-C, SIGTERM, budget); their workers are recycled."""
        engine = self._engine
        if engine is None:
            return
        with engine.lock:
            self._kills += 1
            targets = [s.worker.cid for s in self._all_slots if s.busy and s.worker is not None]
            targets += engine.direct
        for cid in targets:
            with contextlib.suppress(*ENGINE_ERRORS):
                self.api.kill(cid)

    def close(self) -> None:
        """Remove every container and volume of this runner (idempotent; also run at exit)."""
        engine = self._engine
        if engine is None:
            self._closed = True
            return
        with engine.lock:
            if self._closed:
                return
            self._closed = engine.closed = True
            containers = list(engine.containers)
            volumes = list(engine.volumes)
            sockets = list(engine.sockets)
            workers = [s.worker for s in self._all_slots if s.worker is not None]
        atexit.unregister(self.close)
        for cid in containers:
            engine.remove_container(cid)
        for worker in workers:
            if worker.agent is not None:
                worker.agent.close()
        for sock in sockets:
            close_socket(sock)
        for volume in volumes:
            with contextlib.suppress(*ENGINE_ERRORS):
                self.api.remove_volume(volume, force=True)
        sweep(self.api, self.session_label, engine.remove_container)
        self._scratch.remove()
