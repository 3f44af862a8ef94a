"""Start-up errors, concurrency, engine failures, interruption and cleanup of the Docker runner."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from docker.errors import APIError, NotFound

from repomin.errors import InfrastructureError, UsageError
from repomin.runners.base import Outcome
from repomin.runners.docker import DockerRunner, reap_stale
from tests.docker._support import BUSYBOX, leftovers, new_label, run

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]


def labelled(client: Any, label: str) -> list[str]:
    """Everything with this session label, whoever owns it."""
    found = [
        c["Id"][:12]
        for c in client.api.containers(all=True, filters={"label": f"io.repomin.session={label}"})
    ]
    volumes = client.api.volumes(filters={"label": f"io.repomin.session={label}"}).get("Volumes")
    return found + [v["Name"] for v in volumes or []]


def test_a_missing_image_is_a_usage_error_naming_it(client: Any) -> None:
    with pytest.raises(UsageError, match=r"repomin-test/no-such-image:0.*build-test-images"):
        DockerRunner(image="repomin-test/no-such-image:0", session_label=new_label(), client=client)


def test_an_unreachable_engine_is_an_infrastructure_error() -> None:
    from docker.client import DockerClient

    dead = DockerClient(base_url="unix:///nonexistent/docker.sock", version="1.41", timeout=2)
    with pytest.raises(InfrastructureError, match="cannot reach the Docker engine"):
        DockerRunner(image=BUSYBOX, session_label=new_label(), client=dead)
    dead.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"network": "host"}, "--network 'host'"),
        ({"user": "0"}, "root"),
        ({"user": "nobody"}, "numeric"),
        ({"memory": "lots"}, "--memory 'lots'"),
        ({"pids_limit": 3}, "--pids-limit 3"),
        ({"cpus": 1000.0}, "rejected the container settings"),
    ],
)
def test_bad_settings_are_usage_errors(client: Any, kwargs: dict[str, Any], message: str) -> None:
    label = new_label()
    with pytest.raises(UsageError, match=message):
        DockerRunner(image=BUSYBOX, session_label=label, client=client, **kwargs)
    assert labelled(client, label) == []


def test_bridge_network_and_cpu_limit_are_applied(make_runner: Any) -> None:
    try:
        runner = make_runner(network="bridge", cpus=0.5)
    except InfrastructureError as exc:
        pytest.skip(f"this engine has no bridge network: {exc}")
    assert runner.describe()["docker_network"] == "bridge"
    assert runner.describe()["docker_cpus"] == 0.5
    outcome = run(
        runner,
        "ls /sys/class/net | tr '\\n' ' '; echo; "
        "cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us",
    )
    interfaces, quota = outcome.stdout.decode().splitlines()
    assert "eth0" in interfaces.split()
    assert quota.split()[0] == "50000"


def test_two_jobs_run_concurrently_in_two_containers(make_runner: Any) -> None:
    runner = make_runner(jobs=2)
    outcomes: list[Outcome] = []
    lock = threading.Lock()

    def one() -> None:
        # /proc/uptime is one clock for all containers: it shows whether samples overlapped.
        outcome = run(runner, "cut -d' ' -f1 /proc/uptime; sleep 0.5; cut -d' ' -f1 /proc/uptime")
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(o.exit_code == 0 for o in outcomes), outcomes
    assert len({o.extra["docker_container"] for o in outcomes}) == 2
    spans = [tuple(float(x) for x in o.stdout.split()) for o in outcomes]
    overlapping = sum(1 for a in spans for b in spans if a is not b and a[0] < b[1] and b[0] < a[1])
    assert overlapping >= 2  # at least one pair ran at the same time


def test_close_removes_everything_and_is_idempotent(client: Any) -> None:
    label = new_label()
    runner = DockerRunner(image=BUSYBOX, session_label=label, client=client, jobs=2)
    # the second sample starts while the first holds its container (not by timing alone: a
    # loaded machine could finish the first before the second thread starts), so two exist
    first = threading.Thread(target=run, args=(runner, "sleep 3"))
    first.start()
    deadline = time.monotonic() + 60
    running = {"label": f"io.repomin.session={label}", "status": "running"}
    while not client.api.containers(filters=running) and time.monotonic() < deadline:
        time.sleep(0.05)
    second = threading.Thread(target=run, args=(runner, "sleep 0.3"))
    second.start()
    for thread in (first, second):
        thread.join()
    assert len(labelled(client, label)) == 2
    scratch = runner._scratch.path
    assert scratch.exists()
    runner.close()
    runner.close()
    assert labelled(client, label) == []
    assert not scratch.exists()
    assert run(runner, "true").infrastructure_error == "the runner is closed"


def test_close_waits_for_a_container_the_engine_is_still_removing(client: Any) -> None:
    """A killed worker is auto-removed by the engine while ``close`` asks for the same; the
    loser gets 409 at once. Here the engine's removal takes 0.5 s: ``close`` must not return
    (and the process exit) before the container is gone."""
    label = new_label()
    runner = DockerRunner(image=BUSYBOX, session_label=label, client=client)
    run(runner, "true")
    slot = runner._all_slots[0]
    if slot.worker is None:  # the run's worker was recycled (an engine error in a busy suite)
        slot.worker = runner._start_worker()
    cid = slot.worker.cid
    real, removed = runner.api, threading.Event()

    class Removing:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def remove_container(self, container: str, **kwargs: Any) -> None:
            if container == cid and not removed.is_set():
                raise APIError("409 Conflict: removal of container is already in progress")
            real.remove_container(container, **kwargs)

    vanished = threading.Event()

    def engine_removes() -> None:
        time.sleep(0.5)
        try:
            real.remove_container(cid, force=True, v=True)
        except NotFound:  # the engine removed it first on its own (its worker had exited)
            vanished.set()
        removed.set()

    runner.api = runner.engine.api = Removing()
    remover = threading.Thread(target=engine_removes)
    remover.start()
    runner.close()
    waited = removed.is_set()
    assert labelled(client, label) == []  # close returned only once nothing was left
    remover.join()
    assert waited or vanished.is_set()


def test_a_worker_removed_behind_its_back_is_replaced(make_runner: Any) -> None:
    runner = make_runner()
    first = run(runner, "echo one")
    worker = runner._all_slots[0].worker
    if worker is None:  # the run's worker was judged unhealthy and recycled: start another
        first = run(runner, "echo one")
        worker = runner._all_slots[0].worker
    assert worker is not None, "no worker kept between samples: nothing to remove behind its back"
    with contextlib.suppress(NotFound):  # gone already: removed behind its back all the same
        runner.api.remove_container(worker.cid, force=True)
    second = run(runner, "echo two")
    assert second.exit_code == 0 and second.stdout == b"two\n"
    assert second.infrastructure_error is None
    assert second.extra["docker_container"] != first.extra["docker_container"]


@pytest.mark.parametrize("strategy", ["agent", "exec"])
def test_engine_errors_are_retried_then_reported_never_a_verdict(
    make_runner: Any, monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    runner = make_runner(strategy=strategy)
    calls = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        raise APIError("injected engine failure")

    if strategy == "agent":
        # No engine call per sample: the failure is in starting the worker for each attempt.
        runner._recycle(runner._all_slots[0])
        monkeypatch.setattr(runner.api, "create_container", broken)
    else:
        monkeypatch.setattr(runner.api, "exec_create", broken)
    outcome = run(runner, "true")
    assert outcome.exit_code is None
    assert outcome.infrastructure_error is not None
    assert "injected engine failure" in outcome.infrastructure_error
    assert len(calls) == 3  # one attempt and two retries, each on a fresh worker
    monkeypatch.undo()
    assert run(runner, "echo back").stdout == b"back\n"


def test_kill_all_stops_running_samples_without_retrying(make_runner: Any) -> None:
    runner = make_runner()
    result: list[Outcome] = []
    thread = threading.Thread(target=lambda: result.append(run(runner, "sleep 30", timeout=60)))
    started = time.monotonic()
    thread.start()
    time.sleep(0.5)
    runner.kill_all()
    thread.join(10)
    assert not thread.is_alive()
    assert time.monotonic() - started < 5
    assert result[0].exit_code is None
    assert result[0].infrastructure_error == "interrupted"
    assert run(runner, "echo next").stdout == b"next\n"


def test_reap_stale_removes_what_dead_sessions_left(client: Any) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    label = new_label()
    host = socket.gethostname()
    stale = {
        "io.repomin.session": label,
        "io.repomin.host": host,
        "io.repomin.pid": str(dead.pid),
    }
    alive = {**stale, "io.repomin.pid": str(os.getpid())}
    elsewhere = {**stale, "io.repomin.host": "another-machine"}
    ids = [
        client.api.create_container(BUSYBOX, command=["true"], labels=labels)["Id"]
        for labels in (stale, alive, elsewhere)
    ]
    volume = client.api.create_volume(labels=stale)["Name"]
    try:
        reap_stale(client)
        remaining = set(labelled(client, label))
        assert ids[0][:12] not in remaining
        assert volume not in remaining
        assert {ids[1][:12], ids[2][:12]} <= remaining
    finally:
        for cid in ids:
            with contextlib.suppress(APIError):
                client.api.remove_container(cid, force=True)
    assert labelled(client, label) == []


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


CHILD = textwrap.dedent(
    """
    import atexit, sys, threading
    from repomin.runners.base import RunRequest
    from repomin.runners.docker import DockerRunner
    from repomin.tree import Entry, Tree

    # Registered first, so it runs after the runner's own atexit hook (LIFO).
    atexit.register(lambda: print("after close:", runner._scratch.path.exists(), flush=True))
    runner = DockerRunner(image=sys.argv[1], session_label=sys.argv[2], jobs=2)
    tree = Tree.of({"f": Entry("file", b"x")})
    for _ in range(2):
        threading.Thread(
            target=runner.run, args=(tree, RunRequest("sleep 60", {}, 120)), daemon=True
        ).start()
    print(runner._scratch.path, flush=True)
    threading.Event().wait()
    """
)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_nothing_survives_a_killed_or_interrupted_client(client: Any, signum: int) -> None:
    label = new_label()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, BUSYBOX, label],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        text=True,
        # An ignored SIGINT is inherited across exec, and Python then never raises
        # KeyboardInterrupt: in a full parallel run the test worker's disposition leaked into
        # the child (it hung 90 s after SIGINT). The child gets the default, as from a shell.
        preexec_fn=_default_sigint,
    )
    try:
        assert child.stdout is not None
        scratch = Path(child.stdout.readline().strip())
        deadline = time.monotonic() + 10
        while len(labelled(client, label)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(labelled(client, label)) == 2
        time.sleep(0.3)  # let both samples start
        child.send_signal(signum)
        child.wait(10)
        rest = child.stdout.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    # SIGKILL, SIGTERM (default action): the keep-alives see their stdin close and the engine
    # removes the containers. SIGINT: KeyboardInterrupt, then the atexit hook closes the runner.
    deadline = time.monotonic() + 10
    while labelled(client, label) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert labelled(client, label) == []
    if signum == signal.SIGINT:
        assert rest == "after close: False\n"
    else:
        assert rest == ""  # nothing ran in the client: the next start-up reaps the rest
        reap_stale(client)
    assert not scratch.exists()
    assert leftovers(label) == []
