"""Reaching the scheduler: who may be a member (address checks, TLS material), the client's
refusal of pickled answers, the one-line connection error, and the digest the report records
instead of the address.

Every member of the cluster is trusted: Dask's own protocol unpickles some of what the
scheduler and the workers send (task exceptions, ``ToPickle`` frames of any message), so a
member can run code in this process whatever ReproMin does. Hence a ``tcp://`` scheduler off
this machine (where any host that reaches it can join as a worker) needs TLS with a client
certificate -- Dask's TLS is mutual: only holders of a certificate from the CA join -- or the
explicit ``--cluster-insecure``. What ReproMin controls it closes: the client takes task
results only as plain data (``deserializers``: msgpack, never pickle), never unpickles the
error a task or a worker reports (:func:`run_on_workers` keeps only its text,
:func:`register_on_workers` does not read it, the ``task-erred`` handler of :func:`connect`
drops it), and decodes ReproMin's own answers itself (:mod:`repomin.cluster.wire`).
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from repomin.errors import UsageError

#: The only serialization families the client decodes: plain msgpack, and Dask's "could not
#: serialize" notice (whose decoder only raises with its text). Never "pickle" nor "dask"
#: (whose decoder unpickles the type).
PLAIN_DESERIALIZERS = ("msgpack", "error")

#: Host names that are this machine whatever the resolver says.
LOOPBACK_NAMES = ("localhost",)


class TaskFailed(Exception):
    """A task failed on its worker (or its workers kept dying); Dask's pickled exception is
    dropped, never unpickled."""


class WorkerError(Exception):
    """A worker's error during :func:`run_on_workers` (its text only)."""


@dataclass(frozen=True, slots=True)
class ClusterSecurity:
    """TLS material for ``tls://`` schedulers (paths on this machine)."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    @property
    def enabled(self) -> bool:
        return any((self.ca_file, self.cert_file, self.key_file))

    def to_dask(self) -> Any:
        from distributed import Security

        return Security(  # type: ignore[no-untyped-call]
            tls_ca_file=self.ca_file,
            tls_client_cert=self.cert_file,
            tls_client_key=self.key_file,
            require_encryption=True,
        )


def scheduler_digest(address: str) -> str:
    """What the report records instead of the scheduler's address."""
    return hashlib.sha256(b"repomin-cluster-scheduler-v1\n" + address.encode()).hexdigest()


def _host(rest: str) -> str:
    """The host of ``HOST:PORT`` or ``[V6]:PORT``."""
    if rest.startswith("["):
        return rest[1:].partition("]")[0]
    return rest.rpartition(":")[0]


def is_loopback(address: str) -> bool:
    """Whether the scheduler address names this machine's loopback (127.0.0.0/8, ::1,
    ``localhost``), literally: a name that merely resolves there does not count."""
    rest = address.partition("://")[2] if "://" in address else address
    host = _host(rest)
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def needs_insecure(address: str) -> bool:
    """Whether connecting to ``address`` is only allowed with ``--cluster-insecure``: plain
    ``tcp://`` off this machine."""
    scheme = address.partition("://")[0] if "://" in address else "tcp"
    return scheme == "tcp" and not is_loopback(address)


def insecure_warning(address: str) -> str:
    """The one line printed when ``--cluster-insecure`` lets a plain tcp:// scheduler in."""
    return (
        f"--cluster-insecure: {address} is plain tcp:// (no encryption, no authentication): "
        "any host that can reach the scheduler can join as a worker, answer samples and, "
        "through Dask's protocol, run code in this process"
    )


def check_address(address: str, security: ClusterSecurity | None, insecure: bool = False) -> None:
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in ("tcp", "tls") or not rest or ":" not in rest:
        raise UsageError(
            f"--cluster {address!r} must be tcp://HOST:PORT or tls://HOST:PORT "
            "(the address `dask scheduler` prints)"
        )
    tls = security is not None and security.enabled
    if tls and scheme != "tls":
        raise UsageError(f"--cluster-tls-* options need a tls:// address, not {address!r}")
    if scheme == "tls" and not (security and security.ca_file and security.cert_file):
        raise UsageError(
            f"--cluster {address} needs --cluster-tls-ca and --cluster-tls-cert (this client's "
            "certificate; --cluster-tls-key when the key is a separate file)"
        )
    if scheme == "tcp" and not insecure and needs_insecure(address):
        raise UsageError(
            f"--cluster {address}: any host that can reach a plain tcp:// scheduler can join "
            "it as a worker and run code in this process; use tls:// with --cluster-tls-ca "
            "and --cluster-tls-cert (and --cluster-tls-key), or pass --cluster-insecure on a "
            "network where you trust every host"
        )


