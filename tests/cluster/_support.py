"""A real local Dask cluster (``dask scheduler`` + ``dask worker`` processes on 127.0.0.1).

Tests that kill workers or the scheduler start their own with :class:`LocalCluster` (free
ports, private directories); the others use the shared one that ``.ci/run`` starts and exports
as ``REPOMIN_TEST_CLUSTER``. Worker processes import ReproMin from this checkout.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def dask_cli() -> list[str]:
    exe = Path(sys.executable).with_name("dask")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("dask")
    if found is None:
        pytest.skip("the `dask` command is not installed (pip install distributed)")
    return [found]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("REPOMIN_CLUSTER", None)
    return env


class LocalCluster:
    """A scheduler and ``workers`` single-threaded workers, stopped by :meth:`stop`.

    ``host``: the address they listen on. ``tls``: (CA, certificate, key) files: the scheduler
    speaks ``tls://`` and the workers join with that certificate."""

    def __init__(
        self,
        root: Path,
        workers: int = 2,
        nthreads: int = 1,
        host: str = "127.0.0.1",
        tls: tuple[Path, Path, Path] | None = None,
    ) -> None:
        self.root = root
        self.host = host
        self.tls = tls
        root.mkdir(parents=True, exist_ok=True)
        self.file = root / "scheduler.json"
        self.workers: list[subprocess.Popen[bytes]] = []
        with open(root / "scheduler.log", "wb") as log:
            self.scheduler = subprocess.Popen(
                [
                    *dask_cli(),
                    "scheduler",
                    "--host",
                    host,
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(self.file),
                    *self._tls_args(),
                ],
                env=_env(),
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        self.address = self._wait_address()
        for _ in range(workers):
            self.add_worker(nthreads)
        if workers:
            self.wait_workers(workers)

    def _wait_address(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.file.exists():
                try:
                    return str(json.loads(self.file.read_text())["address"])
                except (ValueError, KeyError):
                    pass
            if self.scheduler.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        pytest.fail("the dask scheduler did not start; see " + str(self.root / "scheduler.log"))

    def _tls_args(self, protocol: bool = True) -> list[str]:
        if self.tls is None:
            return []
        ca, cert, key = self.tls
        files = ["--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key)]
        return [*files, "--protocol", "tls"] if protocol else files

    def security(self) -> object:
        """Dask's ``Security`` for a client of this cluster (None without TLS)."""
        if self.tls is None:
            return None
        from distributed import Security

        ca, cert, key = self.tls
        return Security(
            tls_ca_file=str(ca),
            tls_client_cert=str(cert),
            tls_client_key=str(key),
            require_encryption=True,
        )

    def add_worker(
        self,
        nthreads: int = 1,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
        tls: bool = True,
    ) -> subprocess.Popen[bytes]:
        """One more ``dask worker`` (``args``: extra options, e.g. ``--preload FILE``;
        ``tls``: with the cluster's certificate, if it has one)."""
        tls_args = self._tls_args(protocol=False) if tls else []
        n = len(self.workers)
        local = self.root / f"w{n}"
        local.mkdir(exist_ok=True)
        with open(local / "log", "wb") as log:
            proc = subprocess.Popen(
                [
                    *dask_cli(),
                    "worker",
                    self.address,
                    "--nthreads",
                    str(nthreads),
                    "--no-nanny",
                    "--no-dashboard",
                    "--host",
                    self.host,
                    "--local-directory",
                    str(local),
                    "--name",
                    f"w{n}",
                    *tls_args,
                    *args,
                ],
                env={**_env(), **(env or {})},
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        self.workers.append(proc)
        return proc

    def wait_workers(self, n: int, timeout: float = 60) -> None:
        from distributed import Client

        with Client(
            self.address, timeout=timeout, set_as_default=False, security=self.security()
        ) as client:
            client.wait_for_workers(n, timeout=timeout)

    def worker_named(self, name: str) -> subprocess.Popen[bytes]:
        return self.workers[int(name.removeprefix("w"))]

    def kill_worker(self, proc: subprocess.Popen[bytes]) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def kill_scheduler(self) -> None:
        os.killpg(self.scheduler.pid, signal.SIGKILL)
        self.scheduler.wait()

    def stop(self) -> None:
        # SIGKILL: a worker whose scheduler is gone lingers for a long time on SIGTERM.
        for proc in [*self.workers, self.scheduler]:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def shared_cluster() -> str:
    """The address of the CI cluster, or skip with the reason."""
    address = os.environ.get("REPOMIN_TEST_CLUSTER", "")
    if not address:
        pytest.skip("REPOMIN_TEST_CLUSTER is not set (.ci/run starts a local Dask cluster)")
    from distributed import Client

    try:
        with Client(address, timeout=5, set_as_default=False) as client:
            client.wait_for_workers(1, timeout=10)
    except Exception as exc:
        pytest.skip(f"no Dask cluster answers at {address}: {exc}")
    return address
