"""Modification times travel from SRC to every sample and to the payload."""

from __future__ import annotations

import os
from pathlib import Path

from repomin.app.export import export_payload
from repomin.app.selection import SelectionOptions, select
from repomin.app.session import Session
from repomin.report.fingerprint import fingerprint
from repomin.tree import Entry, Tree, materialise

OLD, NEW = 1_500_000_000_123_456_789, 1_600_000_000_987_654_321


def _src(root: Path) -> Path:
    (root / "d").mkdir(parents=True)
    (root / "d" / "gen.txt").write_text("generated\n")
    (root / "src.txt").write_text("source\n")
    os.symlink("src.txt", root / "link")
    os.utime(root / "src.txt", ns=(OLD, OLD))
    os.utime(root / "d" / "gen.txt", ns=(NEW, NEW))
    os.utime(root / "link", ns=(NEW + 1, NEW + 1), follow_symlinks=False)
    return root


def test_selection_records_and_materialise_restores_mtimes(tmp_path: Path) -> None:
    src = _src(tmp_path / "src")
    tree = select(src, SelectionOptions()).tree
    assert tree["src.txt"].mtime_ns == OLD and tree["d/gen.txt"].mtime_ns == NEW
    assert tree["link"].mtime_ns == NEW + 1
    copy = tmp_path / "copy"
    copy.mkdir()
    materialise(tree, copy)
    assert os.stat(copy / "src.txt").st_mtime_ns == OLD
    assert os.stat(copy / "d" / "gen.txt").st_mtime_ns == NEW
    assert os.lstat(copy / "link").st_mtime_ns == NEW + 1
    assert fingerprint(copy).tree_sha256 == fingerprint(src).tree_sha256


def test_edits_keep_the_original_mtime_and_the_digest_ignores_mtimes(tmp_path: Path) -> None:
    tree = select(_src(tmp_path / "src"), SelectionOptions()).tree
    edited = tree.replace("src.txt", b"smaller\n")
    assert edited["src.txt"].mtime_ns == OLD
    moved = dict(tree.entries)
    moved["src.txt"] = Entry("file", b"source\n", tree["src.txt"].mode, True, OLD + 5)
    assert Tree.of(moved).digest == tree.digest, "the cache key must not depend on mtimes"
    assert tree["d/gen.txt"].mtime_seconds == NEW / 1e9


def test_payload_fingerprint_equals_what_replay_materialises(tmp_path: Path) -> None:
    tree = select(_src(tmp_path / "src"), SelectionOptions()).tree.replace("src.txt", b"s\n")
    out = tmp_path / "out"
    exported = export_payload(tree, out)
    assert os.stat(out / "src.txt").st_mtime_ns == OLD
    replayed = tmp_path / "replayed"
    replayed.mkdir()
    materialise(select(out, SelectionOptions()).tree, replayed)
    assert fingerprint(replayed).tree_sha256 == exported.tree_sha256


def test_session_round_trip_keeps_mtimes(tmp_path: Path) -> None:
    tree = select(_src(tmp_path / "src"), SelectionOptions()).tree
    session = Session.create(tmp_path / "session", {"source_tree": tree.digest})
    loaded = session.load_tree(session.save_tree(tree))
    assert {p: e.mtime_ns for p, e in loaded.entries.items()} == {
        p: e.mtime_ns for p, e in tree.entries.items()
    }
