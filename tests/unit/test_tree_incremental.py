"""Incremental bookkeeping of derived trees: ``without``/``replace`` keep the byte count and
share digest records, and every value equals the one computed from scratch."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.tree import Entry, Tree

PATHS = ["a", "b/c", "b/d/e", "b/d/f", "g/h", "g/i/j", "k"]


def fresh(tree: Tree) -> Tree:
    return Tree.of(dict(tree.entries))


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(PATHS), st.binary(max_size=20), min_size=1),
    st.lists(
        st.one_of(
            st.tuples(st.just("without"), st.lists(st.sampled_from([*PATHS, "b", "b/d", "g"]))),
            st.tuples(st.just("replace"), st.sampled_from(PATHS), st.binary(max_size=20)),
        ),
        max_size=6,
    ),
)
def test_property_derived_values_equal_fresh_values(
    files: dict[str, bytes], steps: list[tuple[object, ...]]
) -> None:
    tree = Tree.of({p: Entry("file", data, text=True) for p, data in files.items()})
    tree.digest  # noqa: B018 - populate the shared records
    for step in steps:
        if step[0] == "without":
            drop = list(step[1])  # type: ignore[call-overload]
            expected = {
                p: e
                for p, e in tree.entries.items()
                if not any(p == d or p.startswith(d + "/") for d in drop)
            }
            tree = tree.without(drop)
            assert dict(tree.entries) == expected
        else:
            path, data = str(step[1]), step[2]
            if path not in tree.entries:
                continue
            tree = tree.replace(path, data)  # type: ignore[arg-type]
        again = fresh(tree)
        assert tree.byte_count == again.byte_count
        assert tree.digest == again.digest
        assert list(tree.entries) == sorted(tree.entries)


def test_without_a_directory_removes_everything_below_it_only() -> None:
    tree = Tree.of({p: Entry("file", b"x") for p in ["d/a", "d/b/c", "d2/e", "de"]})
    assert list(tree.without(["d"]).entries) == ["d2/e", "de"]
    assert list(tree.without(["d/"]).entries) == ["d2/e", "de"]
    assert list(tree.without([""]).entries) == list(tree.entries)


def test_a_record_is_reused_only_for_the_identical_entry() -> None:
    tree = Tree.of({"a": Entry("file", b"1"), "b": Entry("file", b"2")})
    edited = tree.replace("a", b"3")
    assert edited.digest != tree.digest  # shared cache, yet each tree hashes its own entries
    assert tree.digest == fresh(tree).digest and edited.digest == fresh(edited).digest


def test_derived_digest_costs_work_per_changed_entry_not_per_entry(monkeypatch: Any) -> None:
    """A 20,000-file tree: once its digest is known, a derived candidate's digest hashes only
    the records of the entries that changed (counted, not timed)."""
    import repomin.tree as tree_module

    tree = Tree.of({f"d{i % 100}/f{i}.txt": Entry("file", b"%d\n" % i) for i in range(20_000)})
    tree.digest  # noqa: B018 - the incumbent's digest (every record once)
    calls: list[bytes] = []
    real = tree_module.record_value

    def counted(record: bytes) -> int:
        calls.append(record)
        return real(record)

    monkeypatch.setattr(tree_module, "record_value", counted)
    one = tree.without(["d7/f7.txt"])
    one.digest  # noqa: B018
    assert len(calls) == 0  # the removed record's value was cached with the incumbent
    directory = tree.without(["d3"])
    directory.digest  # noqa: B018
    assert len(calls) == 0 and directory.file_count == 19_800
    edited = tree.replace("d5/f5.txt", b"changed\n")
    edited.digest  # noqa: B018
    assert len(calls) == 1  # the new content only
    folded = tree.with_changes(
        {"d1/f1.txt": None, "new/file.txt": Entry("file", b"x"), "d2/f2.txt": Entry("file", b"y")}
    )
    folded.digest  # noqa: B018
    assert len(calls) == 3
    monkeypatch.setattr(tree_module, "record_value", real)
    for derived in (one, directory, edited, folded):
        again = fresh(derived)
        assert (derived.digest, derived.byte_count, derived.file_count) == (
            again.digest,
            again.byte_count,
            again.file_count,
        )
    assert list(folded.entries) == sorted(folded.entries)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(PATHS), st.binary(max_size=8), min_size=1),
    st.dictionaries(
        st.sampled_from([*PATHS, "new", "b/new"]),
        st.one_of(st.none(), st.binary(max_size=8)),
    ),
)
def test_property_with_changes_equals_a_fresh_tree(
    files: dict[str, bytes], changes: dict[str, bytes | None]
) -> None:
    tree = Tree.of({p: Entry("file", data, text=True) for p, data in files.items()})
    tree.digest  # noqa: B018
    tree.file_count  # noqa: B018
    derived = tree.with_changes(
        {p: None if d is None else Entry("file", d, text=True) for p, d in changes.items()}
    )
    expected = {p: e for p, e in tree.entries.items() if p not in changes}
    expected.update({p: Entry("file", d, text=True) for p, d in changes.items() if d is not None})
    again = Tree.of(expected)
    assert dict(derived.entries) == dict(again.entries)
    assert list(derived.entries) == list(again.entries)
    assert (derived.digest, derived.byte_count, derived.file_count) == (
        again.digest,
        again.byte_count,
        again.file_count,
    )
