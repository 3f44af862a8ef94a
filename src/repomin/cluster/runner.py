"""``ClusterRunner``: the runner protocol on a Dask cluster.

Each sample is one Dask task (``pure=False``: every sample is a new task, never deduplicated).
The worker runs it with its own host or Docker runner (:mod:`repomin.cluster.worker`); trees
ship by content (:mod:`repomin.cluster.manifest`): a manifest delta against a tree workers
already hold, plus only the file contents no worker has been sent yet; a worker that lacks an
anchor or a blob answers ``need`` and gets exactly that, pinned to it.

Requests and answers are plain messages (:mod:`repomin.cluster.wire`), and the client takes
task results only as plain data (:func:`repomin.cluster.connect.connect`): a worker whose
answer arrives pickled, or malformed, is drained at once and the sample is an
``infrastructure_error``; no worker's answer can be anything but an outcome.

Faults never become evidence: a task whose worker dies is rerun by Dask elsewhere and the lost
attempt never reaches the oracle; a task that failed on too many dying workers, or a worker
error, returns an ``infrastructure_error`` outcome (the oracle retries, never a verdict); a
worker that fails ``DRAIN_AFTER`` times in a row, or whose environment differs from the first
worker's, gets no more samples. An unreachable scheduler at start is a usage error (exit 2); a
scheduler lost during the run an :class:`~repomin.errors.InfrastructureError` (exit 3; the
session is kept for ``--resume``).
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from repomin.cluster import manifest as mf
from repomin.cluster import wire
from repomin.cluster import worker as wk
from repomin.cluster.connect import (
    ClusterSecurity,
    TaskFailed,
    WorkerError,
    connect,
    register_on_workers,
    run_on_workers,
    scheduler_digest,
    unregister_on_workers,
)
from repomin.cluster.env import differences, environment_digest
from repomin.cluster.placement import Placement, shipping_cost
from repomin.errors import InfrastructureError, UsageError
from repomin.runners.base import Outcome, RunRequest
from repomin.tree import Tree

#: Consecutive failures after which a worker gets no more samples.
DRAIN_AFTER = 3
#: Recently shipped trees kept as delta anchors.
ANCHORS = 8
#: Round trips for one sample before everything is shipped at once.
NEED_ROUNDS = 3


class ClusterRunner:
    """Dispatches every sample to a Dask cluster. Thread-safe; each call is one sample."""

    def __init__(
        self,
        address: str,
        inner: Mapping[str, Any],
        *,
        security: ClusterSecurity | None = None,
        allow_mixed_workers: bool = False,
        insecure: bool = False,
        connect_timeout: float = 10.0,
        cache_bytes: int = wk.CACHE_BYTES,
    ) -> None:
        """``insecure``: a plain tcp:// scheduler off this machine is allowed
        (``--cluster-insecure``; see :func:`repomin.cluster.connect.check_address`)."""
        self.address = address
        self.backend = str(inner.get("backend", "host"))
        self.allow_mixed = allow_mixed_workers
        self._client = connect(address, security, connect_timeout, insecure)
        self._name = f"repomin-{secrets.token_hex(6)}"
        self._lock = threading.Lock()
        self._anchors: OrderedDict[str, tuple[mf.Manifest, set[str]]] = OrderedDict()
        self._shipped: set[str] = set()  # blob digests sent to at least one worker
        self._worker_blobs: dict[str, set[str]] = {}  # blob digests sent to each worker
        self._digests: dict[bytes, str] = {}
        self._failures: dict[str, int] = {}
        self._drained: dict[str, str] = {}  # worker -> reason
        self._inflight: set[Any] = set()
        self._keys = itertools.count(1)
        self._closed = False
        self.samples = 0
        self.bytes_shipped = 0
        self.blob_bytes_shipped = 0
        self.need_rounds = 0
        self.lost_attempts = 0
        try:
            self._start(dict(inner), cache_bytes, connect_timeout)
        except BaseException:
            self._client.close()
            raise

    # -- start-up ----------------------------------------------------------------------------

    def _start(self, inner: dict[str, Any], cache_bytes: int, timeout: float) -> None:
        try:
            self._client.wait_for_workers(1, timeout=timeout)
        except Exception:
            raise UsageError(
                f"the Dask scheduler at {self.address} has no workers; start some with "
                f"`dask worker {self.address}`"
            ) from None
        # The plugin watches this client: when it is gone (even killed), each worker kills the
        # reduction's samples and the plugin unregisters itself.
        service = wk.SampleService(self._name, inner, cache_bytes, client_id=self._client.id)
        register_on_workers(self._client, service, self._name)
        workers = list(self._client.scheduler_info(n_workers=-1)["workers"])
        # One broadcast probes every worker at once (measured with 16 workers: 0.07 s,
        # against 0.3 s for one task per worker).
        replies = run_on_workers(
            self._client, wk.probe_here, self._name, max(60.0, timeout), workers=workers
        )
        answers: dict[str, wire.Probe] = {}
        for w in workers:
            reply = replies.get(w, WorkerError("no answer"))
            try:
                if isinstance(reply, WorkerError):
                    raise reply
                answers[w] = wire.decode_probe(reply)
            except (WorkerError, wire.WireError) as exc:
                why = " ".join(str(exc).split())[:120] or type(exc).__name__
                self._drained[w] = f"probe failed: {why}"
        if not answers:
            reasons = "; ".join(sorted(set(self._drained.values())))
            raise InfrastructureError(f"no Dask worker could start a sample runner ({reasons})")
        first = answers[next(w for w in workers if w in answers)]
        self.reference_env: dict[str, str] = first.env
        self.reference_describe: dict[str, Any] = dict(first.describe)
        self.environments = {environment_digest(a.env) for a in answers.values()}
        mixed = {w: differences(self.reference_env, a.env) for w, a in answers.items()}
        mixed = {w: d for w, d in mixed.items() if d}
        if mixed and not self.allow_mixed:
            w, diff = sorted(mixed.items())[0]
            raise UsageError(
                f"{len(mixed)} Dask worker(s) differ from the first worker ({w}: "
                f"{'; '.join(diff)}); use identical workers or pass --allow-mixed-workers"
            )
        self.workers = len(answers)
        self._placement = Placement(answers, time.monotonic())
        self.threads = sum(a.nthreads for a in answers.values())
        self._env_digest = None if self.allow_mixed else environment_digest(self.reference_env)

    # -- the protocol ------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        out = dict(self.reference_describe)
        out.update(self.dispatch())
        return out

    def dispatch(self) -> dict[str, Any]:
        """The ``execution`` fields of the dispatch (engine, workers, address digest, bytes)."""
        per_sample = self.bytes_shipped / self.samples if self.samples else 0.0
        return {
            "dispatch_engine": "dask",
            "cluster_workers": self.workers,
            "cluster_threads": self.threads,
            "cluster_scheduler_sha256": scheduler_digest(self.address),
            "cluster_mixed_workers_allowed": self.allow_mixed,
            "cluster_environments": len(self.environments),
            "cluster_drained_workers": len(self._drained),
            "cluster_bytes_shipped": self.bytes_shipped,
            "cluster_bytes_per_sample": round(per_sample, 1),
        }

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        target, blobs = self._manifest(tree)
        placed = self._place(target, blobs)
        try:
            return self._run_placed(tree.digest, target, blobs, request, placed)
        finally:
            if placed is not None:
                with self._lock:
                    self._placement.release(placed)

    def _run_placed(
        self,
        digest: str,
        target: mf.Manifest,
        blobs: dict[str, bytes],
        request: RunRequest,
        pinned: str | None,
    ) -> Outcome:
        for round_no in range(NEED_ROUNDS + 1):
            last = round_no == NEED_ROUNDS
            payload, sent, base = self._payload(blobs, target, digest, request, pinned, last)
            resp = self._submit(payload, None if last else pinned, request)
            if isinstance(resp, Outcome):
                return resp
            status, address = resp.status, resp.worker
            with self._lock:
                self._worker_blobs.setdefault(address, set()).update(sent)
            if status == "ok" and resp.outcome is not None:
                self._succeeded(address, digest, target)
                return resp.outcome
            if status == "need":
                with self._lock:
                    self.need_rounds += 1
                    # What the worker says it lacks was evicted or never reached it.
                    self._worker_blobs[address].difference_update(resp.blobs)
                    if resp.base and base is not None and base in self._anchors:
                        self._anchors[base][1].discard(address)
                pinned = address
                continue
            if status == "refused":
                diff = differences(self.reference_env, resp.env)
                self._drain(address, "environment differs: " + "; ".join(diff))
                pinned = None
                continue
            return self._failed(address, resp.error or status)
        return Outcome(exit_code=None, infrastructure_error="workers kept lacking the tree")

    def _place(self, target: mf.Manifest, blobs: dict[str, bytes]) -> str | None:
        """The worker for this sample (:mod:`repomin.cluster.placement`)."""
        with self._lock:
            due = self._placement.due(time.monotonic())
        if due:
            with contextlib.suppress(Exception):  # the next submit reports a lost scheduler
                live = list(self._client.scheduler_info(n_workers=-1)["workers"])
                with self._lock:
                    self._placement.update(live)
        with self._lock:
            anchors = {d: (m, h) for d, (m, h) in self._anchors.items()}
            cost = shipping_cost(target, set(blobs), anchors, self._worker_blobs)
            return self._placement.acquire(cost, set(self._drained))

    def _manifest(self, tree: Tree) -> tuple[mf.Manifest, dict[str, bytes]]:
        out: mf.Manifest = {}
        blobs: dict[str, bytes] = {}
        for path, entry in tree.entries.items():
            if entry.kind == "file":
                d = self._digests.get(entry.data)
                if d is None:
                    d = mf.blob_digest(entry.data)
                    with self._lock:
                        if len(self._digests) > 200_000:
                            self._digests.clear()
                        self._digests[entry.data] = d
                out[path] = ("file", entry.mode, entry.mtime_ns, d)
                blobs[d] = entry.data
            else:
                ref = entry.data if entry.kind == "symlink" else b""
                out[path] = (entry.kind, entry.mode, entry.mtime_ns, ref)
        return out, blobs

    def _payload(
        self,
        blobs: dict[str, bytes],
        target: mf.Manifest,
        digest: str,
        request: RunRequest,
        pinned: str | None,
        everything: bool,
    ) -> tuple[bytes, list[str], str | None]:
        """The encoded request, the blob digests it carries and the delta's anchor.

        Unpinned, the delta's anchor minimises the expected entries shipped (an anchor held by
        a share s of the workers costs its delta plus (1 - s) x a full manifest, the answer
        when the chosen worker lacks it) and only blobs never sent anywhere travel. Pinned to
        a worker that answered ``need``, every blob it was not sent (or reported lacking)
        travels with a delta against an anchor it holds. ``everything``: a full manifest and
        every blob."""
        with self._lock:
            anchors = [(d, m, set(h)) for d, (m, h) in self._anchors.items()]
            drained = set(self._drained)
            active = max(1, self.workers - len(self._drained))
        best = mf.delta(None, {}, target)
        if not everything:
            best_cost = float(len(target))
            for a_digest, a_manifest, holders in anchors:
                if pinned is not None:
                    if pinned not in holders:
                        continue
                    share = 1.0
                else:
                    share = min(1.0, len(holders - drained) / active)
                d = mf.delta(a_digest, a_manifest, target)
                cost = d.size + (1.0 - share) * len(target)
                if cost < best_cost:
                    best, best_cost = d, cost
        with self._lock:
            if everything:
                wanted = set(blobs)
            elif pinned is not None:
                wanted = set(blobs) - self._worker_blobs.get(pinned, set())
            else:
                fresh = {str(r[3]) for r in best.changed.values() if r[0] == "file"}
                wanted = fresh - self._shipped
        sent = {d: blobs[d] for d in sorted(wanted) if d in blobs}
        payload = wire.encode_request(
            wire.SampleRequest(digest, best, sent, request, self._env_digest)
        )
        with self._lock:
            self._shipped.update(sent)
            self.bytes_shipped += len(payload)
            self.blob_bytes_shipped += sum(len(b) for b in sent.values())
        return payload, list(sent), best.base

    def _submit(
        self, payload: bytes, pinned: str | None, request: RunRequest
    ) -> wire.Answer | Outcome:
        self._check_scheduler()
        with self._lock:
            drained = set(self._drained)
            key = f"{self._name}-{next(self._keys)}"
        restrict: list[str] | None = None
        if pinned is not None and pinned not in drained:
            restrict = [pinned]
        elif drained:
            listed = list(self._client.scheduler_info(n_workers=-1)["workers"])
            live = [w for w in listed if w not in drained]
            if not live:
                raise InfrastructureError(
                    f"every Dask worker of {self.address} was drained ({len(listed)} listed by "
                    f"the scheduler, {len(drained)} drained: "
                    f"{'; '.join(sorted(set(self._drained.values())))[:200]})"
                )
            restrict = live
        fut = self._client.submit(
            wk.run_sample,
            self._name,
            payload,
            key=key,
            pure=False,
            workers=restrict,
            allow_other_workers=pinned is not None,
        )
        with self._lock:
            self._inflight.add(fut)
        try:
            data = fut.result(timeout=4 * request.timeout + 120)
        except (CancelledError, FutureTimeout) as exc:
            self._check_scheduler()
            fut.cancel()
            return Outcome(exit_code=None, infrastructure_error=f"task {type(exc).__name__}")
        except TaskFailed:
            # Its workers kept dying, or a worker reported an error from a task that never
            # raises: the error itself is dropped unread (connect.py).
            self._check_scheduler()
            with self._lock:
                self.lost_attempts += 1
            return self._failed(pinned, "the task failed on its worker")
        except Exception as exc:
            self._check_scheduler()
            if fut.status == "finished" and isinstance(exc, TypeError):
                # The task ran, but its result came in a form the client does not decode.
                return self._refused(fut, pinned, exc)
            with self._lock:
                self.lost_attempts += 1
            reason = " ".join(str(exc).split())[:160]
            return Outcome(exit_code=None, infrastructure_error=f"{type(exc).__name__}: {reason}")
        finally:
            with self._lock:
                self._inflight.discard(fut)
        try:
            return wire.decode_answer(data)
        except wire.WireError as exc:
            return self._refused(fut, pinned, exc)

    def _refused(self, fut: Any, pinned: str | None, exc: Exception) -> Outcome:
        """A task's result that is not a plain ReproMin answer (pickled, which the client
        refuses to decode, or malformed): the worker that holds it is drained at once. Only a
        holder the scheduler names is drained, never the placement's choice by default: a
        pinned task may run elsewhere (``allow_other_workers``), and draining the worker it
        was pinned to would drain an honest one."""
        worker: str | None = None
        with contextlib.suppress(Exception):
            holders = list(self._client.who_has([fut]).get(fut.key, ()))
            worker = str(holders[0]) if holders else None
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        why = f"its answer is not plain data ({reason}); refused"
        if worker is not None:
            self._drain(worker, why)
        with contextlib.suppress(Exception):
            fut.release()
        return Outcome(exit_code=None, infrastructure_error=f"worker {worker}: {why}")

    def _check_scheduler(self) -> None:
        if self._client.status != "running" and not self._closed:
            raise InfrastructureError(
                f"lost the Dask scheduler at {self.address} during the run; the session is "
                "kept: rerun with --resume (against this or another cluster, or locally)"
            )

    def _succeeded(self, worker: str, digest: str, target: mf.Manifest) -> None:
        with self._lock:
            self.samples += 1
            self._failures.pop(worker, None)
            entry = self._anchors.get(digest)
            if entry is None:
                entry = (target, set())
                self._anchors[digest] = entry
            entry[1].add(worker)
            self._anchors.move_to_end(digest)
            while len(self._anchors) > ANCHORS:
                self._anchors.popitem(last=False)

    def _failed(self, worker: str | None, error: str) -> Outcome:
        if worker is None:
            return Outcome(exit_code=None, infrastructure_error=error)
        with self._lock:
            n = self._failures.get(worker, 0) + 1
            self._failures[worker] = n
        if n >= DRAIN_AFTER:
            self._drain(worker, error)
        return Outcome(exit_code=None, infrastructure_error=f"worker {worker}: {error}")

    def _drain(self, worker: str, reason: str) -> None:
        with self._lock:
            self._drained.setdefault(worker, reason[:200])

    @property
    def drained(self) -> dict[str, str]:
        with self._lock:
            return dict(self._drained)

    def kill_all(self) -> None:
        with self._lock:
            futures = list(self._inflight)
        try:
            if futures:
                self._client.cancel(futures)
            run_on_workers(self._client, wk.kill_samples, self._name, wait=False)
        except Exception:  # best effort: the scheduler may already be gone
            pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._client.status == "running":
                self.kill_all()
                unregister_on_workers(self._client, self._name)
        except Exception:
            pass
        finally:
            self._client.close(timeout=10)
