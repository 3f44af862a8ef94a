"""Trees: the immutable value every pass proposes and every runner executes.

A :class:`Tree` maps a relative POSIX path to an :class:`Entry` (a regular file with its bytes,
mode and modification time, a symlink with its target, or an empty directory). It never touches
the disk except in :func:`materialise`, which writes a fresh copy for one sample. Its
:attr:`Tree.digest` covers paths, kinds, mode bits, symlink targets, contents and empty
directories: two trees with the same digest behave the same for the oracle, which is what makes
the content cache sound.

Modification times (``Entry.mtime_ns``, read from SRC) are carried to every copy but are *not*
part of the digest: every entry's time comes from SRC and an edit keeps it
(:meth:`Entry.with_data`), so within one reduction a path always has the same time and the
digest already decides the mtimes. The complete payload fingerprint (``tree-sha256-v1``, see
:mod:`repomin.fingerprint`) does cover them.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

EntryKind = Literal["file", "symlink", "dir"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a tree. ``data`` is the file content or the symlink target (as bytes)."""

    kind: EntryKind
    data: bytes = b""
    mode: int = 0o644
    text: bool = False
    #: Modification time in nanoseconds (files and symlinks from SRC); None: the copy's own.
    mtime_ns: int | None = None

    @property
    def size(self) -> int:
        return len(self.data) if self.kind == "file" else 0

    def with_data(self, data: bytes) -> Entry:
        """The same entry with new content. The modification time is kept on purpose: an edited
        file stays as old relative to the files built from it as it was in SRC, so ``make`` and
        other staleness checks decide as they do in the user's tree."""
        return Entry(self.kind, data, self.mode, self.text, self.mtime_ns)

    @property
    def mtime_seconds(self) -> float | None:
        """``mtime_ns`` in seconds (for tar headers: PAX keeps the fraction)."""
        return None if self.mtime_ns is None else self.mtime_ns / 1e9


def _entry_record(path: str, entry: Entry) -> bytes:
    digest = hashlib.sha256(entry.data).hexdigest()
    return (json.dumps([path, entry.kind, entry.mode & 0o7777, digest]) + "\n").encode()


