"""Reaching the scheduler: address checks, TLS material, the one-line connection error, and
the digest the report records instead of the address."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from repomin.errors import UsageError


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


def check_address(address: str, security: ClusterSecurity | None) -> None:
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
    if scheme == "tls" and not tls:
        raise UsageError(f"--cluster {address} needs --cluster-tls-ca/--cluster-tls-cert/-key")


def connect(address: str, security: ClusterSecurity | None, timeout: float) -> Any:
    """A Dask client, or a one-line usage error naming the address and how to check it."""
    from distributed import Client

    check_address(address, security)
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    try:
        return Client(  # type: ignore[no-untyped-call]
            address,
            timeout=timeout,
            security=security.to_dask() if security and security.enabled else None,
            set_as_default=False,
        )
    except Exception as exc:
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise UsageError(
            f"cannot reach the Dask scheduler at {address} ({reason}); check that `dask "
            f"scheduler` runs there and this machine can connect (e.g. `dask worker {address}`)"
        ) from None
