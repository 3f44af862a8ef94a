"""Trees shipped by content: manifests, deltas between them, and a bounded blob cache.

A sample travels as a *manifest* -- per path its kind, mode, modification time and a reference
(the SHA-256 of a file's bytes; a symlink's target inline) -- plus only the file contents the
worker lacks. Manifests themselves travel as a delta against a tree the worker has seen (an
*anchor*): paths removed and entries added or changed, so a candidate that deletes files ships
neither file content nor the unchanged part of the manifest. The worker recomputes the tree
digest from what it rebuilt and refuses a mismatch, and checks every blob against its digest,
so a stale cache or a bad delta can never run a different tree than the one the oracle asked
about. Everything here is pure (no Dask, no disk).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from repomin.tree import Entry, EntryKind, Tree, digest_of_records, record_of

#: path -> (kind, mode, mtime_ns, ref): ref is the content digest (file), the target (symlink)
#: or empty (directory).
Record = tuple[EntryKind, int, int | None, str | bytes]
Manifest = dict[str, Record]


def blob_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_of(tree: Tree) -> Manifest:
    out: Manifest = {}
    for path, entry in tree.entries.items():
        ref: str | bytes
        if entry.kind == "file":
            ref = blob_digest(entry.data)
        elif entry.kind == "symlink":
            ref = entry.data
        else:
            ref = b""
        out[path] = (entry.kind, entry.mode, entry.mtime_ns, ref)
    return out


def blobs_of(tree: Tree) -> dict[str, bytes]:
    """Content digest -> bytes for every regular file of ``tree``."""
    return {blob_digest(e.data): e.data for e in tree.entries.values() if e.kind == "file"}


@dataclass(frozen=True, slots=True)
class Delta:
    """``target`` = ``base`` minus ``removed`` plus ``changed`` (``base`` None: from empty)."""

    base: str | None
    removed: tuple[str, ...]
    changed: Manifest

    @property
    def size(self) -> int:
        """Entries carried (what the delta costs on the wire, roughly)."""
        return len(self.removed) + len(self.changed)


def delta(base_digest: str | None, base: Mapping[str, Record], target: Manifest) -> Delta:
    removed = tuple(p for p in base if p not in target)
    changed = {p: r for p, r in target.items() if base.get(p) != r}
    return Delta(base_digest, removed, changed)


def apply(base: Mapping[str, Record], d: Delta) -> Manifest:
    out = {p: r for p, r in base.items() if p not in set(d.removed)}
    out.update(d.changed)
    return dict(sorted(out.items()))


def build_tree(manifest: Mapping[str, Record], blobs: Mapping[str, bytes]) -> Tree:
    """The tree a manifest describes; ``blobs`` must hold every file digest (KeyError)."""
    entries: dict[str, Entry] = {}
    for path, (kind, mode, mtime, ref) in manifest.items():
        if kind == "file":
            data = blobs[str(ref)]
            entries[path] = Entry("file", data, mode, _looks_text(data), mtime)
        elif kind == "symlink":
            entries[path] = Entry("symlink", _as_bytes(ref), mode, False, mtime)
        else:
            entries[path] = Entry("dir", b"", mode)
    return Tree.of(entries)


def _as_bytes(ref: str | bytes) -> bytes:
    return ref.encode() if isinstance(ref, str) else ref


def _looks_text(data: bytes) -> bool:
    # Runners never read ``Entry.text``; it only steers passes, which run on the client.
    return b"\0" not in data[:8192]


def manifest_digest(manifest: Mapping[str, Record]) -> str:
    """``Tree.digest`` of the tree a manifest describes, computed without the file contents."""

    def records() -> Iterator[bytes]:
        for path in sorted(manifest):
            kind, mode, _mtime, ref = manifest[path]
            content = str(ref) if kind == "file" else blob_digest(_as_bytes(ref))
            # The record of ``repomin.tree`` (kept equal by a test), from the content digest.
            yield record_of(path, kind, mode, content)

    return digest_of_records(records())


def missing(manifest: Mapping[str, Record], have: Iterable[str]) -> list[str]:
    """File digests of ``manifest`` not in ``have`` (sorted, unique)."""
    held = set(have)
    return sorted({str(r[3]) for r in manifest.values() if r[0] == "file"} - held)


class BlobStore:
    """A bounded, thread-safe LRU cache of file contents by SHA-256 (one per worker)."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit = limit_bytes
        self._data: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.evicted = 0

    @property
    def size(self) -> int:
        """Bytes held."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)

    def put(self, digest: str, data: bytes) -> None:
        """Store one blob after checking it against its digest (ValueError on a mismatch)."""
        if blob_digest(data) != digest:
            raise ValueError(f"blob {digest[:12]} does not match its content")
        with self._lock:
            if digest in self._data:
                self._data.move_to_end(digest)
                return
            self._data[digest] = data
            self._bytes += len(data)
            while self._bytes > self.limit and len(self._data) > 1:
                _, old = self._data.popitem(last=False)
                self._bytes -= len(old)
                self.evicted += 1

    def take(self, digests: Iterable[str]) -> tuple[dict[str, bytes], list[str]]:
        """(found blobs, missing digests); found ones become most recently used."""
        found: dict[str, bytes] = {}
        lacking: list[str] = []
        with self._lock:
            for d in digests:
                data = self._data.get(d)
                if data is None:
                    lacking.append(d)
                else:
                    self._data.move_to_end(d)
                    found[d] = data
        return found, lacking


class ManifestCache:
    """The last few manifests a worker rebuilt, by tree digest (anchors for deltas)."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._data: OrderedDict[str, Manifest] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str) -> Manifest | None:
        with self._lock:
            m = self._data.get(digest)
            if m is not None:
                self._data.move_to_end(digest)
            return m

    def put(self, digest: str, manifest: Manifest) -> None:
        with self._lock:
            self._data[digest] = manifest
            self._data.move_to_end(digest)
            while len(self._data) > self.limit:
                self._data.popitem(last=False)
