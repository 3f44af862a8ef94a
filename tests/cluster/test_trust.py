"""Who is trusted on a Dask cluster, against real local clusters.

- A rogue worker (started with a ``--preload`` that tampers with what it sends back) must not
  run code in the client: answers cross as plain data and the client refuses pickled results.
- A plain ``tcp://`` scheduler off this machine needs TLS or ``--cluster-insecure``.
- SIGKILL of a ``repomin reduce --cluster`` process: its samples on the workers die soon and
  its worker plugin is unregistered.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from repomin.cluster.runner import ClusterRunner
from repomin.errors import UsageError
from repomin.runners.base import RunRequest
from repomin.tree import Entry, Tree
from tests.conftest import reduce_argv

from ._support import SRC, LocalCluster

pytestmark = pytest.mark.cluster

HOST = {"backend": "host"}

#: The rogue worker's preload. ``wrap``: every task result is replaced by an object whose
#: unpickling runs a shell command (appending the PID of the process that unpickled it to the
#: marker file: the worker itself unpickles exceptions it sends) and then yields the real
#: result, and the worker sends results pickled whatever the client asks for (the review's
#: attack: the reduction would finish normally). ``raise``, ``probe``, ``setup``: ReproMin's
#: sample task, its start-up probe or its plugin's setup raises an exception whose unpickling
#: runs the command.
ROGUE = """
import os
import pickle

MARK = os.environ["REPOMIN_TEST_MARK"]
MODE = os.environ["REPOMIN_TEST_MODE"]
COMMAND = f"echo $PPID >> {MARK}"


class Evil:
    def __init__(self, value):
        self.value = value

    def __reduce__(self):
        code = "(__import__('os').system(%r), __import__('pickle').loads(%r))[1]" % (
            COMMAND,
            pickle.dumps(self.value),
        )
        return (eval, (code,))


class EvilError(Exception):
    def __reduce__(self):
        return (eval, ("(__import__('os').system(%r), RuntimeError('x'))[1]" % COMMAND,))


def dask_setup(worker):
    if MODE == "wrap":
        from distributed.diagnostics.plugin import WorkerPlugin

        class Wrap(WorkerPlugin):
            def transition(self, key, start, finish, **kw):
                if finish == "memory" and key in worker.data:
                    value = worker.data[key]
                    if not isinstance(value, Evil):
                        worker.data[key] = Evil(value)

        worker.plugins["rogue-wrap"] = Wrap()
        get_data = worker.handlers["get_data"]

        async def pickled_get_data(comm, keys=(), who=None, serializers=None):
            return await get_data(comm, keys=keys, who=who, serializers=("pickle",))

        worker.handlers["get_data"] = pickled_get_data
    else:
        import repomin.cluster.worker as service

        def rogue(*args, **kwargs):
            raise EvilError("rogue")

        if MODE == "raise":
            service.run_sample = rogue
        elif MODE == "probe":
            service.probe_here = rogue
        elif MODE == "setup":
            service.SampleService.setup = rogue
