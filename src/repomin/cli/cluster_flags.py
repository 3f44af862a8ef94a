"""The ``--cluster`` flags, declared once: ``reduce`` inherits them as fields of its typed
record (:class:`ClusterArgs`), ``replay`` takes them as click options made from the same
fields (:func:`cluster_options`). What they mean -- the checked configuration and the runner
built from it -- is :mod:`repomin.cluster.wiring`'s."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from repomin.cli.typed import click_parameters, flag, opt
from repomin.cluster.wiring import ENV_VAR, ClusterConfig, config_from_flags

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

    def cluster_config(self, *, jobs_given: bool) -> ClusterConfig | None:
        """The checked configuration, or None without ``--cluster``."""
        return config_from_flags(
            self.cluster,
            self.cluster_tls_ca,
            self.cluster_tls_cert,
            self.cluster_tls_key,
            self.allow_mixed_workers,
            jobs_given,
        )


def cluster_options(fn: F) -> F:
    """``fn`` with the ``--cluster`` options as plain click parameters (``replay``)."""
    return click_parameters(ClusterArgs, fn)


__all__ = ["ClusterArgs", "cluster_options"]