@dataclass(frozen=True)
class Tree:
    """An immutable mapping ``path -> Entry``. Construct with :meth:`of`."""

    entries: Mapping[str, Entry]
    #: path -> (entry, digest record), shared by every tree derived from one another; a record
    #: is reused only for the identical entry object, so deriving a candidate copies nothing.
    _records: dict[str, tuple[Entry, bytes]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def of(cls, entries: Mapping[str, Entry]) -> Tree:
        return cls(dict(sorted(entries.items())))

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, path: object) -> bool:
        return path in self.entries

    def __getitem__(self, path: str) -> Entry:
        return self.entries[path]

    @property
    def file_count(self) -> int:
        """Files and symlinks (what the report calls ``files``); empty dirs are not counted."""
        return sum(1 for e in self.entries.values() if e.kind != "dir")

    @cached_property
    def byte_count(self) -> int:
        return sum(e.size for e in self.entries.values())

    def _record(self, path: str) -> bytes:
        entry = self.entries[path]
        cached = self._records.get(path)
        if cached is not None and cached[0] is entry:
            return cached[1]
        rec = _entry_record(path, entry)
        self._records[path] = (entry, rec)
        return rec

    @cached_property
    def digest(self) -> str:
        """SHA-256 over every entry's path, kind, mode, and content (the cache key)."""
        h = hashlib.sha256(b"repomin-tree-v1\n")
        for path in self.entries:
            h.update(self._record(path))
        return h.hexdigest()

    def _derive(self, entries: dict[str, Entry], byte_count: int | None = None) -> Tree:
        child = Tree(entries, self._records)
        if byte_count is not None:  # known incrementally: no pass over the entries
            child.__dict__["byte_count"] = byte_count
        return child

    def without(self, paths: Iterable[str]) -> Tree:
        """The tree minus ``paths`` (and everything below any directory path among them).

        Cost: one copy of the mapping plus work per removed entry (directories are found by
        bisection in the sorted paths), not a test of every entry against every path."""
        gone: set[str] = set()
        for path in set(paths):
            if path in self.entries:
                gone.add(path)
            if path.rstrip("/"):
                gone.update(self.under(path))
        kept = dict(self.entries)
        removed = 0
        for path in gone:
            removed += kept.pop(path).size
        return self._derive(kept, self.byte_count - removed)

    def replace(self, path: str, data: bytes) -> Tree:
        entries = dict(self.entries)
        old = entries[path]
        entries[path] = old.with_data(data)
        return self._derive(entries, self.byte_count - old.size + entries[path].size)

    def directories(self) -> set[str]:
        """Every directory that has at least one entry below it (not counting the root)."""
        dirs: set[str] = set()
        for path, entry in self.entries.items():
            if entry.kind == "dir":
                dirs.add(path)
            parent = path.rpartition("/")[0]
            while parent and parent not in dirs:
                dirs.add(parent)
                parent = parent.rpartition("/")[0]
        return dirs

    @cached_property
    def paths(self) -> list[str]:
        """All paths in sorted order (paths sharing a prefix are contiguous)."""
        return list(self.entries)

    def under(self, directory: str) -> list[str]:
        """Every path strictly below ``directory`` ("" is the root), in sorted order."""
        if not directory:
            return self.paths
        prefix = directory.rstrip("/") + "/"
        lo = bisect.bisect_left(self.paths, prefix)
        hi = bisect.bisect_left(self.paths, prefix[:-1] + "0")  # "0" follows "/" in ASCII
        return self.paths[lo:hi]

    def children(self, directory: str) -> list[str]:
        """Immediate children of ``directory`` (files, symlinks, subdirectories), sorted."""
        start = len(directory) + 1 if directory else 0
        seen: dict[str, None] = {}
        for path in self.under(directory):
            head, _sep, _ = path[start:].partition("/")
            seen[path[:start] + head] = None
        return list(seen)

    def size_of(self, path: str) -> int:
        """Bytes of a file, or of everything below a directory."""
        entry = self.entries.get(path)
        if entry is not None and entry.kind != "dir":
            return entry.size
        return sum(self.entries[p].size for p in self.under(path))

    def is_dir(self, path: str) -> bool:
        entry = self.entries.get(path)
        return (entry is not None and entry.kind == "dir") or bool(self.under(path))


def materialise(tree: Tree, root: Path) -> None:
    """Write ``tree`` below ``root`` (which must exist and be empty).

    Files and symlinks get their recorded modification time (``Entry.mtime_ns``, nanoseconds;
    the access time is set to the same value); directories keep the time of the copy.
    """
    made: set[str] = set()

    def ensure(directory: str) -> None:
        if directory and directory not in made:
            os.makedirs(os.path.join(root, directory), exist_ok=True)
            made.add(directory)

    for path, entry in tree.entries.items():
        target = os.path.join(root, path)
        if entry.kind == "dir":
            ensure(path)
            continue
        ensure(path.rpartition("/")[0])
        if entry.kind == "symlink":
            os.symlink(os.fsdecode(entry.data), target)
            if entry.mtime_ns is not None:
                _set_mtime(target, entry.mtime_ns, follow=False)
        else:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, entry.mode & 0o7777)
            try:
                view = memoryview(entry.data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)
            # os.open honours the umask; restore the recorded mode exactly.
            if entry.mode & 0o022:
                os.chmod(target, entry.mode & 0o7777)
            if entry.mtime_ns is not None:
                _set_mtime(target, entry.mtime_ns, follow=True)


def _set_mtime(path: str, mtime_ns: int, *, follow: bool) -> None:
    try:
        os.utime(path, ns=(mtime_ns, mtime_ns), follow_symlinks=follow)
    except NotImplementedError:  # no lutimes on this platform: the link keeps the copy's time
        if follow:
            raise