"""


def _tree(k: int) -> Tree:
    return Tree.of(
        {
            "run.sh": Entry("file", b"exit $1\n", 0o755),
            f"f{k}.txt": Entry("file", f"sample {k}\n".encode()),
        }
    )


def _worker_named(runner: ClusterRunner, name: str) -> str:
    info = runner._client.scheduler_info(n_workers=-1)["workers"]
    return next(w for w, i in info.items() if i["name"] == name)


REASONS = {
    "wrap": "not plain data",
    "raise": "task failed",
    "probe": "probe failed",
    "setup": "setup did not complete",
}


@pytest.mark.parametrize("mode", sorted(REASONS))
def test_a_rogue_worker_cannot_run_code_in_the_client(tmp_path: Path, mode: str) -> None:
    mark = tmp_path / "pwned"
    preload = tmp_path / "rogue_preload.py"
    preload.write_text(ROGUE)
    c = LocalCluster(tmp_path / "c", workers=1)
    try:
        c.add_worker(
            env={"REPOMIN_TEST_MARK": str(mark), "REPOMIN_TEST_MODE": mode},
            args=("--preload", str(preload)),
        )
        c.wait_workers(2)
        runner = ClusterRunner(c.address, HOST)
        try:
            rogue = _worker_named(runner, "w1")
            # Two at a time: placement gives each worker one (sequential samples would all go
            # to the worker that already holds the tree).
            with ThreadPoolExecutor(2) as pool:
                outcomes = list(
                    pool.map(
                        lambda k: runner.run(
                            _tree(k), RunRequest(f"sh run.sh {k % 4}", {}, 20, "t")
                        ),
                        range(10),
                    )
                )
            drained = runner.drained
        finally:
            runner.close()
        time.sleep(0.5)
        ran_in = mark.read_text().split() if mark.exists() else []
        assert str(os.getpid()) not in ran_in, f"the rogue worker ran code in the client ({mode})"
        # Every sample either ran on the honest worker or is an infrastructure error (never
        # evidence); the rogue worker was drained, with the reason.
        for k, out in enumerate(outcomes):
            assert out.exit_code == k % 4 or out.infrastructure_error, out
        assert sum(o.infrastructure_error is None for o in outcomes) >= 6
        assert rogue in drained, drained
        assert REASONS[mode] in drained[rogue], drained
    finally:
        c.stop()


# -- who may be a member: TLS or an explicit --cluster-insecure --------------------------------


def _local_ipv4() -> str | None:
    """An address of this machine that is not loopback (None when there is none)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # UDP: nothing is sent
        ip = str(s.getsockname()[0])
        if not ipaddress.ip_address(ip).is_loopback:
            return ip
    return None


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": SRC}
    full.pop("REPOMIN_CLUSTER", None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "repomin", *argv],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _repo(tmp_path: Path) -> Path:
    src = tmp_path / "repo"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    return src


