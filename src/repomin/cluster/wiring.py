"""How ``reduce`` and ``replay`` reach the cluster: the checked ``--cluster`` configuration
(the flags themselves are :mod:`repomin.cli.cluster_flags`) and the runner built from it.

The inner runner spec is what each worker builds locally: for the host backend the paths a
sample must not see (SRC, OUTPUT, its sidecar and the session, as on this machine; they are
hidden on a worker only where they exist), for Docker the image and its limits.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.cluster.connect import ClusterSecurity, check_address
from repomin.errors import UsageError
from repomin.runners.base import Runner
from repomin.runners.extras import require

ENV_VAR = "REPOMIN_CLUSTER"

#: ``--cluster-insecure`` for a command whose function does not take it as a parameter
#: (``report replay``: :func:`repomin.cli.cluster_flags.cluster_options` sets it around the
#: call; ``reduce`` passes it explicitly).
_INSECURE: ContextVar[bool] = ContextVar("repomin_cluster_insecure", default=False)


@contextmanager
def insecure_flag(value: bool) -> Iterator[None]:
    """``--cluster-insecure`` while the block runs (what :func:`config_from_flags` reads when
    its ``insecure`` is not given)."""
    token = _INSECURE.set(value)
    try:
        yield
    finally:
        _INSECURE.reset(token)


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """``--cluster ADDRESS`` and its companions. ``jobs_from_cluster``: ``--jobs`` was not
    given, so it becomes the cluster's total worker threads once connected. ``insecure``:
    ``--cluster-insecure`` (a plain tcp:// scheduler off this machine is allowed)."""

    address: str
    security: ClusterSecurity = ClusterSecurity()
    allow_mixed_workers: bool = False
    jobs_from_cluster: bool = True
    insecure: bool = False

    def __post_init__(self) -> None:
        check_address(self.address, self.security, self.insecure)


def config_from_flags(
    address: str | None,
    tls_ca: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    allow_mixed_workers: bool,
    jobs_given: bool,
    insecure: bool | None = None,
) -> ClusterConfig | None:
    """The configuration, or None without ``--cluster`` (then the companions are refused).
    ``insecure`` None: as :func:`insecure_flag` set it."""
    if insecure is None:
        insecure = _INSECURE.get()
    security = ClusterSecurity(
        *(str(p) if p is not None else None for p in (tls_ca, tls_cert, tls_key))
    )
    if not address:
        if security.enabled or allow_mixed_workers or insecure:
            raise UsageError(
                "--cluster-tls-*/--allow-mixed-workers/--cluster-insecure need --cluster "
                f"ADDRESS (or ${ENV_VAR})"
            )
        return None
    for option, path in (("ca", tls_ca), ("cert", tls_cert), ("key", tls_key)):
        if path is not None and not path.is_file():
            raise UsageError(f"--cluster-tls-{option} {path}: no such file")
    require("distributed", "cluster", "--cluster")
    return ClusterConfig(address, security, allow_mixed_workers, not jobs_given, insecure)


def host_spec(
    hide: tuple[Path, ...],
    source: Path | None = None,
    isolation: str = "auto",
    home: str = "fresh",
) -> dict[str, Any]:
    """``home``: ``--home`` (``inherit``: each worker's own HOME, the one it was started with)."""
    return {
        "backend": "host",
        "source": str(source.absolute()) if source is not None else None,
        "hide": [str(p.absolute()) for p in hide],
        "isolation": isolation,
        "home": home,
    }


def docker_spec(options: Mapping[str, Any]) -> dict[str, Any]:
    opts = dict(options)
    label = opts.pop("session_label", None) or f"repomin-{secrets.token_hex(4)}"
    if not opts.get("image"):
        raise UsageError("--backend docker needs --image REF (a local image or ID)")
    return {"backend": "docker", "options": opts, "session_label": label}


def make_runner(config: ClusterConfig, inner: Mapping[str, Any]) -> Runner:
    require("distributed", "cluster", "--cluster")
    from repomin.cluster.runner import ClusterRunner

    return ClusterRunner(
        config.address,
        inner,
        security=config.security,
        allow_mixed_workers=config.allow_mixed_workers,
        insecure=config.insecure,
    )


def cluster_threads(runner: Runner) -> int | None:
    """Total worker threads of a cluster runner (None for other runners)."""
    threads = getattr(runner, "threads", None)
    return threads if isinstance(threads, int) and threads > 0 else None
