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
Leading comments travel with the element they precede. JSON candidates must parse. The
elements are :mod:`repomin.passes.elements`'s. JavaScript files are lexed by
:mod:`repomin.passes.jslex` (regular expression and template literals) and reduced by the
JavaScript search (:mod:`repomin.passes.jsunits`: statements and members, then bodies, with the
learning search) instead of the ddmin over containers.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Sequence
from typing import ClassVar

from repomin.passes import jslex
from repomin.passes.elements import Element, elements, mode_of, top_level
from repomin.passes.jslex import Lexed
from repomin.passes.jsunits import JsSearch
from repomin.passes.textedit import (
    JSON_SUFFIXES,
    Guard,
    describe_spans,
    propose,
    splice,
    syntax_guard,
    text_files,
)
from repomin.search.deletion.ddmin import ddmin_delete
from repomin.search.problem import Problem
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
#: JavaScript files get the parentheses step only up to this size (one run per pair: on a
#: large file that is hundreds of runs for a few bytes each).
JS_PARENS = 4096

_OPEN = {ord("("): ord(")"), ord("["): ord("]"), ord("{"): ord("}")}
_CLOSE = {v: k for k, v in _OPEN.items()}
_CONTROL = re.compile(rb"(?:\b(?:if|while|for|switch|catch|foreach|elif|until|with)\s*|@)$")


def lex(data: bytes, path: str) -> Lexed | None:
    """Find bracket pairs outside strings and comments; None when they do not balance."""
    if jslex.is_js(path):
        return jslex.lex(data)
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


class DeleteBrackets:
    """The ``brackets`` pass (see the module docstring)."""

    name: ClassVar[str] = "brackets"

    def __init__(self) -> None:
        #: JavaScript units (by path and text) that survived an earlier search.
        self.survived: set[tuple[str, bytes]] = set()

    def run(self, problem: Problem) -> None:
        def eligible(path: str, data: bytes) -> bool:
            return path.endswith(BRACKET_SUFFIXES) and len(data) <= MAX_BYTES

        for path in text_files(problem, eligible):
            entry = problem.current.entries.get(path)
            if entry is None or lex(entry.data, path) is None:
                continue
            guard = syntax_guard(path, entry.data)
            if jslex.is_js(path):
                JsSearch(self.name, self.survived).run(problem, path, guard)
                small = path in problem.current and problem.current[path].size <= JS_PARENS
                if small:
                    self._parentheses(problem, path, guard)
                continue
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
            mode = mode_of(entry.data, lexed, lo, hi, opener, json)
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
            for i in top_level(data, lexed, lo, hi):
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
