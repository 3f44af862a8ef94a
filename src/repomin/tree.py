"""Trees: the immutable value every pass proposes and every runner executes.

A :class:`Tree` maps a relative POSIX path to an :class:`Entry` (a regular file with its bytes,
mode and modification time, a symlink with its target, or an empty directory). It never touches
the disk except in :func:`materialise`, which writes a fresh copy for one sample. Its
:attr:`Tree.digest` covers paths, kinds, mode bits, symlink targets, contents and empty
directories: two trees with the same digest behave the same for the oracle, which is what makes
the content cache sound.

The digest is additive (AdHash, Bellare and Micciancio 1997): every entry's record (path,
kind, mode bits, content SHA-256) is expanded to 2,048 bits with SHAKE-256, the tree keeps the
sum of its records' values modulo 2**2048, and the digest is the SHA-256 of that sum and the
entry count. A tree derived with :meth:`Tree.without` or :meth:`Tree.replace` gets its sum by
subtracting the removed records and adding the new ones, so its digest costs work per changed
entry, not per entry (the derived mapping itself is still one C-level ``dict`` copy).

Modification times (``Entry.mtime_ns``, read from SRC) are carried to every copy but are *not*
part of the digest: every entry's time comes from SRC and an edit keeps it
(:meth:`Entry.with_data`), so within one reduction a path always has the same time and the
digest already decides the mtimes. The complete payload fingerprint (``tree-sha256-v1``, see
:mod:`repomin.report.fingerprint`) does cover them.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
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
    return record_of(path, entry.kind, entry.mode, digest)


def record_of(path: str, kind: str, mode: int, content_sha256: str) -> bytes:
    """One entry's digest record (also built from manifests, without the content)."""
    return (json.dumps([path, kind, mode & 0o7777, content_sha256]) + "\n").encode()


#: Bits of every record's value and of the modulus of the sum (AdHash).
SUM_BITS = 2048
_MASK = (1 << SUM_BITS) - 1


def record_value(record: bytes) -> int:
    """A record's AdHash value: SHAKE-256 of it, 2,048 bits."""
    return int.from_bytes(hashlib.shake_256(record).digest(SUM_BITS // 8), "big")


def digest_of_sum(total: int, count: int) -> str:
    """The tree digest from the sum of its records' values and its entry count."""
    h = hashlib.sha256(b"repomin-tree-v2\n")
    h.update(b"%d\n" % count)
    h.update((total & _MASK).to_bytes(SUM_BITS // 8, "big"))
    return h.hexdigest()


def digest_of_records(records: Iterable[bytes]) -> str:
    """The digest of the tree with exactly these entry records (order does not matter)."""
    total = 0
    count = 0
    for record in records:
        total += record_value(record)
        count += 1
    return digest_of_sum(total, count)


@dataclass(frozen=True)
class Tree:
    """An immutable mapping ``path -> Entry``. Construct with :meth:`of`."""

    entries: Mapping[str, Entry]
    #: path -> (entry, record value), shared by every tree derived from one another; a value
    #: is reused only for the identical entry object, so deriving a candidate copies nothing.
    _records: dict[str, tuple[Entry, int]] = field(default_factory=dict, repr=False, compare=False)

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

    @cached_property
    def file_count(self) -> int:
        """Files and symlinks (what the report calls ``files``); empty dirs are not counted."""
        return sum(1 for e in self.entries.values() if e.kind != "dir")

    @cached_property
    def byte_count(self) -> int:
        return sum(e.size for e in self.entries.values())

    def reduces(self, incumbent: Tree) -> bool:
        """Is this tree worth a run as a candidate against ``incumbent``: another tree with
        fewer bytes or fewer entries? (The search's one no-op rule: any other candidate is
        recorded as a no-op and never run.)"""
        if self.digest == incumbent.digest:
            return False
        return self.byte_count < incumbent.byte_count or len(self) < len(incumbent)

    def _value(self, path: str, entry: Entry | None = None) -> int:
        """The record value of ``path`` (of ``entry`` when given: a candidate's new content,
        not stored, so the shared cache keeps the incumbent's value for the next candidate)."""
        mine = self.entries[path] if entry is None else entry
        cached = self._records.get(path)
        if cached is not None and cached[0] is mine:
            return cached[1]
        value = record_value(_entry_record(path, mine))
        if entry is None:
            self._records[path] = (mine, value)
        return value

    @cached_property
    def _sum(self) -> int:
        return sum(self._value(p) for p in self.entries) & _MASK

    @cached_property
    def digest(self) -> str:
        """SHA-256 over every entry's path, kind, mode, and content (the cache key)."""
        return digest_of_sum(self._sum, len(self.entries))

    def _derive(
        self,
        entries: dict[str, Entry],
        byte_count: int,
        file_count: int | None,
        delta: Callable[[], int],
    ) -> Tree:
        """A tree derived from this one; its counts and (when this tree's sum is known) its
        digest sum are set incrementally: ``delta()`` is the change of the sum."""
        child = Tree(entries, self._records)
        child.__dict__["byte_count"] = byte_count
        if file_count is not None:
            child.__dict__["file_count"] = file_count
        if "_sum" in self.__dict__:
            child.__dict__["_sum"] = (self._sum + delta()) & _MASK
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
        files = self.__dict__.get("file_count")
        for path in gone:
            entry = kept.pop(path)
            removed += entry.size
            if files is not None and entry.kind != "dir":
                files -= 1
        return self._derive(
            kept, self.byte_count - removed, files, lambda: -sum(self._value(p) for p in gone)
        )

    def replace(self, path: str, data: bytes) -> Tree:
        entries = dict(self.entries)
        old = entries[path]
        new = entries[path] = old.with_data(data)
        return self._derive(
            entries,
            self.byte_count - old.size + new.size,
            self.__dict__.get("file_count"),
            lambda: self._value(path, new) - self._value(path),
        )

    def with_changes(self, changes: Mapping[str, Entry | None]) -> Tree:
        """This tree with each path of ``changes`` set to its entry, or removed (None); counts
        and digest updated per changed path (a new path re-sorts the mapping)."""
        entries = dict(self.entries)
        old: dict[str, Entry] = {}
        new: dict[str, Entry] = {}
        for path, value in changes.items():
            prior = entries.pop(path, None) if value is None else entries.get(path)
            if prior is not None:
                old[path] = prior
            if value is not None:
                entries[path] = new[path] = value
        if any(path not in self.entries for path in new):
            entries = dict(sorted(entries.items()))
        files = self.__dict__.get("file_count")
        if files is not None:
            files += sum(e.kind != "dir" for e in new.values())
            files -= sum(e.kind != "dir" for e in old.values())
        size = self.byte_count + sum(e.size for e in new.values())
        size -= sum(e.size for e in old.values())
        return self._derive(
            entries,
            size,
            files,
            lambda: (
                sum(self._value(p, e) for p, e in new.items()) - sum(self._value(p) for p in old)
            ),
        )

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