def connect(
    address: str, security: ClusterSecurity | None, timeout: float, insecure: bool = False
) -> Any:
    """A Dask client that takes only plain data from the cluster (see the module docstring),
    or a one-line usage error naming the address and how to check it."""
    from distributed import Client

    check_address(address, security, insecure)
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    # A refused answer is reported by the runner (the worker is drained, with the reason);
    # Dask's own "Failed to deserialize" record would print a traceback.
    logging.getLogger("distributed.protocol.core").setLevel(logging.CRITICAL + 1)
    try:
        client = Client(  # type: ignore[no-untyped-call]
            address,
            timeout=timeout,
            security=security.to_dask() if security and security.enabled else None,
            set_as_default=False,
            deserializers=list(PLAIN_DESERIALIZERS),
        )
    except Exception as exc:
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise UsageError(
            f"cannot reach the Dask scheduler at {address} ({reason}); check that `dask "
            f"scheduler` runs there and this machine can connect (e.g. `dask worker {address}`)"
        ) from None
    _drop_task_exceptions(client)
    return client


def _drop_task_exceptions(client: Any) -> None:
    """Replace the client's ``task-erred`` handler: Dask's would unpickle the exception the
    worker sent; this one records :class:`TaskFailed` and drops the pickle unread."""

    def task_erred(key: Any = None, exception: Any = None, traceback: Any = None) -> None:
        state = client.futures.get(key)
        if state is not None:
            state.set_error(TaskFailed("the task failed on its worker"), None)

    handlers = client._stream_handlers
    if "task-erred" not in handlers:  # another Dask: fail loudly rather than unpickle
        raise RuntimeError("this version of distributed has no task-erred handler to replace")
    handlers["task-erred"] = task_erred


def _pickled(obj: object) -> bytes:
    """What the client sends workers (code and requests), pickled as Dask pickles it."""
    from distributed.protocol.pickle import dumps

    data: bytes = dumps(obj)  # type: ignore[no-untyped-call]
    return data


def _error_text(response: object) -> str:
    text = response.get("exception_text") if isinstance(response, dict) else None
    return " ".join(text.split())[:200] if isinstance(text, str) and text else "failed"


def run_on_workers(
    client: Any,
    fn: Callable[..., Any],
    *args: Any,
    workers: list[str] | None = None,
    wait: bool = True,
) -> dict[str, object]:
    """``Client.run`` without unpickling anything a worker sends back: per worker that
    answered, its result as the client's plain deserializers decoded it, or a
    :class:`WorkerError` with only the text of the worker's error (``Client.run`` would unpickle
    the exception). ``wait=False`` needs a coroutine function (Dask's rule)."""
    msg = {
        "op": "run",
        "function": _pickled(fn),
        "args": _pickled(args),
        "kwargs": _pickled({}),
        "wait": wait,
    }
    responses = client.sync(client.scheduler.broadcast, msg=msg, workers=workers, on_error="ignore")
    out: dict[str, object] = {}
    for worker, resp in dict(responses).items():
        if isinstance(resp, dict) and resp.get("status") == "OK":
            out[str(worker)] = resp.get("result")
        else:
            out[str(worker)] = WorkerError(_error_text(resp))
    return out


def register_on_workers(client: Any, plugin: Any, name: str) -> None:
    """Register a worker plugin without reading what workers answer (``Client.register_plugin``
    would unpickle a worker's error). A worker whose ``setup`` failed is found by the probe."""
    # A worker whose setup failed answers with Dask's pickled error, which the plain
    # deserializers refuse (TypeError): left unread. The scheduler holds the plugin already.
    with contextlib.suppress(TypeError):
        client.sync(
            client.scheduler.register_worker_plugin,
            plugin=_pickled(plugin),
            name=name,
            idempotent=False,
        )


def unregister_on_workers(client: Any, name: str) -> None:
    """Unregister a worker plugin everywhere (its ``teardown`` runs on every worker); the
    workers' answers are not read."""
    client.sync(client.scheduler.unregister_worker_plugin, name=name)