@pytest.mark.parametrize("via_env", [False, True])
def test_a_remote_tcp_scheduler_needs_tls_or_cluster_insecure(
    tmp_path: Path, via_env: bool
) -> None:
    src = _repo(tmp_path)
    address = "tcp://192.0.2.1:8786"  # TEST-NET: never contacted, refused before connecting
    extra = () if via_env else ("--cluster", address)
    env = {"REPOMIN_CLUSTER": address} if via_env else None
    started = time.monotonic()
    done = _cli(*reduce_argv(src, tmp_path / "out", "false", "x", *extra)[3:], env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert address in lines[0]
    assert "--cluster-tls-ca" in lines[0] and "--cluster-insecure" in lines[0]
    assert time.monotonic() - started < 60
    assert not (tmp_path / "out").exists()


def test_the_insecure_flag_warns_once_and_connects(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    with socket.socket() as s:  # a closed port on this machine's loopback: fails at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = _cli(
        *reduce_argv(src, tmp_path / "out", "false", "x")[3:],
        "--cluster",
        f"tcp://127.0.0.1:{port}",
        "--cluster-insecure",
    )
    # On loopback the flag is moot: no warning, only the connection error.
    assert done.returncode == 2 and "warning" not in done.stderr, done.stderr
    ip = _local_ipv4()
    if ip is None:
        pytest.skip("this machine has no address besides loopback")
    done = _cli(
        *reduce_argv(src, tmp_path / "out", "false", "x")[3:],
        "--cluster",
        f"tcp://{ip}:{port}",
        "--cluster-insecure",
    )
    lines = done.stderr.strip().splitlines()
    warnings = [ln for ln in lines if "warning" in ln]
    assert len(warnings) == 1, lines
    assert "--cluster-insecure" in warnings[0]
    assert "join as a worker" in warnings[0] and "run code in this process" in warnings[0]
    # The flag let it try to connect (nothing listens there): exit 2, "cannot reach".
    assert done.returncode == 2 and "cannot reach the Dask scheduler" in lines[-1], lines


def test_a_non_loopback_cluster_runs_only_when_insecure_is_explicit(tmp_path: Path) -> None:
    ip = _local_ipv4()
    if ip is None:
        pytest.skip("this machine has no address besides loopback")
    c = LocalCluster(tmp_path / "c", workers=1, host=ip)
    try:
        with pytest.raises(UsageError, match=r"--cluster-tls-ca.*--cluster-insecure"):
            ClusterRunner(c.address, HOST)
        runner = ClusterRunner(c.address, HOST, insecure=True)
        try:
            out = runner.run(_tree(3), RunRequest("sh run.sh 3", {}, 20, "i"))
            assert out.exit_code == 3, out
        finally:
            runner.close()
    finally:
        c.stop()


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(root: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA and a certificate it signed: (CA, certificate, key) in ``root / name``."""
    d = root / name
    d.mkdir()
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", f"/CN={name}-ca", cwd=d,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "member.key", "-out", "member.csr",
        "-subj", f"/CN={name}-member", cwd=d,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", "member.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "member.pem", "-days", "2", cwd=d,
    )  # fmt: skip
    return d / "ca.pem", d / "member.pem", d / "member.key"


def test_over_tls_only_holders_of_a_certificate_from_the_ca_join(tmp_path: Path) -> None:
    """Dask's TLS is mutual: a worker whose certificate another CA signed cannot join, and the
    client reaches the scheduler only with its own certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (it makes the test certificates)")
    from repomin.cluster.connect import ClusterSecurity

    ca, cert, key = _certificates(tmp_path, "cluster")
    _, s_cert, s_key = _certificates(tmp_path, "stranger")
    c = LocalCluster(tmp_path / "c", workers=1, tls=(ca, cert, key))
    try:
        assert c.address.startswith("tls://")
        stranger = c.add_worker(
            tls=False,
            args=("--tls-ca-file", str(ca), "--tls-cert", str(s_cert), "--tls-key", str(s_key)),
        )
        with pytest.raises(UsageError, match="--cluster-tls-ca and --cluster-tls-cert"):
            ClusterRunner(c.address, HOST)
        runner = ClusterRunner(
            c.address, HOST, security=ClusterSecurity(str(ca), str(cert), str(key))
        )
        try:
            out = runner.run(_tree(5), RunRequest("sh run.sh 1", {}, 20, "tls"))
            assert out.exit_code == 1, out
            time.sleep(3)  # the stranger has had time to try
            info = runner._client.scheduler_info(n_workers=-1)["workers"]
            assert [i["name"] for i in info.values()] == ["w0"]
            # (by name: "w1" can occur inside other fields of the scheduler's record)
            assert stranger.poll() is not None or all(i["name"] != "w1" for i in info.values())
        finally:
            runner.close()
        with pytest.raises(UsageError, match="cannot reach the Dask scheduler"):
            ClusterRunner(
                c.address, HOST, security=ClusterSecurity(str(ca), str(s_cert), str(s_key)),
                connect_timeout=5,
            )  # fmt: skip
    finally:
        c.stop()


def test_address_rules() -> None:
    from repomin.cluster.wiring import config_from_flags

    for loopback in ("tcp://127.0.0.1:1", "127.3.2.1:8786", "tcp://localhost:1", "tcp://[::1]:1"):
        config = config_from_flags(loopback, None, None, None, False, False)
        assert config is not None and not config.insecure
    for remote in ("tcp://10.0.0.5:8786", "scheduler.example:8786", "tcp://0.0.0.0:1"):
        with pytest.raises(UsageError, match="--cluster-insecure"):
            config_from_flags(remote, None, None, None, False, False)
        config = config_from_flags(remote, None, None, None, False, False, insecure=True)
        assert config is not None and config.insecure
    with pytest.raises(UsageError, match="need --cluster ADDRESS"):
        config_from_flags(None, None, None, None, False, False, insecure=True)


def test_tls_needs_a_client_certificate(tmp_path: Path) -> None:
    from repomin.cluster.wiring import config_from_flags

    ca, cert = tmp_path / "ca.pem", tmp_path / "cert.pem"
    ca.write_text("x")
    cert.write_text("x")
    with pytest.raises(UsageError, match="--cluster-tls-cert"):
        config_from_flags("tls://10.0.0.5:1", ca, None, None, False, False)
    with pytest.raises(UsageError, match="--cluster-tls-ca"):
        config_from_flags("tls://10.0.0.5:1", None, cert, None, False, False)
    assert config_from_flags("tls://10.0.0.5:1", ca, cert, None, False, False) is not None


# -- SIGKILL of the client -----------------------------------------------------------------------


def _sleepers(token: str) -> list[int]:
    """PIDs of this machine's processes running ``sleep TOKEN``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", token.encode()] or argv[:2] == [b"/bin/sleep", token.encode()]:
            found.append(int(entry.name))
    return found


def _until(check: Callable[[], bool], timeout: float) -> float | None:
    """Seconds until ``check()`` held (None when it did not within ``timeout``)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.1)
    return None


def _repomin_plugins(address: str) -> tuple[list[str], list[str]]:
    """(worker plugins the scheduler holds, plugins registered on the workers) of ReproMin."""
    from distributed import Client

    def on_scheduler(dask_scheduler: object) -> list[str]:
        return [n for n in dask_scheduler.worker_plugins if n.startswith("repomin-")]  # type: ignore[attr-defined]

    def on_worker(dask_worker: object) -> list[str]:
        return [n for n in dask_worker.plugins if n.startswith("repomin-")]  # type: ignore[attr-defined]

    with Client(address, timeout=30, set_as_default=False) as client:
        held = client.run_on_scheduler(on_scheduler)
        on_workers = [n for names in client.run(on_worker).values() for n in names]
    return list(held), on_workers


@pytest.mark.slow
def test_sigkill_of_reduce_kills_its_samples_and_unregisters_its_plugin(tmp_path: Path) -> None:
    token = _sleep_token()
    src = _repo(tmp_path)
    c = LocalCluster(tmp_path / "c", workers=1)
    proc: subprocess.Popen[bytes] | None = None
    try:
        argv = reduce_argv(
            src, tmp_path / "out", f"sleep {token}; echo BUG; exit 1", "BUG",
            "--cluster", c.address, "--no-trace", "--timeout", "3000", "--jobs", "1", "-q",
        )  # fmt: skip
        env = {**os.environ, "PYTHONPATH": SRC}
        env.pop("REPOMIN_CLUSTER", None)
        log = tmp_path / "reduce.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
            )
        started = _until(lambda: bool(_sleepers(token)) or proc.poll() is not None, 120)
        assert started is not None and proc.poll() is None, log.read_text()
        held, on_workers = _repomin_plugins(c.address)
        assert len(held) == 1 and on_workers == held
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        gone = _until(lambda: not _sleepers(token), 30)
        assert gone is not None, "the sample outlived its client by more than 30 s"
        assert gone < 15, f"the sample outlived its client by {gone:.1f} s"
        unregistered = _until(lambda: _repomin_plugins(c.address) == ([], []), 30)
        assert unregistered is not None, _repomin_plugins(c.address)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in _sleepers(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        c.stop()


def _sleep_token() -> str:
    return f"{random.randint(700, 999)}.{random.randint(10**6, 10**7 - 1)}"


def test_a_live_client_keeps_its_samples_and_kill_all_stops_them(tmp_path: Path) -> None:
    """The workers' watch leaves a connected client's samples alone (this one outlives several
    checks), and ``kill_all`` (Ctrl-C, SIGTERM) stops the samples running on the workers."""
    c = LocalCluster(tmp_path / "c", workers=1)
    try:
        runner = ClusterRunner(c.address, HOST)
        try:
            long = runner.run(_tree(1), RunRequest("sleep 5; echo alive", {}, 60, "l"))
            assert (long.exit_code, long.stdout) == (0, b"alive\n"), long
            token = _sleep_token()
            with ThreadPoolExecutor(1) as pool:
                pending = pool.submit(
                    runner.run, _tree(2), RunRequest(f"sleep {token}", {}, 3000, "k")
                )
                assert _until(lambda: bool(_sleepers(token)), 60) is not None
                runner.kill_all()
                assert _until(lambda: not _sleepers(token), 10) is not None
                pending.result(timeout=60)
        finally:
            runner.close()
    finally:
        c.stop()
