"""The worker side: a Dask worker plugin that caches blobs and runs samples on its own machine.

:class:`SampleService` is registered once per reduction (its name carries a random token). On
each worker it holds a bounded :class:`~repomin.cluster.manifest.BlobStore`, the manifests of
recent trees (anchors for deltas) and the *inner* runner -- the host runner or the Docker
runner, built lazily on the worker from a plain spec, so samples run on the worker's machine
exactly as they would run locally there. :func:`run_sample` is the Dask task; its answer is a
dict: ``ok`` (with the outcome), ``need`` (blobs or the anchor this worker lacks; nothing ran),
``refused`` (this worker's environment differs from the reduction's) or ``error``.
"""

from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from repomin.cluster import manifest as mf
from repomin.cluster.env import PROTOCOL, describe_environment, environment_digest
from repomin.runners.base import Runner, RunRequest

#: Default bound of a worker's blob cache.
CACHE_BYTES = 1 << 30


def make_runner(spec: dict[str, Any], nthreads: int) -> Runner:
    """The inner runner a spec describes (``backend`` host or docker, plus its options)."""
    backend = spec.get("backend")
    if backend == "host":
        from repomin.runners.host import HostRunner

        return HostRunner(
            source=Path(spec["source"]) if spec.get("source") else None,
            hide=tuple(Path(p) for p in spec.get("hide", ())),
            isolation=str(spec.get("isolation", "auto")),
        )
    if backend == "docker":
        from repomin.runners.docker import DockerRunner

        opts = dict(spec.get("options", {}))
        label = f"{spec.get('session_label', 'repomin')}-w{os.getpid()}"
        return DockerRunner(jobs=max(1, nthreads), session_label=label, **opts)
    raise ValueError(f"unknown inner backend {backend!r}")


class SampleService(WorkerPlugin):
    """Per-worker state of one reduction. Thread-safe (the worker runs tasks in threads).

    Its logic (``serve``) needs no cluster: tests drive it with a fake runner.
    """

    idempotent = False

    def __init__(self, name: str, spec: dict[str, Any], cache_bytes: int = CACHE_BYTES) -> None:
        self.name = name
        self.spec = dict(spec)
        self.cache_bytes = cache_bytes
        self._init_state()

    def _init_state(self) -> None:
        self.blobs = mf.BlobStore(self.cache_bytes)
        self.manifests = mf.ManifestCache()
        self.nthreads = 1
        self.address = ""
        self._runner: Runner | None = None
        self._runner_error: str | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "spec": self.spec, "cache_bytes": self.cache_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.name = state["name"]
        self.spec = state["spec"]
        self.cache_bytes = state["cache_bytes"]
        self._init_state()

    # -- WorkerPlugin hooks ------------------------------------------------------------------

    def setup(self, worker: Any) -> None:
        self.address = str(getattr(worker, "address", ""))
        state = getattr(worker, "state", None)
        self.nthreads = int(getattr(state, "nthreads", 1) or 1)

    def teardown(self, worker: Any) -> None:
        self.close()

    # -- service -----------------------------------------------------------------------------

    def runner(self) -> Runner:
        with self._lock:
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

    def probe(self) -> dict[str, Any]:
        """What the client checks before dispatching: environment and runner description."""
        runner = self.runner()
        return {
            "address": self.address,
            "env": describe_environment(runner.describe()),
            "describe": runner.describe(),
            "nthreads": self.nthreads,
        }

    def serve(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Answer one sample request (see the module docstring)."""
        base_info = {"worker": self.address}
        if payload.get("protocol") != PROTOCOL:
            return {**base_info, "status": "error", "error": "protocol mismatch"}
        try:
            runner = self.runner()
            env = describe_environment(runner.describe())
        except RuntimeError as exc:
            return {**base_info, "status": "error", "error": str(exc)}
        expected = payload.get("env_digest")
        if expected is not None and environment_digest(env) != expected:
            return {**base_info, "status": "refused", "env": env}
        for digest, data in payload.get("blobs", {}).items():
            try:
                self.blobs.put(digest, data)
            except ValueError as exc:
                return {**base_info, "status": "error", "error": str(exc)}
        d: mf.Delta = payload["delta"]
        base: mf.Manifest | None = {} if d.base is None else self.manifests.get(d.base)
        if base is None:
            return {**base_info, "status": "need", "base": True, "blobs": []}
        manifest = mf.apply(base, d)
        digest = payload["digest"]
        if mf.manifest_digest(manifest) != digest:
            return {**base_info, "status": "error", "error": "rebuilt tree has another digest"}
        refs = [str(r[3]) for r in manifest.values() if r[0] == "file"]
        found, lacking = self.blobs.take(refs)
        if lacking:
            return {**base_info, "status": "need", "base": False, "blobs": sorted(set(lacking))}
        self.manifests.put(digest, manifest)
        tree = mf.build_tree(manifest, found)
        request: RunRequest = payload["request"]
        outcome = runner.run(tree, request)
        return {**base_info, "status": "ok", "outcome": outcome}

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


def run_sample(name: str, payload: bytes) -> dict[str, Any]:
    """The Dask task of one sample (``payload`` is pickled so its size is known exactly)."""
    return _service(name).serve(pickle.loads(payload))


async def probe_here(name: str, timeout: float, dask_worker: Any = None) -> dict[str, Any]:
    """Run with ``Client.run`` (one round trip to every worker at once, not one task per
    worker): the probe, in a thread (building a runner may block), within ``timeout``."""
    import asyncio

    service = dask_worker.plugins.get(name) if dask_worker is not None else None
    if not isinstance(service, SampleService):
        raise RuntimeError(f"worker plugin {name} is not registered on this worker")
    return await asyncio.wait_for(asyncio.to_thread(service.probe), timeout)


def kill_samples(name: str, dask_worker: Any = None) -> None:
    """Run with ``Client.run``: kill every running sample of this reduction on this worker."""
    service = dask_worker.plugins.get(name) if dask_worker is not None else None
    if isinstance(service, SampleService):
        service.kill_all()
