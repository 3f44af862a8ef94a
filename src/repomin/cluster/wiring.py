"""How ``reduce`` and ``replay`` reach the cluster: the typed ``--cluster`` configuration, the
click options ``replay`` shares with ``reduce``, and the runner built from either.

The inner runner spec is what each worker builds locally: for the host backend the paths a
sample must not see (SRC, OUTPUT, its sidecar and the session, as on this machine; they are
hidden on a worker only where they exist), for Docker the image and its limits.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from repomin.cluster.connect import ClusterSecurity, check_address
from repomin.errors import ReportError, UsageError
from repomin.runners.base import Runner

if TYPE_CHECKING:
    from repomin.report.replay import ReplayPlan

F = TypeVar("F", bound=Callable[..., Any])

ENV_VAR = "REPOMIN_CLUSTER"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """``--cluster ADDRESS`` and its companions. ``jobs_from_cluster``: ``--jobs`` was not
    given, so it becomes the cluster's total worker threads once connected."""

    address: str
    security: ClusterSecurity = ClusterSecurity()
    allow_mixed_workers: bool = False
    jobs_from_cluster: bool = True

    def __post_init__(self) -> None:
        check_address(self.address, self.security)


def _option(*decls: str, **click_kw: Any) -> Any:
    """A field that is also a click option (the convention of ``repomin.cli.options``)."""
    default = click_kw.setdefault("default", None)
    return field(default=default, metadata={"click": ("option", decls, click_kw)})


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterArgs:
    """The ``--cluster`` flags of ``repomin reduce`` (``ReduceArgs`` inherits them)."""

    cluster: str | None = _option(
        "--cluster",
        envvar=ENV_VAR,
        metavar="ADDRESS",
        help=f"Run every sample on this Dask scheduler (tcp:// or tls://; also ${ENV_VAR}).",
    )
    cluster_tls_ca: Path | None = _option("--cluster-tls-ca", type=click.Path(path_type=Path))
    cluster_tls_cert: Path | None = _option("--cluster-tls-cert", type=click.Path(path_type=Path))
    cluster_tls_key: Path | None = _option("--cluster-tls-key", type=click.Path(path_type=Path))
    allow_mixed_workers: bool = _option(
        "--allow-mixed-workers",
        default=False,
        is_flag=True,
        help="Accept workers whose environment differs from the first one's (recorded).",
    )

    def cluster_config(self, *, jobs_given: bool) -> ClusterConfig | None:
        return config_from_flags(
            self.cluster,
            self.cluster_tls_ca,
            self.cluster_tls_cert,
            self.cluster_tls_key,
            self.allow_mixed_workers,
            jobs_given,
        )


def config_from_flags(
    address: str | None,
    tls_ca: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    allow_mixed_workers: bool,
    jobs_given: bool,
) -> ClusterConfig | None:
    """The configuration, or None without ``--cluster`` (then the companions are refused)."""
    security = ClusterSecurity(
        *(str(p) if p is not None else None for p in (tls_ca, tls_cert, tls_key))
    )
    if not address:
        if security.enabled or allow_mixed_workers:
            raise UsageError(
                f"--cluster-tls-*/--allow-mixed-workers need --cluster ADDRESS (or ${ENV_VAR})"
            )
        return None
    for option, path in (("ca", tls_ca), ("cert", tls_cert), ("key", tls_key)):
        if path is not None and not path.is_file():
            raise UsageError(f"--cluster-tls-{option} {path}: no such file")
    return ClusterConfig(address, security, allow_mixed_workers, not jobs_given)


def cluster_options(fn: F) -> F:
    """The ``--cluster`` options as plain click decorators (``replay`` uses these)."""
    decorators = [
        click.option(
            "--cluster",
            "cluster",
            default=None,
            envvar=ENV_VAR,
            metavar="ADDRESS",
            help=f"Run every sample on this Dask scheduler (tcp:// or tls://; also ${ENV_VAR}).",
        ),
        click.option(
            "--cluster-tls-ca",
            type=click.Path(path_type=Path),
            default=None,
            help="CA certificate for a tls:// scheduler.",
        ),
        click.option(
            "--cluster-tls-cert",
            type=click.Path(path_type=Path),
            default=None,
            help="Client certificate for a tls:// scheduler.",
        ),
        click.option(
            "--cluster-tls-key",
            type=click.Path(path_type=Path),
            default=None,
            help="Client key for a tls:// scheduler.",
        ),
        click.option(
            "--allow-mixed-workers",
            is_flag=True,
            help="Accept workers whose environment differs from the first one's.",
        ),
    ]
    for decorate in reversed(decorators):
        fn = decorate(fn)
    return fn


def host_spec(hide: tuple[Path, ...], source: Path | None = None) -> dict[str, Any]:
    return {
        "backend": "host",
        "source": str(source.absolute()) if source is not None else None,
        "hide": [str(p.absolute()) for p in hide],
    }


def docker_spec(options: Mapping[str, Any]) -> dict[str, Any]:
    opts = dict(options)
    label = opts.pop("session_label", None) or f"repomin-{secrets.token_hex(4)}"
    if not opts.get("image"):
        raise UsageError("--backend docker needs --image REF (a local image or ID)")
    return {"backend": "docker", "options": opts, "session_label": label}


def make_runner(config: ClusterConfig, inner: Mapping[str, Any]) -> Runner:
    from repomin.cluster.runner import ClusterRunner

    return ClusterRunner(
        config.address,
        inner,
        security=config.security,
        allow_mixed_workers=config.allow_mixed_workers,
    )


def cluster_threads(runner: Runner) -> int | None:
    """Total worker threads of a cluster runner (None for other runners)."""
    threads = getattr(runner, "threads", None)
    return threads if isinstance(threads, int) and threads > 0 else None


def replay_runner(plan: ReplayPlan, config: ClusterConfig) -> Runner:
    """``replay --cluster``: the recorded backend on every worker (Docker: the recorded image
    ID, never pulled; refused when the workers resolve it to another image)."""
    if plan.backend == "host":
        return make_runner(config, host_spec(()))
    if plan.backend != "docker" or plan.docker_image_id is None:
        raise ReportError(f"cannot replay backend {plan.backend!r} without an image ID")
    settings = dict(plan.docker_settings)
    options = {
        "image": plan.docker_image_id,
        "network": str(settings.get("docker_network", "none")),
        "memory": settings.get("docker_memory"),
        "cpus": settings.get("docker_cpus"),
        "pids_limit": settings.get("docker_pids_limit"),
        "user": settings.get("docker_user"),
        "fresh_container": settings.get("docker_strategy") == "container-per-sample",
        "pull": False,
    }
    runner = make_runner(config, docker_spec(options))
    if runner.describe().get("docker_image_id") != plan.docker_image_id:
        runner.close()
        raise ReportError(
            f"the workers resolved {plan.docker_image_id} to another image; refusing to replay"
        )
    return runner
