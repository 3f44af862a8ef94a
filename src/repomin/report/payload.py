"""The payload checks: a safe walk (nothing followed), counts, and the tree fingerprints.

The walk never follows a symlink: targets are read with ``readlink`` and resolved virtually,
component by component, inside the payload. Entries that a consumer could not safely copy or
read -- absolute or escaping links, devices, FIFOs, sockets, names with control or format
characters or invalid UTF-8 -- are problems, and a refused tree is never hashed. The cheap facts
come first: the walk's file count and the sum of the files' ``lstat`` sizes must equal the
report's ``output`` before a single file is opened (a payload that differs there is refused,
``payload.counts``, unhashed). Otherwise the complete fingerprint (``tree-sha256-v1``) is
checked first and the content fingerprint (``tree-content-sha256-v1``) second; a legacy report
without either gets count-only validation.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from repomin.report.fingerprint import fingerprint
from repomin.report.rules import Problem

FingerprintMode = Literal["exact", "content", "unavailable"]

#: Unsafe payload entries are listed one per line up to this many, then summarised.
MAX_UNSAFE_LISTED = 20
_MAX_SYMLINK_HOPS = 40


@dataclass(frozen=True, slots=True)
class PayloadScan:
    """What a safe walk of the payload found (files and symlinks counted, file bytes summed)."""

    files: int
    bytes: int
    unsafe: tuple[str, ...]
    unreadable: tuple[str, ...]


def check_payload(
    report: dict[str, Any] | None, payload: Path, *, report_path: Path | None = None
) -> tuple[list[Problem], FingerprintMode | None]:
    """Safety, counts and fingerprint of ``payload``; ``report`` None means structure failed."""
    if not payload.is_dir():
        return [Problem("payload.missing", f"payload {payload} is not a directory")], None
    root = payload.resolve()
    problems: list[Problem] = []
    if report_path is not None:
        rp = report_path.resolve()
        if root == rp or root in rp.parents:
            problems.append(
                Problem(
                    "payload.sidecar",
                    "the report lies inside the payload; keep OUTPUT.repomin/ beside OUTPUT",
                )
            )
    scan = scan_payload(root)
    for item in scan.unsafe[:MAX_UNSAFE_LISTED]:
        problems.append(Problem("payload.unsafe", item))
    if len(scan.unsafe) > MAX_UNSAFE_LISTED:
        problems.append(
            Problem(
                "payload.unsafe", f"... and {len(scan.unsafe) - MAX_UNSAFE_LISTED} more entries"
            )
        )
    problems += [Problem("payload.unreadable", item) for item in scan.unreadable]
    if report is None:
        return problems, None
    output = report["output"]
    drift = (scan.files, scan.bytes) != (output["files"], output["bytes"])
    if drift:
        problems.append(
            Problem(
                "payload.counts",
                f"size drift: the payload has {scan.files} files / {scan.bytes} bytes, the "
                f"report says {output['files']} files / {output['bytes']} bytes",
            )
        )
    hold = report.get("holdout_certification") or {}
    complete = output.get("tree_sha256", hold.get("artifact_tree_sha256"))
    content = output.get("tree_content_sha256", hold.get("artifact_tree_content_sha256"))
    if complete is None and content is None:
        return problems, "unavailable"
    if scan.unsafe or scan.unreadable or drift:
        # never hash a tree we refused, nor one whose file count or lstat sizes already differ
        # (a sparse file of gigabytes costs no disk but costs every byte's hashing)
        return problems, None
    fp = fingerprint(root)
    if complete is not None and fp.tree_sha256 == complete:
        return problems, "exact"
    if content is not None and fp.tree_content_sha256 == content:
        return problems, "content"
    checked = " nor ".join(
        name
        for name, value in (("tree-sha256-v1", complete), ("tree-content-sha256-v1", content))
        if value is not None
    )
    problems.append(
        Problem(
            "payload.fingerprint",
            f"payload fingerprint mismatch: neither {checked} matches"
            if " nor " in checked
            else f"payload fingerprint mismatch: {checked} does not match",
        )
    )
    return problems, None


def scan_payload(root: Path) -> PayloadScan:
    """Walk ``root`` without following any symlink; classify every entry."""
    files = total = 0
    unsafe: list[str] = []
    unreadable: list[str] = []
    pending: deque[tuple[str, str]] = deque([(str(root), "")])
    while pending:
        directory, rel_dir = pending.popleft()
        try:
            with os.scandir(directory) as it:
                children = sorted(it, key=lambda d: d.name)
        except OSError as exc:
            unreadable.append(f"cannot read directory {_show(rel_dir or '.')}: {exc.strerror}")
            continue
        for child in children:
            rel = f"{rel_dir}/{child.name}" if rel_dir else child.name
            bad_name = _hard_to_read(child.name)
            if bad_name is not None:
                unsafe.append(f"{_show(rel)}: hard-to-read name ({bad_name})")
                continue
            try:
                st = child.stat(follow_symlinks=False)
            except OSError as exc:
                unreadable.append(f"cannot stat {_show(rel)}: {exc.strerror}")
                continue
            if stat.S_ISLNK(st.st_mode):
                files += 1
                reason = _symlink_escape(root, rel)
                if reason is not None:
                    unsafe.append(f"{_show(rel)}: {reason}")
            elif stat.S_ISDIR(st.st_mode):
                pending.append((child.path, rel))
            elif stat.S_ISREG(st.st_mode):
                files += 1
                total += st.st_size
                if not os.access(child.path, os.R_OK):
                    unreadable.append(f"cannot read {_show(rel)}: permission denied")
            else:
                unsafe.append(f"{_show(rel)}: {_special_kind(st.st_mode)} (not a file or link)")
    return PayloadScan(files, total, tuple(unsafe), tuple(unreadable))


def _symlink_escape(root: Path, rel: str) -> str | None:
    """Why the link at ``rel`` points outside ``root``, or None.

    Resolution is virtual: targets are read with ``readlink`` and joined component by
    component; a component that is itself a link inside the payload is replaced by its target.
    Nothing is ever opened through a link, and ``..`` above the root is an escape even when a
    link in between makes the lexical path look harmless (``a -> .``, ``b -> a/..``).
    """
    try:
        target = os.readlink(root / rel)
    except OSError as exc:
        return f"unreadable symlink ({exc.strerror})"
    bad = _hard_to_read(target)
    if bad is not None:
        return f"symlink target with a hard-to-read name ({bad})"
    if os.path.isabs(target):
        return f"symlink to the absolute path {_show(target)}"
    stack = rel.split("/")[:-1]
    todo: deque[str] = deque(target.split("/"))
    hops = 0
    while todo:
        part = todo.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return f"symlink to {_show(target)} points outside the payload"
            stack.pop()
            continue
        stack.append(part)
        try:
            st = os.lstat(root.joinpath(*stack))
        except OSError:
            continue  # dangling below this point: the rest resolves lexically
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > _MAX_SYMLINK_HOPS:
                return f"symlink loop through {_show(target)}"
            inner = os.readlink(root.joinpath(*stack))
            if os.path.isabs(inner):
                return f"symlink to {_show(target)} passes through an absolute symlink"
            stack.pop()
            todo.extendleft(reversed(inner.split("/")))
    return None


def _hard_to_read(name: str) -> str | None:
    for char in name:
        category = unicodedata.category(char)
        if category == "Cs":
            return "not valid UTF-8"
        if category in ("Cc", "Cf", "Zl", "Zp"):
            return f"control or format character U+{ord(char):04X}"
    return None


def _special_kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _show(text: str) -> str:
    """A path or name as a safe, quoted, single line."""
    return repr(text)[:120]
