from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from repomin.tree import Entry, Tree, materialise


def _tree() -> Tree:
    return Tree.of(
        {
            "a/b.txt": Entry("file", b"hello\n", 0o644, True),
            "a/run.sh": Entry("file", b"#!/bin/sh\n", 0o755, True),
            "a-c": Entry("file", b"\0bin", 0o644, False),
            "link": Entry("symlink", b"a/b.txt", 0o777),
            "empty": Entry("dir", b"", 0o755),
        }
    )


def test_digest_changes_with_content_mode_and_path() -> None:
    t = _tree()
    assert t.digest == _tree().digest
    assert t.replace("a/b.txt", b"hello").digest != t.digest
    moded = dict(t.entries)
    moded["a/run.sh"] = Entry("file", b"#!/bin/sh\n", 0o644, True)
    assert Tree.of(moded).digest != t.digest
    assert t.without(["empty"]).digest != t.digest


def test_prefix_queries_respect_separators() -> None:
    t = _tree()
    assert t.under("a") == ["a/b.txt", "a/run.sh"]
    assert t.children("") == ["a-c", "a", "empty", "link"]
    assert t.is_dir("a") and t.is_dir("empty") and not t.is_dir("a-c")
    assert t.without(["a"]).paths == ["a-c", "empty", "link"]
    assert t.size_of("a") == len(b"hello\n") + len(b"#!/bin/sh\n")
    assert t.file_count == 4


def test_materialise_round_trip(tmp_path: Path) -> None:
    materialise(_tree(), tmp_path)
    assert (tmp_path / "a/b.txt").read_bytes() == b"hello\n"
    assert os.stat(tmp_path / "a/run.sh").st_mode & 0o777 == 0o755
    assert os.readlink(tmp_path / "link") == "a/b.txt"
    assert (tmp_path / "empty").is_dir()


@given(st.dictionaries(st.text("abc/", min_size=1, max_size=6), st.binary(max_size=8), max_size=8))
def test_derived_digest_equals_fresh_digest(files: dict[str, bytes]) -> None:
    entries = {
        k.strip("/"): Entry("file", v) for k, v in files.items() if k.strip("/") and "//" not in k
    }
    t = Tree.of(entries)
    _ = t.digest
    for path in list(entries)[:3]:
        derived = t.without([path])
        fresh = Tree.of({p: e for p, e in entries.items() if p in derived.entries})
        assert derived.digest == fresh.digest


def test_reduces_is_the_no_op_rule() -> None:
    """A candidate is worth a run only when it is another tree with fewer bytes or entries."""
    base = Tree.of({"a": Entry("file", b"xx"), "b": Entry("file", b"y")})
    assert not base.reduces(base)
    assert not Tree.of(dict(base.entries)).reduces(base)  # the same tree, rebuilt
    assert base.without(["b"]).reduces(base)  # fewer entries and bytes
    assert base.replace("a", b"x").reduces(base)  # fewer bytes
    assert not base.replace("a", b"zz").reduces(base)  # another tree, not smaller
    assert not base.replace("a", b"xxx").reduces(base)
    merged = Tree.of({"ab": Entry("file", b"xxy")})
    assert merged.reduces(base)  # fewer entries, the same bytes
