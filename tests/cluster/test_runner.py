"""The cluster runner against real local Dask clusters (scheduler + workers as processes)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from repomin.cluster.runner import ClusterRunner
from repomin.errors import InfrastructureError, UsageError
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree

from ._support import LocalCluster

pytestmark = pytest.mark.cluster

HOST = {"backend": "host"}


def _tree(n: int = 40) -> Tree:
    return Tree.of(
        {
            f"pkg/m{i}.txt": Entry("file", f"module {i}\n".encode() * 20, mtime_ns=10**18)
            for i in range(n)
        }
        | {"run.sh": Entry("file", b"ls pkg | wc -l\nstat -c %Y pkg/m1.txt\nexit 7\n", 0o755)}
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("dask"), workers=2)
    yield c
    c.stop()


def test_samples_match_the_host_runner_and_deletions_ship_no_content(
    cluster: LocalCluster,
) -> None:
    tree = _tree()
    request = RunRequest("sh run.sh", {"X": "1"}, 20.0, "t")
    local = HostRunner().run(tree, request)
    runner = ClusterRunner(cluster.address, HOST)
    try:
        assert runner.threads == 2 and runner.workers == 2
        first = runner.run(tree, request)
        assert (
            (first.exit_code, first.stdout)
            == (local.exit_code, local.stdout)
            == (7, b"40\n1000000000\n")
        )
        blob_bytes = runner.blob_bytes_shipped
        assert blob_bytes == sum(e.size for e in tree.entries.values())
        smaller = tree
        for k in range(6):  # both workers get the tree; then deletions only
            smaller = smaller.without([f"pkg/m{k}.txt"])
            out = runner.run(smaller, request)
            assert out.exit_code == 7 and out.stdout.startswith(f"{39 - k}\n".encode())
        # The second worker was sent the tree once; no deletion shipped any content.
        assert runner.blob_bytes_shipped <= 2 * blob_bytes
        before = runner.bytes_shipped
        runner.run(smaller.without(["pkg/m30.txt"]), request)
        runner.run(smaller.without(["pkg/m31.txt"]), request)
        assert runner.bytes_shipped - before < 2 * 2048
        edited = smaller.replace("pkg/m39.txt", b"edited\n")
        blobs = runner.blob_bytes_shipped
        runner.run(edited, request)
        assert runner.blob_bytes_shipped - blobs <= 2 * len(b"edited\n")
        d = runner.describe()
        assert d["backend"] == "host" and d["dispatch_engine"] == "dask"
        assert d["cluster_workers"] == 2 and cluster.address not in str(d)
        assert d["cluster_bytes_per_sample"] == round(runner.bytes_shipped / runner.samples, 1)
    finally:
        runner.close()


def test_concurrent_samples_are_placed_on_idle_workers_that_hold_the_tree(
    cluster: LocalCluster,
) -> None:
    """Each sample is pinned to a worker chosen by the runner (the least busy, then the one
    holding most of the tree), so concurrent samples never queue on one worker while another
    idles, and a worker that holds the tree gets deltas it can apply (no ``need`` round)."""
    runner = ClusterRunner(cluster.address, HOST)
    pinned: list[str | None] = []
    submit = runner._submit

    def spy(payload: bytes, pin: str | None, request: RunRequest) -> object:
        pinned.append(pin)
        return submit(payload, pin, request)

    runner._submit = spy  # type: ignore[assignment,method-assign]
    request = RunRequest("sleep 0.6; ls pkg | wc -l", {}, 20.0, "p")
    tree = _tree(12)
    try:
        for rounds in range(3):
            trees = [tree.without([f"pkg/m{2 * rounds + k}.txt"]) for k in range(2)]
            outs: list[Outcome] = []
            threads = [
                threading.Thread(target=lambda t=t, o=outs: o.append(runner.run(t, request)))
                for t in trees
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert sorted(o.stdout for o in outs) == [b"11\n", b"11\n"]
            round_pins = pinned[-2:]
            assert None not in round_pins and len(set(round_pins)) == 2, pinned
        assert runner.need_rounds == 0
        assert runner.samples == 6
    finally:
        runner.close()


def test_unreachable_scheduler_is_a_usage_error() -> None:
    with pytest.raises(
        UsageError,
        match=r"cannot reach the Dask scheduler at tcp://127\.0\.0"
        r"\.1:9 .*dask scheduler",
    ):
        ClusterRunner("tcp://127.0.0.1:9", HOST, connect_timeout=2)
    with pytest.raises(UsageError, match="must be tcp://HOST:PORT"):
        ClusterRunner("http://x:1", HOST)


def _in_thread(runner: ClusterRunner, tree: Tree, request: RunRequest) -> dict[str, object]:
    box: dict[str, object] = {}

    def go() -> None:
        try:
            box["outcome"] = runner.run(tree, request)
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=go)
    t.start()
    box["thread"] = t
    return box


def _running_worker(runner: ClusterRunner, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = [w for w, keys in runner._client.processing().items() if keys]
        if busy:
            info = runner._client.scheduler_info(n_workers=-1)["workers"]
            return str(info[busy[0]]["name"])
        time.sleep(0.05)
    raise AssertionError("no worker started the sample")


def test_a_worker_killed_mid_sample_costs_nothing(tmp_path: Path) -> None:
    c = LocalCluster(tmp_path / "c", workers=2)
    try:
        runner = ClusterRunner(c.address, HOST)
        marks = tmp_path / "marks"
        marks.mkdir()
        request = RunRequest(f"mktemp -p {marks} >/dev/null; sleep 1.5; echo done", {}, 30, "k")
        box = _in_thread(runner, _tree(5), request)
        victim = _running_worker(runner)
        time.sleep(0.3)
        c.kill_worker(c.worker_named(victim))
        thread = box["thread"]
        assert isinstance(thread, threading.Thread)
        thread.join(60)
        outcome = box.get("outcome")
        assert isinstance(outcome, Outcome), box
        assert (outcome.exit_code, outcome.stdout, outcome.infrastructure_error) == (
            0,
            b"done\n",
            None,
        )
        assert runner.samples == 1
        assert len(list(marks.iterdir())) == 2  # the lost attempt ran, and counts nowhere
        runner.close()
    finally:
        c.stop()


def test_a_lost_scheduler_is_an_infrastructure_error(tmp_path: Path) -> None:
    c = LocalCluster(tmp_path / "c", workers=1)
    try:
        runner = ClusterRunner(c.address, HOST)
        box = _in_thread(runner, _tree(3), RunRequest("sleep 5", {}, 30, "s"))
        _running_worker(runner)
        c.kill_scheduler()
        thread = box["thread"]
        assert isinstance(thread, threading.Thread)
        thread.join(90)
        assert isinstance(box.get("error"), InfrastructureError), box
        assert "lost the Dask scheduler" in str(box["error"])
        assert "--resume" in str(box["error"])
        runner.close()
    finally:
        c.stop()


def test_workers_with_another_environment_are_refused_unless_allowed(tmp_path: Path) -> None:
    c = LocalCluster(tmp_path / "c", workers=1)
    try:
        # Without bwrap on its PATH the second worker's samples run under the supervisor.
        c.add_worker(env={"PATH": "/nonexistent"})
        c.wait_workers(2)
        if HostRunner().isolation != "namespace":
            pytest.skip("bwrap cannot make namespaces here; both workers would agree")
        with pytest.raises(
            UsageError,
            match=r"differ from the first worker.*sample_isolation"
            r".*--allow-mixed-workers",
        ):
            ClusterRunner(c.address, HOST)
        runner = ClusterRunner(c.address, HOST, allow_mixed_workers=True)
        try:
            assert runner.describe()["cluster_mixed_workers_allowed"] is True
            assert runner.describe()["cluster_environments"] == 2
        finally:
            runner.close()
        # A worker whose runner cannot start is drained: samples go to the other one.
        runner = ClusterRunner(c.address, {"backend": "host", "isolation": "namespace"})
        try:
            assert list(runner.drained) == [
                w
                for w, i in runner._client.scheduler_info(n_workers=-1)["workers"].items()
                if i["name"] == "w1"
            ]
            for k in range(4):
                out = runner.run(_tree(3), RunRequest(f"exit {k}", {}, 20, "d"))
                assert out.exit_code == k
        finally:
            runner.close()
    finally:
        c.stop()


def test_the_traced_run_comes_back_in_band(
    cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repomin.analysis import trace

    def no_local_sink(*a: object, **k: object) -> str:
        raise AssertionError("a cluster trace must not use a sink on this machine")

    monkeypatch.setattr(trace, "make_sink", no_local_sink)
    runner = ClusterRunner(cluster.address, HOST)
    try:
        result = trace.trace_opened_files(runner, _tree(4), "cat pkg/m1.txt >/dev/null", {}, 20)
    finally:
        runner.close()
    if result.method == "unavailable":  # no strace, no atime probe here: nothing to check
        pytest.skip(f"no tracing method on this machine: {result.reason}")
    assert result.opened is not None, result
    assert "pkg/m1.txt" in result.opened and "pkg/m2.txt" not in result.opened
