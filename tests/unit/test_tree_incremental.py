"""Incremental bookkeeping of derived trees: ``without``/``replace`` keep the byte count and
share digest records, and every value equals the one computed from scratch."""

from __future__ import annotations

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
