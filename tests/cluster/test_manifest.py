"""Content-addressed shipping without a cluster: manifests, deltas, the blob cache, the plain
wire format, and the worker service answering need/ok/refused (a fake runner stands in for the
host runner)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.cluster import manifest as mf
from repomin.cluster import wire
from repomin.cluster.env import PROTOCOL, describe_environment, differences, environment_digest
from repomin.cluster.worker import SampleService
from repomin.runners.base import Outcome, RunRequest
from repomin.tree import Entry, Tree

names = st.text(alphabet="abcxyz", min_size=1, max_size=3)
entries = st.one_of(
    st.builds(
        lambda d, m: Entry("file", d, m, mtime_ns=7),
        st.binary(max_size=20),
        st.sampled_from([0o644, 0o755]),
    ),
    st.builds(lambda t: Entry("symlink", t), st.binary(min_size=1, max_size=8)),
    st.just(Entry("dir", b"", 0o755)),
)
trees = st.dictionaries(
    st.lists(names, min_size=1, max_size=3).map("/".join), entries, max_size=12
).map(Tree.of)


@settings(max_examples=150, deadline=None)
@given(trees)
def test_manifest_digest_is_the_tree_digest(tree: Tree) -> None:
    assert mf.manifest_digest(mf.manifest_of(tree)) == tree.digest


@settings(max_examples=150, deadline=None)
@given(trees, trees)
def test_delta_rebuilds_the_target_from_any_base(base: Tree, target: Tree) -> None:
    b, t = mf.manifest_of(base), mf.manifest_of(target)
    d = mf.delta(base.digest, b, t)
    rebuilt = mf.build_tree(mf.apply(b, d), mf.blobs_of(target))
    assert rebuilt.digest == target.digest
    assert [(p, e.mtime_ns) for p, e in rebuilt.entries.items() if e.kind == "file"] == [
        (p, e.mtime_ns) for p, e in target.entries.items() if e.kind == "file"
    ]


def _tree(n: int) -> Tree:
    return Tree.of({f"d/f{i}.txt": Entry("file", f"line {i}\n".encode() * 5) for i in range(n)})


def test_a_deletion_delta_names_only_the_removed_paths() -> None:
    tree = _tree(50)
    smaller = tree.without([f"d/f{i}.txt" for i in range(10)])
    d = mf.delta(tree.digest, mf.manifest_of(tree), mf.manifest_of(smaller))
    assert d.changed == {}
    assert sorted(d.removed) == sorted(f"d/f{i}.txt" for i in range(10))


def test_blob_store_checks_digests_and_stays_within_its_bound() -> None:
    store = mf.BlobStore(limit_bytes=25)
    blobs = [bytes([65 + i]) * 10 for i in range(4)]
    with pytest.raises(ValueError, match="does not match"):
        store.put(mf.blob_digest(b"other"), blobs[0])
    for b in blobs:
        store.put(mf.blob_digest(b), b)
    assert store.size <= 25 and store.evicted == 2
    found, lacking = store.take(mf.blob_digest(b) for b in blobs)
    assert set(found) == {mf.blob_digest(b) for b in blobs[2:]}
    assert lacking == [mf.blob_digest(b) for b in blobs[:2]]


class _Recorder:
    backend = "host"

    def __init__(self) -> None:
        self.trees: list[Tree] = []

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        self.trees.append(tree)
        return Outcome(exit_code=3, stdout=request.command.encode())

    def describe(self) -> dict[str, Any]:
        return {"backend": "host", "sample_isolation": "supervisor"}

    def close(self) -> None:
        pass


def _service() -> tuple[SampleService, _Recorder]:
    service = pickle.loads(pickle.dumps(SampleService("svc", {"backend": "host"})))
    service.setup(worker=None)
    rec = _Recorder()
    service._runner = rec
    return service, rec


def _request(
    tree: Tree, base: Tree | None, blobs: dict[str, bytes], env: str | None = None
) -> wire.SampleRequest:
    b = mf.manifest_of(base) if base is not None else {}
    return wire.SampleRequest(
        digest=tree.digest,
        delta=mf.delta(base.digest if base is not None else None, b, mf.manifest_of(tree)),
        blobs=blobs,
        request=RunRequest("echo hi", {"A": "1"}, 5.0, "s"),
        env_digest=env,
    )


def _payload(
    tree: Tree, base: Tree | None, blobs: dict[str, bytes], env: str | None = None
) -> bytes:
    return wire.encode_request(_request(tree, base, blobs, env))


def _answer(service: SampleService, payload: bytes) -> wire.Answer:
    """The service's answer, through the wire both ways as the client reads it."""
    return wire.decode_answer(service.serve(payload))


def test_service_asks_for_what_it_lacks_and_runs_the_exact_tree() -> None:
    service, rec = _service()
    tree = _tree(5)
    blobs = mf.blobs_of(tree)
    first = next(iter(blobs))
    answer = _answer(service, _payload(tree, None, {first: blobs[first]}))
    assert answer.status == "need" and not answer.base
    assert list(answer.blobs) == sorted(set(blobs) - {first})
    assert rec.trees == []
    answer = _answer(service, _payload(tree, None, blobs))
    assert answer.status == "ok" and answer.outcome is not None
    assert (answer.outcome.exit_code, answer.outcome.stdout) == (3, b"echo hi")
    assert rec.trees[-1].digest == tree.digest
    # A deletion needs nothing more: the anchor and every blob are cached.
    smaller = tree.without(["d/f1.txt"])
    answer = _answer(service, _payload(smaller, tree, {}))
    assert answer.status == "ok" and rec.trees[-1].digest == smaller.digest


