from __future__ import annotations

import os
from pathlib import Path

import pytest

from repomin.app.selection import DEFAULT_IGNORED_NAMES, SelectionOptions, is_text, select
from repomin.errors import SelectionError, UsageError


def _write(root: Path, rel: str, data: bytes | str = "x\n") -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else data.encode())


def test_default_ignores_and_extra_rules(tmp_path: Path) -> None:
    for rel in [
        "src/a.py",
        ".git/HEAD",
        "node_modules/x/i.js",
        "src/__pycache__/a.pyc",
        "build/out.o",
        "docs/a.md",
        "keep.log",
    ]:
        _write(tmp_path, rel)
    sel = select(
        tmp_path,
        SelectionOptions(ignored_names=(*DEFAULT_IGNORED_NAMES, "*.log"), ignored_paths=("build",)),
    )
    assert sel.tree.paths == ["docs/a.md", "src/a.py"]
    assert sel.skipped_entries == 5


def test_nested_gitignore_with_negation(tmp_path: Path) -> None:
    _write(tmp_path, ".gitignore", "*.tmp\nsecret/\n")
    _write(tmp_path, "a.tmp")
    _write(tmp_path, "secret/key")
    _write(tmp_path, "sub/.gitignore", "!keep.tmp\n")
    _write(tmp_path, "sub/keep.tmp")
    _write(tmp_path, "sub/drop.tmp")
    sel = select(tmp_path, SelectionOptions())
    assert sel.tree.paths == [".gitignore", "sub/.gitignore", "sub/keep.tmp"]
    assert sel.gitignore_files == (".gitignore", "sub/.gitignore")
    off = select(tmp_path, SelectionOptions(use_gitignore=False))
    assert "a.tmp" in off.tree and "secret/key" in off.tree and off.gitignore_files == ()


def test_text_binary_modes_and_empty_dirs(tmp_path: Path) -> None:
    _write(tmp_path, "t.txt", "héllo\n")
    _write(tmp_path, "b.bin", b"\x00\x01\x02")
    _write(tmp_path, "latin.txt", b"caf\xe9\n")
    _write(tmp_path, "run.sh", "#!/bin/sh\n")
    os.chmod(tmp_path / "run.sh", 0o755)
    (tmp_path / "empty").mkdir()
    tree = select(tmp_path, SelectionOptions()).tree
    assert tree["t.txt"].text and not tree["b.bin"].text and not tree["latin.txt"].text
    assert tree["run.sh"].mode == 0o755
    assert tree["empty"].kind == "dir"
    assert is_text(b"") and not is_text(b"a\0b")


def test_symlinks_inside_kept_outside_rejected(tmp_path: Path) -> None:
    _write(tmp_path, "a/target.txt")
    os.symlink("target.txt", tmp_path / "a/ok")
    tree = select(tmp_path, SelectionOptions()).tree
    assert tree["a/ok"].kind == "symlink" and tree["a/ok"].data == b"target.txt"
    os.symlink("../../etc/passwd", tmp_path / "a/bad")
    with pytest.raises(SelectionError, match=r"points outside SRC.*--ignore-path a/bad"):
        select(tmp_path, SelectionOptions())
    assert "a/bad" not in select(tmp_path, SelectionOptions(ignored_paths=("a/bad",))).tree
    os.remove(tmp_path / "a/bad")
    os.symlink("/etc/passwd", tmp_path / "abs")
    with pytest.raises(SelectionError, match="absolute target"):
        select(tmp_path, SelectionOptions())


def test_fifo_and_unreadable_files_are_clear_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(SelectionError, match=r"FIFO.*--ignore-path pipe"):
        select(tmp_path, SelectionOptions())
    os.remove(tmp_path / "pipe")
    _write(tmp_path, "locked.txt")

    def deny(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", deny)
    with pytest.raises(SelectionError, match=r"cannot read 'locked\.txt': Permission denied"):
        select(tmp_path, SelectionOptions())


def test_missing_src_and_bad_keep(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        select(tmp_path / "nope", SelectionOptions())
    _write(tmp_path, "a.txt")
    with pytest.raises(UsageError, match=r"--keep 'b\.txt' is not in the selected tree"):
        select(tmp_path, SelectionOptions(keep_paths=("b.txt",)))


def test_source_tree_is_not_modified(tmp_path: Path) -> None:
    _write(tmp_path, "a/b.txt")
    before = sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    select(tmp_path, SelectionOptions())
    assert sorted((p, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before
