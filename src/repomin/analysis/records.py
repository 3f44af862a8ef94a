"""What a traced run writes back for ReproMin, read as hostile input: JSON records in a
private directory (bounded in size and count, regular files only, never through a link or a
FIFO) and absolute paths mapped to paths inside the sample's tree."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from repomin.runners.scratch import read_regular


def json_records(directory: Path, max_bytes: int, max_count: int) -> Iterator[object] | None:
    """The parsed ``*.json`` files of ``directory`` (sorted, at most ``max_count``; a file over
    ``max_bytes``, not regular, or not JSON is skipped), or None when there is none."""
    try:
        names = sorted(p for p in directory.iterdir() if p.suffix == ".json")[:max_count]
    except OSError:
        return None
    if not names:
        return None
    return _parsed(names, max_bytes)


def _parsed(names: Sequence[Path], max_bytes: int) -> Iterator[object]:
    for name in names:
        data = read_regular(name, max_bytes + 1)  # the sample wrote it: no links, no FIFOs
        if data is None or len(data) > max_bytes:
            continue
        try:
            yield json.loads(data)
        except (ValueError, RecursionError):
            continue


def relative_to_roots(path: str, roots: Sequence[str]) -> str | None:
    """``path`` (absolute) relative to the first of ``roots`` it lies in (``""`` for a root
    itself), or None when it lies in none."""
    norm = os.path.normpath(path)
    for root in roots:
        if norm == root:
            return ""
        if norm.startswith(root.rstrip("/") + "/"):
            return norm[len(root.rstrip("/")) + 1 :]
    return None