def test_service_without_the_anchor_asks_for_it() -> None:
    service, _ = _service()
    tree = _tree(3)
    answer = _answer(service, _payload(tree.without(["d/f0.txt"]), tree, {}))
    assert answer == wire.Answer("", "need", base=True)


def test_service_refuses_another_environment_and_a_bad_delta() -> None:
    service, rec = _service()
    tree = _tree(2)
    answer = _answer(service, _payload(tree, None, mf.blobs_of(tree), env="0" * 64))
    assert answer.status == "refused" and answer.env["sample_isolation"] == "supervisor"
    own = environment_digest(describe_environment(rec.describe()))
    assert _answer(service, _payload(tree, None, mf.blobs_of(tree), env=own)).status == "ok"
    bad = _request(tree, None, mf.blobs_of(tree))
    bad = wire.SampleRequest("f" * 64, bad.delta, bad.blobs, bad.request, None)
    assert _answer(service, wire.encode_request(bad)).error == "rebuilt tree has another digest"
    other = wire.pack({"protocol": PROTOCOL + 1})
    assert "protocol" in _answer(service, other).error
    assert "not a ReproMin message" in _answer(service, pickle.dumps({"x": 1})).error


def test_environment_differences_name_each_field() -> None:
    a = {"python": "CPython 3.11.9", "arch": "x86_64"}
    b = {"python": "CPython 3.12.1", "arch": "x86_64", "docker_image_id": "sha256:ab"}
    assert differences(a, b) == [
        "docker_image_id: - != sha256:ab",
        "python: CPython 3.11.9 != CPython 3.12.1",
    ]
    assert environment_digest(a) != environment_digest(b)


@settings(max_examples=100, deadline=None)
@given(trees, trees)
def test_requests_cross_the_wire_unchanged(base: Tree, target: Tree) -> None:
    sent = _request(target, base, mf.blobs_of(target), env="a" * 64)
    got = wire.decode_request(wire.encode_request(sent))
    assert got == sent
    rebuilt = mf.build_tree(mf.apply(mf.manifest_of(base), got.delta), got.blobs)
    assert rebuilt.digest == target.digest


def _ok(**outcome: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "exit_code": 1,
        "duration": 0.5,
        "timed_out": False,
        "resource_exhausted": False,
        "signal": None,
        "workdir": "/w",
        "infrastructure_error": None,
        "extra": {"docker_container": "abc"},
        "cpu_seconds": None,
    }
    fields.update(outcome)
    return {"protocol": PROTOCOL, "worker": "tcp://w:1", "status": "ok", "outcome": fields}


def test_answers_are_checked_field_by_field() -> None:
    out = Outcome(exit_code=-9, stdout=b"o\xff", stderr=b"e", signal=9, cpu_seconds=0.25)
    sent = wire.Answer("tcp://w:1", "ok", outcome=out)
    assert wire.decode_answer(wire.encode_answer(sent)) == sent
    # An honest worker's oversized fields are cut, never refused.
    big = Outcome(None, b"x" * (wire.STREAM_LIMIT + 1), infrastructure_error="e" * 10_000)
    got = wire.decode_answer(wire.encode_answer(wire.Answer("w", "ok", outcome=big))).outcome
    assert got is not None and got.infrastructure_error == "e" * wire.TEXT_LIMIT
    assert len(got.stdout) <= wire.STREAM_LIMIT and got.stdout.startswith(b"x")
    assert wire.decode_answer(wire.pack(_ok(), [b"x", b"y"])).outcome == Outcome(
        1, b"x", b"y", 0.5, workdir="/w", extra={"docker_container": "abc"}
    )
    bad: list[object] = [
        {"status": "ok", "outcome": out},  # an object, not bytes
        pickle.dumps(sent),
        wire.pack(_ok(), [b"x"]),
        wire.pack(_ok(exit_code="1"), [b"", b""]),
        wire.pack(_ok(exit_code=True), [b"", b""]),
        wire.pack(_ok(duration=-1), [b"", b""]),
        wire.pack(_ok(timed_out=1), [b"", b""]),
        wire.pack(_ok(extra={"x": {"nested": 1}}), [b"", b""]),
        wire.pack(_ok(), [b"x" * (wire.STREAM_LIMIT + 1), b""]),
        wire.pack({**_ok(), "status": "pwned"}),
        wire.pack({"protocol": PROTOCOL, "worker": "w", "status": "need", "base": 1}),
        wire.pack({"protocol": PROTOCOL, "worker": "w", "status": "refused", "env": {"a": 1}}),
        wire.pack({**_ok(), "protocol": PROTOCOL - 1}, [b"", b""]),
        wire.pack(_ok(), [b"", b""]) + b"trailing",
        wire.pack(_ok(), [b"", b""]).replace(b'"duration":0.5', b'"duration":NaN'),
    ]
    for data in bad:
        with pytest.raises(wire.WireError):
            wire.decode_answer(data)


def test_the_watch_reads_the_schedulers_log_of_the_client() -> None:
    from repomin.cluster.worker import client_connected

    add = (1.0, {"action": "add-client", "client": "c"})
    remove = (2.0, {"action": "remove-client", "client": "c"})
    other = (3.0, {"action": "something-else"})
    assert client_connected((add,)) is True
    assert client_connected([list(add), list(other)]) is True  # msgpack may give lists
    assert client_connected((add, remove)) is False
    assert client_connected((add, remove, add)) is True
    assert client_connected(()) is False  # forgotten: gone
    assert client_connected(None) is None  # no log at all: nothing to decide
    assert client_connected({"error": "x"}) is None
