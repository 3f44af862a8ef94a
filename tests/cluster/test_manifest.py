"""Content-addressed shipping without a cluster: manifests, deltas, the blob cache, and the
worker service answering need/ok/refused (a fake runner stands in for the host runner)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.cluster import manifest as mf
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
    rec = _Recorder()
    service._runner = rec
    return service, rec


def _payload(
    tree: Tree, base: Tree | None, blobs: dict[str, bytes], env: str | None = None
) -> dict[str, Any]:
    b = mf.manifest_of(base) if base is not None else {}
    return {
        "protocol": PROTOCOL,
        "digest": tree.digest,
        "delta": mf.delta(base.digest if base is not None else None, b, mf.manifest_of(tree)),
        "blobs": blobs,
        "request": RunRequest("echo hi", {}, 5.0, "s"),
        "env_digest": env,
    }


def test_service_asks_for_what_it_lacks_and_runs_the_exact_tree() -> None:
    service, rec = _service()
    tree = _tree(5)
    blobs = mf.blobs_of(tree)
    first = next(iter(blobs))
    answer = service.serve(_payload(tree, None, {first: blobs[first]}))
    assert answer["status"] == "need" and not answer["base"]
    assert answer["blobs"] == sorted(set(blobs) - {first})
    assert rec.trees == []
    answer = service.serve(_payload(tree, None, blobs))
    assert answer["status"] == "ok" and answer["outcome"].exit_code == 3
    assert rec.trees[-1].digest == tree.digest
    # A deletion needs nothing more: the anchor and every blob are cached.
    smaller = tree.without(["d/f1.txt"])
    answer = service.serve(_payload(smaller, tree, {}))
    assert answer["status"] == "ok" and rec.trees[-1].digest == smaller.digest


def test_service_without_the_anchor_asks_for_it() -> None:
    service, _ = _service()
    tree = _tree(3)
    answer = service.serve(_payload(tree.without(["d/f0.txt"]), tree, {}))
    assert answer == {"worker": "", "status": "need", "base": True, "blobs": []}


def test_service_refuses_another_environment_and_a_bad_delta() -> None:
    service, rec = _service()
    tree = _tree(2)
    answer = service.serve(_payload(tree, None, mf.blobs_of(tree), env="0" * 64))
    assert answer["status"] == "refused" and answer["env"]["sample_isolation"] == "supervisor"
    own = environment_digest(describe_environment(rec.describe()))
    assert service.serve(_payload(tree, None, mf.blobs_of(tree), env=own))["status"] == "ok"
    bad = _payload(tree, None, mf.blobs_of(tree))
    bad["digest"] = "f" * 64
    assert service.serve(bad)["status"] == "error"
    bad = _payload(tree, None, mf.blobs_of(tree))
    bad["protocol"] = PROTOCOL + 1
    assert service.serve(bad)["error"] == "protocol mismatch"


def test_environment_differences_name_each_field() -> None:
    a = {"python": "CPython 3.11.9", "arch": "x86_64"}
    b = {"python": "CPython 3.12.1", "arch": "x86_64", "docker_image_id": "sha256:ab"}
    assert differences(a, b) == [
        "docker_image_id: - != sha256:ab",
        "python: CPython 3.11.9 != CPython 3.12.1",
    ]
    assert environment_digest(a) != environment_digest(b)
