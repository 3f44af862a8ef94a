"""Indentation blocks for any indented language: a line together with its more-indented body.

A *block* is a non-blank line followed by every line indented deeper than it (blank lines
inside or right after it included). Only blocks with a body are units here -- single lines are
the ``lines`` pass's business. Per text file, largest first, the top-level blocks are reduced
with the learning deletion search (``search.deletion.learning``), then the children of each
surviving block, bottom-up (the block starting last is processed first, so edits never move a
block still waiting in the queue). JSON candidates pass
the syntax guard first. Python files that compile are left to the ``python`` pass (which deletes
the same blocks, validly), and JavaScript that lexes to ``brackets``; fits YAML, Makefiles,
nested configs, outlines, other languages.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from repomin.passes.jslex import is_js, lex
from repomin.passes.textedit import (
    Guard,
    compiles,
    describe_spans,
    is_blank,
    is_python,
    line_starts,
    propose,
    splice,
    syntax_guard,
    text_files,
)
from repomin.search.deletion.learning import learn_delete
from repomin.search.problem import Problem
from repomin.tree import Tree

#: A search cut short by a folded edit it cannot map starts again at most this often per file.
RESTARTS = 3


@dataclass(frozen=True, slots=True)
class Block:
    """Lines ``[first, end)`` (0-based): a header line and its deeper-indented body."""

    first: int
    end: int

    @property
    def has_body(self) -> bool:
        return self.end - self.first > 1


def width(line: bytes) -> int:
    """Indentation width, tabs expanded to 8 columns."""
    prefix = line[: len(line) - len(line.lstrip(b" \t"))]
    return len(prefix.expandtabs(8))


def blocks_in(lines: Sequence[bytes], lo: int, hi: int) -> list[Block]:
    """The sibling blocks covering lines ``[lo, hi)`` (leading blank lines belong to none)."""
    out: list[Block] = []
    i = lo
    while i < hi:
        if is_blank(lines[i]):
            i += 1
            continue
        depth = width(lines[i])
        j = i + 1
        while j < hi and (is_blank(lines[j]) or width(lines[j]) > depth):
            j += 1
        out.append(Block(i, j))
        i = j
    return out


def block_at(lines: Sequence[bytes], first: int) -> Block | None:
    """The block whose header is line ``first`` (recomputed on the current text)."""
    if first >= len(lines) or is_blank(lines[first]):
        return None
    return blocks_in(lines, first, len(lines))[0]


class DeleteBlocks:
    """The ``blocks`` pass (see the module docstring)."""

    name: ClassVar[str] = "blocks"

    def run(self, problem: Problem) -> None:
        for path in text_files(problem, _not_compiling_python):
            if path in problem.current:
                self._reduce_file(problem, path)

    def _reduce_file(self, problem: Problem, path: str) -> None:
        guard = syntax_guard(path, problem.current[path].data)
        # Containers by header line (-1: the whole file), visited bottom-up from a max-heap.
        pending: list[tuple[int, int]] = [(1, -1)]
        restarts = 0
        while pending:
            _, header = heapq.heappop(pending)
            entry = problem.current.entries.get(path)
            if entry is None:
                return
            lines = entry.data.splitlines(keepends=True)
            span = _container(lines, header)
            if span is None:
                continue
            units = [b for b in blocks_in(lines, *span) if b.has_body]
            if units:
                cut_short = self._search(problem, path, entry.data, units, guard)
                if path not in problem.current:
                    return
                if cut_short and restarts < RESTARTS:
                    restarts += 1  # the container again, on the new content
                    heapq.heappush(pending, (1, -1) if header < 0 else (-header, header))
                    continue
                lines = problem.current[path].data.splitlines(keepends=True)
                span = _container(lines, header)
                if span is None:
                    continue
            for child in blocks_in(lines, *span):
                if child.has_body:
                    heapq.heappush(pending, (-child.first, child.first))

    def _search(
        self, problem: Problem, path: str, data: bytes, units: list[Block], guard: Guard
    ) -> bool:
        """One learning search over ``units``; True when it was cut short because an edit it
        cannot map onto its units was folded into the file (``--jobs``)."""
        starts = line_starts(data)

        def build(remaining: Sequence[Block]) -> Tree:
            keep = set(remaining)
            edits = [(starts[u.first], starts[u.end], b"") for u in units if u not in keep]
            return propose(problem, path, splice(data, edits), guard)

        def describe(chunk: Sequence[Block]) -> str:
            return describe_spans("delete blocks", path, [u.first + 1 for u in chunk])

        cut_short = False

        def sync(kept: Sequence[Block]) -> list[bool] | None:
            nonlocal cut_short
            entry = problem.current.entries.get(path)
            mask = None if entry is None else _still_there(data, starts, units, kept, entry.data)
            cut_short = entry is not None and mask is None
            return mask

        learn_delete(problem, self.name, units, build, describe, sync=sync)
        return cut_short


def _still_there(
    data: bytes, starts: Sequence[int], units: Sequence[Block], kept: Sequence[Block], now: bytes
) -> list[bool] | None:
    """Which ``kept`` blocks ``now`` still has, when ``now`` is ``data`` without the other units
    and some kept ones (candidates of the same search folded in); None when it is not."""
    keep = set(kept)
    present: dict[Block, bool] = {}
    out: list[bytes] = []
    pos = at = 0
    for unit in units:
        a, b = starts[unit.first], starts[unit.end]
        gap = data[at:a]
        out.append(gap)
        pos += len(gap)
        at = b
        if unit in keep:
            present[unit] = now.startswith(data[a:b], pos)
            if present[unit]:
                out.append(data[a:b])
                pos += b - a
    out.append(data[at:])
    if b"".join(out) != now:
        return None
    return [present[u] for u in kept]


def _not_compiling_python(path: str, data: bytes) -> bool:
    """Python that compiles is the ``python`` pass's: it deletes the same blocks, validly;
    JavaScript that lexes is the ``brackets`` pass's (statements, members, bodies)."""
    if is_js(path) and lex(data) is not None:
        return False
    return not (is_python(path, data) and compiles(data, path))


def _container(lines: Sequence[bytes], header: int) -> tuple[int, int] | None:
    """Lines ``[lo, hi)`` of the whole file (``header == -1``) or of one block's body."""
    if header < 0:
        return 0, len(lines)
    block = block_at(lines, header)
    if block is None or not block.has_body:
        return None
    return block.first + 1, block.end
