"""The worker side: a Dask worker plugin that caches blobs and runs samples on its own machine.

:class:`SampleService` is registered once per reduction (its name carries a random token). On
each worker it holds a bounded :class:`~repomin.cluster.manifest.BlobStore`, the manifests of
recent trees (anchors for deltas) and the *inner* runner -- the host runner or the Docker
runner, built lazily on the worker from a plain spec, so samples run on the worker's machine
exactly as they would run locally there. :func:`run_sample` is the Dask task; requests and
answers are plain messages (:mod:`repomin.cluster.wire`): ``ok`` (with the outcome), ``need``
(blobs or the anchor this worker lacks; nothing ran), ``refused`` (this worker's environment
differs from the reduction's) or ``error``.

The plugin watches the client that registered it (:meth:`SampleService.watch_client`): every
:data:`WATCH_SECONDS` it asks the scheduler whether that client is still connected, and once it
is gone (closed, or killed: the scheduler sees its connection drop) it kills the reduction's
running samples on this worker and unregisters the plugin from the scheduler and every worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from repomin.cluster import manifest as mf
from repomin.cluster import wire
from repomin.cluster.env import describe_environment, environment_digest
from repomin.runners.base import Runner
from repomin.runners.extras import require

#: Default bound of a worker's blob cache.
CACHE_BYTES = 1 << 30
#: Seconds between a worker's checks that the reduction's client is still connected.
WATCH_SECONDS = 2.0


def make_runner(spec: dict[str, Any], nthreads: int) -> Runner:
    """The inner runner a spec describes (``backend`` host or docker, plus its options)."""
    backend = spec.get("backend")
    if backend == "host":
        from repomin.runners.host import HostRunner

        return HostRunner(
            source=Path(spec["source"]) if spec.get("source") else None,
            hide=tuple(Path(p) for p in spec.get("hide", ())),
            isolation=str(spec.get("isolation", "auto")),
            home=str(spec.get("home", "fresh")),
        )
    if backend == "docker":
        require("docker", "docker", "--backend docker on a cluster worker")
        from repomin.runners.docker import DockerRunner

        opts = dict(spec.get("options", {}))
        label = f"{spec.get('session_label', 'repomin')}-w{os.getpid()}"
        return DockerRunner(jobs=max(1, nthreads), session_label=label, **opts)
    raise ValueError(f"unknown inner backend {backend!r}")


def client_connected(events: object) -> bool | None:
    """Whether the scheduler's event log of a client (its ``events`` handler, topic: the
    client's id) says it is connected: its last ``add-client``/``remove-client`` event is
    ``add-client``. A log without either (the scheduler forgot the client, or restarted) means
    gone; anything but a log, unknown (None)."""
    if not isinstance(events, list | tuple):
        return None
    last = None
    for item in events:
        msg = item[1] if isinstance(item, list | tuple) and len(item) == 2 else None
        if isinstance(msg, dict) and msg.get("action") in ("add-client", "remove-client"):
            last = msg["action"]
    return last == "add-client"


class SampleService(WorkerPlugin):
    """Per-worker state of one reduction. Thread-safe (the worker runs tasks in threads).

    Its logic (``answer``) needs no cluster: tests drive it with a fake runner.
    ``client_id``: the Dask client whose departure ends the reduction on this worker.
    """

    idempotent = False

    def __init__(
        self,
        name: str,
        spec: dict[str, Any],
        cache_bytes: int = CACHE_BYTES,
        client_id: str | None = None,
    ) -> None:
        self.name = name
        self.spec = dict(spec)
        self.cache_bytes = cache_bytes
        self.client_id = client_id
        self._init_state()

    def _init_state(self) -> None:
        self.blobs = mf.BlobStore(self.cache_bytes)
        self.manifests = mf.ManifestCache()
        self.nthreads = 1
        self.address = ""
        self._runner: Runner | None = None
        self._runner_error: str | None = None
        self._lock = threading.Lock()
        self._ready = False  # setup completed
        self._ended = False  # the client is gone or the plugin was torn down
        self._watch: asyncio.Task[None] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec,
            "cache_bytes": self.cache_bytes,
            "client_id": self.client_id,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.name = state["name"]
        self.spec = state["spec"]
        self.cache_bytes = state["cache_bytes"]
        self.client_id = state.get("client_id")
        self._init_state()

    # -- WorkerPlugin hooks ------------------------------------------------------------------

    def setup(self, worker: Any) -> None:
        self.address = str(getattr(worker, "address", ""))
        state = getattr(worker, "state", None)
        self.nthreads = int(getattr(state, "nthreads", 1) or 1)
        if self.client_id is not None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # driven without a worker's event loop
                loop = None
            if loop is not None:
                self._watch = loop.create_task(self.watch_client(worker))
        self._ready = True

    def teardown(self, worker: Any) -> None:
        watch, self._watch = self._watch, None
        if watch is not None and not self._ended:
            watch.cancel()
        self._ended = True
        self.close()

    async def watch_client(self, worker: Any) -> None:
        """Until the client is gone: then kill this reduction's samples here and unregister
        the plugin (from the scheduler, so workers that join later do not get it, and from
        every worker). An unreachable scheduler decides nothing."""
        while True:
            await asyncio.sleep(WATCH_SECONDS)
            try:
                events = await worker.scheduler.events(topic=self.client_id)
            except Exception:
                continue
            if client_connected(events) is not False:
                continue
            self._ended = True
            await asyncio.to_thread(self.close)
            with contextlib.suppress(Exception):  # another worker may have done it already
                await worker.scheduler.unregister_worker_plugin(name=self.name)
            if worker.plugins.get(self.name) is self:
                with contextlib.suppress(Exception):
                    await worker.plugin_remove(self.name)
            return

    # -- service -----------------------------------------------------------------------------

    def runner(self) -> Runner:
        with self._lock:
            if self._ended:
                raise RuntimeError("the reduction's client is gone")
            if not self._ready:
                raise RuntimeError("the plugin's setup did not complete on this worker")
            if self._runner is None and self._runner_error is None:
                try:
                    self._runner = make_runner(self.spec, self.nthreads)
                except Exception as exc:  # reported to the client; the worker gets drained
                    self._runner_error = f"{type(exc).__name__}: {exc}"
            if self._runner is None:
                raise RuntimeError(f"the worker cannot build its runner: {self._runner_error}")
            return self._runner

    def environment(self) -> dict[str, str]:
        return describe_environment(self.runner().describe())

    def probe(self) -> wire.Probe:
        """What the client checks before dispatching: environment and runner description."""
        runner = self.runner()
        return wire.Probe(
            address=self.address,
            env=describe_environment(runner.describe()),
            describe=dict(runner.describe()),
            nthreads=self.nthreads,
        )

    def serve(self, payload: bytes) -> bytes:
        """The answer to one request, encoded (see the module docstring)."""
        return wire.encode_answer(self.answer(payload))

    def answer(self, payload: bytes) -> wire.Answer:
        """Answer one sample request."""
        try:
            req = wire.decode_request(payload)
        except wire.WireError as exc:
            return self._error(f"bad request: {exc}")
        try:
            runner = self.runner()
            env = describe_environment(runner.describe())
        except RuntimeError as exc:
            return self._error(str(exc))
        if req.env_digest is not None and environment_digest(env) != req.env_digest:
            return wire.Answer(self.address, "refused", env=env)
        for digest, data in req.blobs.items():
            try:
                self.blobs.put(digest, data)
            except ValueError as exc:
                return self._error(str(exc))
        d = req.delta
        base: mf.Manifest | None = {} if d.base is None else self.manifests.get(d.base)
        if base is None:
            return wire.Answer(self.address, "need", base=True)
        manifest = mf.apply(base, d)
        if mf.manifest_digest(manifest) != req.digest:
            return self._error("rebuilt tree has another digest")
        refs = [str(r[3]) for r in manifest.values() if r[0] == "file"]
        found, lacking = self.blobs.take(refs)
        if lacking:
            return wire.Answer(self.address, "need", blobs=tuple(sorted(set(lacking))))
        self.manifests.put(req.digest, manifest)
        tree = mf.build_tree(manifest, found)
        outcome = runner.run(tree, req.request)
        return wire.Answer(self.address, "ok", outcome=outcome)

    def _error(self, message: str) -> wire.Answer:
        return wire.Answer(self.address, "error", error=message)

    def kill_all(self) -> None:
        runner = self._runner
        kill = getattr(runner, "kill_all", None)
        if callable(kill):
            kill()

    def close(self) -> None:
        with self._lock:
            runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()


def _service(name: str) -> SampleService:
    from distributed import get_worker

    service = get_worker().plugins.get(name)
    if not isinstance(service, SampleService):
        raise RuntimeError(f"worker plugin {name} is not registered on this worker")
    return service


def run_sample(name: str, payload: bytes) -> bytes:
    """The Dask task of one sample: a plain request in, a plain answer out (never raises)."""
    try:
        return _service(name).serve(payload)
    except Exception as exc:
        from distributed import get_worker

        address = ""
        with contextlib.suppress(Exception):
            address = str(get_worker().address)
        message = f"{type(exc).__name__}: {exc}"
        return wire.encode_answer(wire.Answer(address, "error", error=message))


async def probe_here(name: str, timeout: float, dask_worker: Any = None) -> bytes:
    """Run with :func:`~repomin.cluster.connect.run_on_workers` (one round trip to every
    worker at once, not one task per worker): the probe, in a thread (building a runner may
    block), within ``timeout``, encoded."""
    service = dask_worker.plugins.get(name) if dask_worker is not None else None
    if not isinstance(service, SampleService):
        raise RuntimeError(f"worker plugin {name} is not registered on this worker")
    return wire.encode_probe(await asyncio.wait_for(asyncio.to_thread(service.probe), timeout))


async def kill_samples(name: str, dask_worker: Any = None) -> None:
    """Run with ``run_on_workers(..., wait=False)`` (so a coroutine): kill every running
    sample of this reduction on this worker."""
    service = dask_worker.plugins.get(name) if dask_worker is not None else None
    if isinstance(service, SampleService):
        await asyncio.to_thread(service.kill_all)
