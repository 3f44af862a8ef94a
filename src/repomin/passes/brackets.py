"""Balanced-bracket blocks for C-like languages and JSON: elements of ``{}``/``[]``, then ``()``.

A light lexer (strings, character literals, ``//`` and ``/* */`` comments) finds the bracket
pairs; a file whose brackets do not balance is skipped. Each container -- the file, or the
inside of a ``{...}``/``[...]`` -- splits into *elements*:

* statement containers (the file, a ``{}`` holding a top-level ``;``): elements end at ``;``,
  after a ``{...}`` block (with a directly following ``;``), at a blank line, or at the end of
  a preprocessor line; a block therefore goes together with its header (``int f(void) {...}``,
  ``if (x) {...}``, ``struct s {...};``);
* list containers (JSON everywhere, ``[...]``, a ``{...}`` with commas and no ``;``): elements
  are separated by ``,`` and a deleted element takes one adjacent comma with it.

Containers are reduced with ddmin, the file first, then the surviving blocks bottom-up (so an
edit never moves a container still waiting). Deleting every element of a block is the first
candidate at each level, i.e. "delete the block's contents". Finally the contents of each
``(...)`` (argument and parameter lists, not conditions) are tried empty, outermost first.
Leading comments travel with the element they precede. JSON candidates must parse.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from repomin.passes.base import Problem, ddmin_delete
from repomin.passes.textedit import (
    JSON_SUFFIXES,
    Guard,
    describe_spans,
    propose,
    splice,
    syntax_guard,
    text_files,
)
from repomin.tree import Tree

#: File suffixes this pass (and the C-like comment rules of ``normalise``) applies to.
CLIKE_SUFFIXES = (
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".ino", ".m", ".mm", ".cu",
    ".java", ".kt", ".kts", ".scala", ".groovy", ".gradle", ".cs", ".go", ".rs", ".swift",
    ".dart", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".php", ".css", ".scss", ".less",
    ".proto", ".zig", ".sol", ".glsl", ".hlsl", ".tf", ".hcl", ".jsonc", ".json5",
)  # fmt: skip
BRACKET_SUFFIXES = CLIKE_SUFFIXES + JSON_SUFFIXES
#: Languages with ``#`` preprocessor lines (each one is an element of its own).
DIRECTIVE_SUFFIXES = (
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".ino", ".m", ".mm", ".cu", ".cs",
)  # fmt: skip

#: Above this size the quadratic re-lexing is not worth it; the ``lines`` pass still applies.
MAX_BYTES = 512 * 1024

_OPEN = {ord("("): ord(")"), ord("["): ord("]"), ord("{"): ord("}")}
_CLOSE = {v: k for k, v in _OPEN.items()}
_SPACE = frozenset(b" \t\r\n\f\v")
_CONTROL = re.compile(rb"(?:\b(?:if|while|for|switch|catch|foreach|elif|until|with)\s*|@)$")


@dataclass(slots=True)
class Lexed:
    """Bracket pairs and opaque spans (strings, comments) of one file version."""

    pairs: dict[int, int] = field(default_factory=dict)
    opaque: dict[int, int] = field(default_factory=dict)  # start -> end (exclusive)
    comments: list[tuple[int, int]] = field(default_factory=list)


def lex(data: bytes, path: str) -> Lexed | None:
    """Find bracket pairs outside strings and comments; None when they do not balance."""
    json = path.endswith(JSON_SUFFIXES)
    css = path.endswith((".css", ".scss", ".less"))
    rust = path.endswith(".rs")
    out = Lexed()
    stack: list[int] = []
    n = len(data)
    i = 0
    while i < n:
        c = data[i]
        if c in b"\"'`":
            end = _string_end(data, i, multiline=c == ord("`"), char_only=rust and c == ord("'"))
            if end is not None:
                out.opaque[i] = end
                i = end
                continue
        elif not json and c == ord("/") and i + 1 < n:
            nxt = data[i + 1]
            if nxt == ord("/") and not css:
                end = data.find(b"\n", i)
                end = n if end < 0 else end
                out.opaque[i] = end
                out.comments.append((i, end))
                i = end
                continue
            if nxt == ord("*"):
                end = data.find(b"*/", i + 2)
                if end < 0:
                    return None
                out.opaque[i] = end + 2
                out.comments.append((i, end + 2))
                i = end + 2
                continue
        if c in _OPEN:
            stack.append(i)
        elif c in _CLOSE:
            if not stack or data[stack[-1]] != _CLOSE[c]:
                return None
            out.pairs[stack.pop()] = i
        i += 1
    return None if stack else out


def _string_end(data: bytes, i: int, *, multiline: bool, char_only: bool) -> int | None:
    """End (exclusive) of the string starting at ``i``; None if it is not a string."""
    quote = data[i]
    j = i + 1
    if char_only and j < len(data) and data[j] != ord("\\"):
        # One character (UTF-8: 1-4 bytes) then the quote, or it is a lifetime/label.
        lead = data[j]
        width = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        return j + width + 1 if data[j + width : j + width + 1] == b"'" else None
    limit = min(len(data), i + 12) if char_only else len(data)
    while j < limit:
        c = data[j]
        if c == ord("\\"):
            j += 2
            continue
        if c == quote:
            return j + 1
        if c == ord("\n") and not multiline:
            return None
        j += 1
    return None


@dataclass(frozen=True, slots=True)
class Element:
    """Bytes ``[start, end)`` to delete for one element, and its first line (1-based)."""

    start: int
    end: int
    line: int


@dataclass(frozen=True, slots=True)
class _Raw:
    start: int
    end: int
    sep: int | None


def _mode(data: bytes, lexed: Lexed, lo: int, hi: int, opener: int | None, json: bool) -> str:
    if json or opener == ord("["):
        return ","
    if opener is None:
        return ";"
    semis = commas = 0
    for i in _top_level(data, lexed, lo, hi):
        semis += data[i] == ord(";")
        commas += data[i] == ord(",")
    return ";" if semis or not commas else ","


def _top_level(data: bytes, lexed: Lexed, lo: int, hi: int) -> Iterable[int]:
    """Positions in ``[lo, hi)`` at the container's own level (nested pairs and opaque skipped;
    opening brackets and the starts of opaque spans are yielded)."""
    i = lo
    while i < hi:
        yield i
        if i in lexed.opaque:
            i = lexed.opaque[i]
        elif i in lexed.pairs:
            i = lexed.pairs[i] + 1
        else:
            i += 1


def elements(
    data: bytes, lexed: Lexed, lo: int, hi: int, mode: str, directives: bool
) -> list[Element]:
    """The deletable elements of the container ``[lo, hi)`` (see the module docstring)."""
    raw: list[_Raw] = []
    start: int | None = None
    last = lo  # end of the last non-space byte of the current element
    newlines = 0
    i = lo
    while i < hi:
        if i in lexed.opaque:
            start = i if start is None else start
            i = last = lexed.opaque[i]
            newlines = 0
            continue
        c = data[i]
        if c in _SPACE:
            newlines += c == ord("\n")
            if newlines >= 2 and start is not None and mode == ";":
                raw.append(_Raw(start, last, None))
                start = None
            i += 1
            continue
        newlines = 0
        if start is None:
            start = i
            end = _directive_end(data, lexed, i, hi) if directives and mode == ";" else None
            if end is not None:
                raw.append(_Raw(i, end, None))
                start = None
                i = last = end
                continue
        if i in lexed.pairs:
            close = lexed.pairs[i]
            i = last = close + 1
            if mode == ";" and c == ord("{"):
                after = _skip_space(data, last, hi)
                if after < hi and data[after] == ord(";"):
                    i = last = after + 1
                raw.append(_Raw(start, last, None))
                start = None
            continue
        last = i + 1
        if (mode == ";" and c == ord(";")) or (mode == "," and c == ord(",")):
            raw.append(_Raw(start, i + 1, i))
            start = None
        i += 1
    if start is not None:
        raw.append(_Raw(start, last, None))
    return _expand(data, raw, mode)


def _directive_end(data: bytes, lexed: Lexed, i: int, hi: int) -> int | None:
    """End of the preprocessor line starting at ``i`` (continuations included, newline
    excluded), or None when ``i`` does not start one or a bracket opened in it closes later."""
    if data[i] != ord("#") or data[data.rfind(b"\n", 0, i) + 1 : i].strip():
        return None
    j = i
    while True:
        nl = data.find(b"\n", j, hi)
        end = hi if nl < 0 else nl
        if nl >= 0 and data[j:nl].rstrip(b"\r").endswith(b"\\"):
            j = nl + 1
            continue
        break
    if any(i <= o < end < c for o, c in lexed.pairs.items()):
        return None
    return end


def _skip_space(data: bytes, i: int, hi: int) -> int:
    while i < hi and data[i] in _SPACE:
        i += 1
    return i


def _expand(data: bytes, raw: Sequence[_Raw], mode: str) -> list[Element]:
    """Grow element spans to whole lines where they own them; a trailing list element without
    its own comma takes the previous comma."""
    out: list[Element] = []
    for k, r in enumerate(raw):
        start, end = r.start, r.end
        line_start = data.rfind(b"\n", 0, start) + 1
        nl = data.find(b"\n", end)
        line_end = len(data) if nl < 0 else nl + 1
        own_start = not data[line_start:start].strip()
        own_end = not data[end:line_end].strip()
        previous_sep = raw[k - 1].sep if k > 0 else None
        if mode == "," and r.sep is None and previous_sep is not None:
            start = previous_sep  # the line break after the element stays
        elif own_start and own_end:
            start, end = line_start, line_end
        out.append(Element(start, end, data.count(b"\n", 0, r.start) + 1))
    return out


class DeleteBrackets:
    """The ``brackets`` pass (see the module docstring)."""

    name: ClassVar[str] = "brackets"

    def run(self, problem: Problem) -> None:
        def eligible(path: str, data: bytes) -> bool:
            return path.endswith(BRACKET_SUFFIXES) and len(data) <= MAX_BYTES

        for path in text_files(problem, eligible):
            entry = problem.current.entries.get(path)
            if entry is None or lex(entry.data, path) is None:
                continue
            guard = syntax_guard(path, entry.data)
            self._containers(problem, path, guard)
            self._parentheses(problem, path, guard)

    def _containers(self, problem: Problem, path: str, guard: Guard) -> None:
        json = path.endswith(JSON_SUFFIXES)
        directives = path.endswith(DIRECTIVE_SUFFIXES)
        pending: list[tuple[int, int]] = [(1, -1)]  # (-open, open); -1 is the whole file
        while pending:
            _, opener_at = heapq.heappop(pending)
            entry = problem.current.entries.get(path)
            if entry is None:
                return
            found = self._container(entry.data, path, opener_at)
            if found is None:
                continue
            lexed, lo, hi = found
            opener = None if opener_at < 0 else entry.data[opener_at]
            mode = _mode(entry.data, lexed, lo, hi, opener, json)
            units = elements(entry.data, lexed, lo, hi, mode, directives)
            if units:
                self._ddmin(problem, path, entry.data, units, guard)
                data = problem.current[path].data
                found = self._container(data, path, opener_at)
                if found is None:
                    continue
                lexed, lo, hi = found
            else:
                data = entry.data
            for i in _top_level(data, lexed, lo, hi):
                if i in lexed.pairs and data[i] in b"{[":
                    heapq.heappush(pending, (-i, i))

    @staticmethod
    def _container(data: bytes, path: str, opener_at: int) -> tuple[Lexed, int, int] | None:
        lexed = lex(data, path)
        if lexed is None:
            return None
        if opener_at < 0:
            return lexed, 0, len(data)
        close = lexed.pairs.get(opener_at)
        if close is None:
            return None
        return lexed, opener_at + 1, close

    def _ddmin(
        self, problem: Problem, path: str, data: bytes, units: list[Element], guard: Guard
    ) -> None:
        def build(remaining: Sequence[Element]) -> Tree:
            keep = set(remaining)
            edits = [(u.start, u.end, b"") for u in units if u not in keep]
            return propose(problem, path, splice(data, edits), guard)

        def describe(chunk: Sequence[Element]) -> str:
            return describe_spans("delete elements", path, [u.line for u in chunk])

        ddmin_delete(problem, self.name, units, build, describe)

    def _parentheses(self, problem: Problem, path: str, guard: Guard) -> None:
        position = 0
        while True:
            entry = problem.current.entries.get(path)
            if entry is None:
                return
            data = entry.data
            lexed = lex(data, path)
            if lexed is None:
                return
            groups = [
                (o, c)
                for o, c in sorted(lexed.pairs.items())
                if data[o] == ord("(")
                and data[o + 1 : c].strip()
                and not _CONTROL.search(data[max(0, o - 12) : o])
            ]
            if position >= len(groups):
                return

            def candidates(
                data: bytes = data, groups: list[tuple[int, int]] = groups, base: int = position
            ) -> Iterable[tuple[Tree, str]]:
                for o, c in groups[base:]:
                    line = data.count(b"\n", 0, o) + 1
                    new = splice(data, [(o + 1, c, b"")])
                    yield (
                        propose(problem, path, new, guard),
                        f"empty the parentheses at line {line} of {path}",
                    )

            won = problem.try_first(self.name, candidates())
            if won is None:
                return
            position += won
