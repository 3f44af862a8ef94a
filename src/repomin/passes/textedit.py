"""Byte-level edits shared by the structure-aware passes: line tables, splicing, syntax guards.

A structure-aware pass maps a file to units with byte spans; a candidate is the file with some
spans cut out or replaced. The *syntax guard* keeps candidates that no longer parse away from
the oracle: a cheap check (``compile`` for Python, ``json.loads`` for JSON) that applies only
when the incumbent version of the file itself parses, so a failure that *is* a syntax error
stays reducible (JavaScript: the file must still lex, ``passes.jslex``: brackets balance,
strings, comments and templates end; CMake: ``analysis.cmakelex.well_formed``, the commands
read and their blocks close in order). A guarded-out candidate is proposed as the incumbent
itself, which the driver counts as a ``no_op`` (it costs no oracle run).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Sequence

from repomin.analysis.cmakelex import is_cmake, well_formed
from repomin.passes import jslex
from repomin.search.problem import Problem
from repomin.tree import Tree

Guard = Callable[[bytes], bool]

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
JSON_SUFFIXES = (".json",)


def line_starts(data: bytes) -> list[int]:
    """Offsets of every line start (as ``bytes.splitlines`` splits), then ``len(data)``."""
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    if starts[-1] != len(data):  # pragma: no cover - splitlines covers every byte
        starts.append(len(data))
    return starts


def newline_of(data: bytes) -> bytes:
    """The file's dominant line ending (``\\r\\n`` when any line uses it)."""
    return b"\r\n" if b"\r\n" in data else b"\n"


def indentation(line: bytes) -> bytes:
    return line[: len(line) - len(line.lstrip(b" \t"))]


def is_blank(line: bytes) -> bool:
    return not line.strip()


def splice(data: bytes, edits: Iterable[tuple[int, int, bytes]]) -> bytes:
    """Apply ``(start, end, replacement)`` edits; overlapping deletions are merged.

    An edit that overlaps an earlier one is merged into it when both are deletions and dropped
    otherwise (its replacement would be ambiguous).
    """
    merged: list[tuple[int, int, bytes]] = []
    for start, end, rep in sorted(edits, key=lambda e: (e[0], e[1])):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            if not rep and not last[2]:
                merged[-1] = (last[0], max(last[1], end), b"")
            continue
        merged.append((start, end, rep))
    out: list[bytes] = []
    pos = 0
    for start, end, rep in merged:
        out.append(data[pos:start])
        out.append(rep)
        pos = end
    out.append(data[pos:])
    return b"".join(out)


def is_python(path: str, data: bytes) -> bool:
    if path.endswith(PYTHON_SUFFIXES):
        return True
    first = data[:200].split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"python" in first


def compiles(data: bytes, path: str = "<candidate>") -> bool:
    """Does ``data`` compile as Python (full compile: catches ``return`` outside a function)?"""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def parses_as_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


def _always(_: bytes) -> bool:
    return True


def syntax_guard(path: str, data: bytes) -> Guard:
    """The cheap validity check for ``path`` if its current ``data`` passes it, else no check."""
    if is_python(path, data) and compiles(data, path):
        return lambda candidate: compiles(candidate, path)
    if path.endswith(JSON_SUFFIXES) and parses_as_json(data):
        return parses_as_json
    if jslex.is_js(path) and jslex.lex(data) is not None:
        return lambda candidate: jslex.lex(candidate) is not None  # balanced, terminated
    if is_cmake(path) and well_formed(data):
        return well_formed  # commands whose blocks close: what CMake reads before it runs
    return _always


def propose(problem: Problem, path: str, data: bytes, guard: Guard) -> Tree:
    """The incumbent with ``path`` set to ``data``, or the incumbent itself if guarded out."""
    current = problem.current
    if path not in current or not guard(data):
        return current
    return current.replace(path, data)


def text_files(problem: Problem, accept: Callable[[str, bytes], bool] | None = None) -> list[str]:
    """Editable text files of the incumbent (not kept), largest first."""
    tree = problem.current
    chosen = [
        p
        for p, e in tree.entries.items()
        if e.kind == "file"
        and e.text
        and e.data
        and not problem.protected(p)
        and (accept is None or accept(p, e.data))
    ]
    return sorted(chosen, key=lambda p: (-tree.entries[p].size, p))


def describe_spans(kind: str, path: str, lines: Sequence[int]) -> str:
    """``delete <kind> at line 3 of path`` / ``lines 3-9`` / ``lines 3, 7 and 2 more``."""
    if not lines:
        return f"{kind} in {path}"
    ordered = sorted(lines)
    if len(ordered) == 1:
        where = f"line {ordered[0]}"
    elif len(ordered) <= 3:
        where = "lines " + ", ".join(str(n) for n in ordered)
    else:
        where = f"lines {ordered[0]}, {ordered[1]} and {len(ordered) - 2} more"
    return f"{kind} at {where} of {path}"
