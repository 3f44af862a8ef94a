"""Fingerprints of an exported payload on disk (the report's ``output.tree_*`` fields).

``tree-sha256-v1`` (complete) covers, for every entry below the root in sorted path order:
the relative path, the kind, the permission bits, the modification time in nanoseconds of
files and symlinks, the SHA-256 of file contents and the symlink target. It is authoritative
for a local export. ``tree-content-sha256-v1`` covers paths, kinds, contents and symlink targets
only, so that a transport that rewrites mtimes or modes can still be checked (content-only).
Directory mtimes are never included: creating a file changes them, so no copy preserves them.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

COMPLETE_POLICY = "tree-sha256-v1"
CONTENT_POLICY = "tree-content-sha256-v1"


@dataclass(frozen=True, slots=True)
class Fingerprint:
    files: int
    bytes: int
    tree_sha256: str
    tree_content_sha256: str


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def fingerprint(root: Path) -> Fingerprint:
    """Fingerprint a directory without following symlinks. Counts files and symlinks."""
    complete = hashlib.sha256(COMPLETE_POLICY.encode() + b"\n")
    content = hashlib.sha256(CONTENT_POLICY.encode() + b"\n")
    files = total = 0
    records: list[tuple[str, os.stat_result, str]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            records.append((rel.replace(os.sep, "/"), os.lstat(full), full))
    records.sort(key=lambda r: os.fsencode(r[0]))
    for rel, st, full in records:
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            kind, digest, mtime = "symlink", os.readlink(full), st.st_mtime_ns
            files += 1
        elif stat.S_ISDIR(st.st_mode):
            kind, digest, mtime = "dir", "", 0
        elif stat.S_ISREG(st.st_mode):
            kind, digest, mtime = "file", _file_sha256(full), st.st_mtime_ns
            files += 1
            total += st.st_size
        else:
            kind, digest, mtime = "special", "", 0
        complete.update((json.dumps([rel, kind, mode, mtime, digest]) + "\n").encode())
        content.update((json.dumps([rel, kind, digest]) + "\n").encode())
    return Fingerprint(files, total, complete.hexdigest(), content.hexdigest())
