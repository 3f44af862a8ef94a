"""The ``--cluster`` flags, declared once: ``reduce`` inherits them as fields of its typed
record (:class:`ClusterArgs`), ``replay`` takes them as click options made from the same
fields (:func:`cluster_options`). What they mean -- the checked configuration and the runner
built from it -- is :mod:`repomin.cluster.wiring`'s."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from repomin.cli.typed import click_parameters, flag, opt
from repomin.cluster.connect import insecure_warning, needs_insecure
from repomin.cluster.wiring import ENV_VAR, ClusterConfig, config_from_flags, insecure_flag

F = TypeVar("F", bound=Callable[..., Any])

_TLS = click.Path(path_type=Path)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterArgs:
    """The ``--cluster`` flags (``ReduceArgs`` inherits them)."""

    cluster: str | None = opt(
        "--cluster",
        default=None,
        envvar=ENV_VAR,
        metavar="ADDRESS",
        help=f"Run every sample on this Dask scheduler (tcp:// or tls://; also ${ENV_VAR}).",
    )
    cluster_tls_ca: Path | None = opt(
        "--cluster-tls-ca", default=None, type=_TLS, help="CA certificate for a tls:// scheduler."
    )
    cluster_tls_cert: Path | None = opt(
        "--cluster-tls-cert",
        default=None,
        type=_TLS,
        help="Client certificate for a tls:// scheduler.",
    )
    cluster_tls_key: Path | None = opt(
        "--cluster-tls-key", default=None, type=_TLS, help="Client key for a tls:// scheduler."
    )
    allow_mixed_workers: bool = flag(
        "--allow-mixed-workers",
        help="Accept workers whose environment differs from the first one's.",
    )
    cluster_insecure: bool = flag(
        "--cluster-insecure",
        help="Allow a plain tcp:// scheduler off this machine: any host that can reach it can "
        "join as a worker and run code in this process (default: tls:// is required there).",
    )

    def cluster_config(self, *, jobs_given: bool) -> ClusterConfig | None:
        """The checked configuration, or None without ``--cluster``."""
        config = config_from_flags(
            self.cluster,
            self.cluster_tls_ca,
            self.cluster_tls_cert,
            self.cluster_tls_key,
            self.allow_mixed_workers,
            jobs_given,
            insecure=self.cluster_insecure,
        )
        if config is not None:
            warn_insecure(config.address, config.insecure)
        return config


def warn_insecure(address: str | None, insecure: bool) -> None:
    """The one warning line when ``--cluster-insecure`` is what lets ``address`` in."""
    if address and insecure and needs_insecure(address):
        click.echo(f"repomin: warning: {insecure_warning(address)}", err=True)


def cluster_options(fn: F) -> F:
    """``fn`` with the ``--cluster`` options as plain click parameters (``replay``).
    ``--cluster-insecure`` is taken here, not passed to ``fn``: it is in effect while ``fn``
    runs (:func:`repomin.cluster.wiring.insecure_flag`), and its warning is printed first."""

    @functools.wraps(fn)
    def wrapper(*args: Any, cluster_insecure: bool = False, **kwargs: Any) -> Any:
        with insecure_flag(cluster_insecure):
            config = None
            with contextlib.suppress(Exception):  # fn reports bad flags itself
                config = config_from_flags(
                    kwargs.get("cluster"),
                    kwargs.get("cluster_tls_ca"),
                    kwargs.get("cluster_tls_cert"),
                    kwargs.get("cluster_tls_key"),
                    bool(kwargs.get("allow_mixed_workers")),
                    True,
                )
            if config is not None:
                warn_insecure(config.address, config.insecure)
            return fn(*args, **kwargs)

    return click_parameters(ClusterArgs, cast(F, wrapper))


__all__ = ["ClusterArgs", "cluster_options"]
