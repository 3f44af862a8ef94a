"""Node's V8 coverage of the traced run: which functions and blocks of each file never ran.

The traced run (``repomin.analysis.trace``) sets ``NODE_V8_COVERAGE`` to a directory outside the
sample
tree when the log goes to a host directory (the host backend). Every Node process of the
command then writes one JSON file there when it exits (normally, through ``process.exit`` or
an uncaught exception; not when killed by a signal): per script its URL and, per function,
ranges ``{startOffset, endOffset, count}`` -- the function's own range first, then the blocks
inside it (branches, ``catch`` clauses, code after a ``return``) with their execution counts.
Node asks V8 for *precise block* coverage, so a count of 0 means "never ran" even for a
function that was never compiled.

:func:`read_coverage` maps the scripts that are files of the traced tree to
:class:`FileCoverage`: the file's bytes as traced (a later edit makes the record stale: the
caller compares) and its never-run ranges as **byte** offsets. V8 counts offsets in UTF-16
code units of the source string; Node's CommonJS loader drops a leading byte-order mark. A
file is used only when the script's top-level range ends exactly at the length of its source
(the mapping is then known to be right); otherwise it is left out. A file seen by several
processes keeps only the ranges that never ran in any of them.

Nothing here is evidence: the ranges only shape *proposals* (``passes.coverage``), which the
oracle accepts or rejects like any other candidate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from repomin.analysis.records import json_records, relative_to_roots
from repomin.tree import Tree

#: The directory (inside the traced run's private log directory) Node writes coverage to.
COVERAGE_DIR = "v8cov"
#: Coverage files larger than this are skipped (a pathological command; memory bound).
MAX_FILE_BYTES = 256 * 1024 * 1024
#: At most this many coverage files are read (one per Node process).
MAX_FILES = 4096


@dataclass(frozen=True, slots=True)
class FileCoverage:
    """One traced file: its bytes as traced and the byte ranges ``[start, end)`` that never ran
    (``function``: the range is a whole function's, else a block's)."""

    data: bytes
    never: tuple[tuple[int, int, bool], ...]
    #: Java only: every method the run's JVMs touched (binary class, name, parameter count),
    #: by which the never-run bodies of the file as edited since are found again.
    touched: frozenset[tuple[str, str, int]] | None = None


def read_coverage(
    directory: Path, roots: Sequence[str], tree: Tree
) -> dict[str, FileCoverage] | None:
    """The coverage of ``tree``'s files in ``directory`` (None when Node wrote none)."""
    documents = json_records(directory, MAX_FILE_BYTES, MAX_FILES)
    if documents is None:
        return None
    seen: dict[str, list[set[tuple[int, int, bool]]]] = {}
    for document in documents:
        scripts = document.get("result") if isinstance(document, dict) else None
        for path, never in _scripts(scripts if isinstance(scripts, list) else [], roots, tree):
            seen.setdefault(path, []).append(never)
    out: dict[str, FileCoverage] = {}
    for path, sets in seen.items():
        common = set.intersection(*sets)
        out[path] = FileCoverage(tree[path].data, tuple(sorted(common)))
    return out


def _scripts(
    scripts: Iterable[object], roots: Sequence[str], tree: Tree
) -> Iterable[tuple[str, set[tuple[int, int, bool]]]]:
    for script in scripts:
        if not isinstance(script, dict):
            continue
        path = _tree_path(script.get("url"), roots)
        entry = tree.entries.get(path) if path is not None else None
        if path is None or entry is None or entry.kind != "file":
            continue
        functions = script.get("functions")
        never = never_ran(entry.data, functions if isinstance(functions, list) else [])
        if never is not None:
            yield path, never


def _tree_path(url: object, roots: Sequence[str]) -> str | None:
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    return relative_to_roots(unquote(urlparse(url).path), roots) or None


def never_ran(data: bytes, functions: Sequence[object]) -> set[tuple[int, int, bool]] | None:
    """The never-run byte ranges of one script, or None when its offsets cannot be mapped."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    skip = 1 if text.startswith("\ufeff") else 0
    table = _utf16_to_bytes(text[skip:], len(text[:skip].encode("utf-8")))
    ranges: list[tuple[int, int, int, bool]] = []
    for function in functions:
        if not isinstance(function, dict) or not isinstance(function.get("ranges"), list):
            continue
        for k, r in enumerate(function["ranges"]):
            if not isinstance(r, dict):
                continue
            start, end, count = r.get("startOffset"), r.get("endOffset"), r.get("count")
            if isinstance(start, int) and isinstance(end, int) and isinstance(count, int):
                ranges.append((start, end, count, k == 0))
    top = [end for start, end, _, first in ranges if first and start == 0]
    if not top or max(top) != len(table) - 1:
        return None  # not the offsets of this source (a wrapper, another version)
    return {
        (table[start], table[end], function)
        for start, end, count, function in ranges
        if count == 0 and 0 <= start < end < len(table)
    }


def _utf16_to_bytes(text: str, offset: int) -> list[int]:
    """Byte offset of every UTF-16 offset of ``text`` (and of its end), ``offset`` first."""
    if text.isascii():
        return list(range(offset, offset + len(text) + 1))
    table: list[int] = []
    at = offset
    for char in text:
        code = ord(char)
        width = 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        table.append(at)
        if code >= 0x10000:
            table.append(at)  # a surrogate pair: two UTF-16 units, one character
        at += width
    table.append(at)
    return table


def counts(coverage: Mapping[str, FileCoverage] | None) -> tuple[int, int]:
    """(files, never-run ranges) of a coverage map (for events)."""
    if not coverage:
        return 0, 0
    return len(coverage), sum(len(c.never) for c in coverage.values())


__all__ = ["COVERAGE_DIR", "FileCoverage", "counts", "never_ran", "read_coverage"]
