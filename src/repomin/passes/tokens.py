"""Token-level deletion: the last resort, for small files once every other pass has stalled.

Tokens are string literals, identifier/number runs and single punctuation characters. A deleted
token that starts a word takes the blanks after it (before it, at the end of a line), so
``a b c`` becomes ``a c`` and no deletion leaves trailing blanks. Only files up to
:data:`MAX_BYTES` are cut (ddmin over tokens costs about ``k log n`` runs for ``k`` surviving
tokens), smallest first, and each file content is swept once (a later round skips a file it
already left unchanged: a cheaper, not always 1-minimal, last resort); Python and JSON
candidates pass the syntax guard. The driver runs this pass only when the others make no
progress (:data:`repomin.passes.STALL_ONLY`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from repomin.passes.textedit import propose, splice, syntax_guard, text_files
from repomin.search.deletion.ddmin import ddmin_delete, ddmin_first
from repomin.search.problem import Problem
from repomin.tree import Tree

#: Files larger than this are left to the line and structure passes.
MAX_BYTES = 8 * 1024

_TOKEN = re.compile(rb"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|\w+|[^\w\s]")
_HSPACE = re.compile(rb"[ \t]+")
_CLOSERS = frozenset({b",", b";", b":", b")", b"]", b"}"})


@dataclass(frozen=True, slots=True)
class Token:
    start: int
    end: int
    text: bytes


def tokens(data: bytes) -> list[Token]:
    """The file's tokens. A token that starts a word also covers the blanks after it, or, when
    it ends its line, the blanks before it (so no deletion leaves trailing blanks)."""
    out: list[Token] = []
    for match in _TOKEN.finditer(data):
        start, end = match.span()
        if start == 0 or data[start - 1 : start].isspace():
            newline = data.find(b"\n", end)
            if not data[end : len(data) if newline < 0 else newline].strip():
                while start > 0 and data[start - 1 : start] in (b" ", b"\t"):
                    start -= 1  # the line's last token takes the blanks before it
            else:
                blank = _HSPACE.match(data, end)
                end = blank.end() if blank is not None else end
        out.append(Token(start, end, match.group()))
    return out


#: A file's token search: its content key, units, and how to build and describe a deletion.
_Build = Callable[[Sequence[Token]], Tree]
_Search = tuple[tuple[str, str], list[Token], _Build, Callable[[Sequence[Token]], str]]


class DeleteTokens:
    """The ``tokens`` pass (see the module docstring)."""

    name: ClassVar[str] = "tokens"

    def __init__(self) -> None:
        self._done: set[tuple[str, str]] = set()

    def run(self, problem: Problem) -> None:
        files = list(reversed(text_files(problem, lambda _p, data: len(data) <= MAX_BYTES)))
        for i, path in enumerate(files):
            if path in problem.current:
                self._reduce_file(problem, path, files[i + 1 :])

    def _reduce_file(self, problem: Problem, path: str, later: Sequence[str] = ()) -> None:
        """``later``: the files after this one; with batch slots the next one's first chunks
        follow this file's last ones (``ddmin_delete``'s ``then``)."""
        search = self._search(problem, path)
        if search is None:
            return  # already token-minimal in this content: not worth a second full sweep
        self._done.add(search[0])

        def then() -> Iterator[tuple[Tree, str]]:
            for other in later:
                following = self._search(problem, other)
                if following is not None:
                    return ddmin_first(*following[1:])
            return iter(())

        ddmin_delete(problem, self.name, *search[1:], then=then)

    def _search(self, problem: Problem, path: str) -> _Search | None:
        """The content's key, the units of ``path``'s search and how to build and describe a
        deletion (None: the file is gone or this content was swept)."""
        entry = problem.current.entries.get(path)
        if entry is None:
            return None
        data = entry.data
        key = (path, hashlib.sha256(data).hexdigest())
        if key in self._done:
            return None
        units = tokens(data)
        guard = syntax_guard(path, data)

        def build(remaining: Sequence[Token]) -> Tree:
            keep = set(remaining)
            cut = _tidy(data, [(t.start, t.end) for t in units if t not in keep])
            return propose(problem, path, splice(data, [(a, b, b"") for a, b in cut]), guard)

        def describe(chunk: Sequence[Token]) -> str:
            shown = b" ".join(t.text for t in chunk[:4]).decode("utf-8", "replace")[:60]
            more = f" and {len(chunk) - 4} more" if len(chunk) > 4 else ""
            return f"delete tokens {shown!r}{more} in {path}"

        return key, units, build, describe


def _tidy(data: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge spans that touch or are separated by blanks only; a span that ends a line, or is
    followed by a closing bracket or separator, also takes the blanks before it
    (``f(a : int)`` -> ``f(a)``, not ``f(a )``)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and (start <= merged[-1][1] or not data[merged[-1][1] : start].strip(b" \t")):
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    out: list[tuple[int, int]] = []
    for start, end in merged:
        newline = data.find(b"\n", end)
        ends_line = not data[end : len(data) if newline < 0 else newline].strip()
        blanks = start
        while blanks > 0 and data[blanks - 1 : blanks] in (b" ", b"\t"):
            blanks -= 1
        indentation = blanks == 0 or data[blanks - 1 : blanks] == b"\n"
        if ends_line or (data[end : end + 1] in _CLOSERS and not indentation):
            start = blanks
        out.append((start, end))
    return out
