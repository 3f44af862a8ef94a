"""Token-level deletion: the last resort, for small files once every other pass has stalled.

Tokens are string literals, identifier/number runs and single punctuation characters; a
deleted token takes the horizontal whitespace after it when it starts a word, so ``a b c``
becomes ``a c``. Only files up to :data:`MAX_BYTES` are cut (ddmin over tokens costs about
``k log n`` runs for ``k`` surviving tokens), smallest first; Python and JSON candidates pass
the syntax guard. The driver runs this pass only when the others make no progress
(:data:`repomin.passes.STALL_ONLY`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from repomin.passes.base import Problem, ddmin_delete
from repomin.passes.textedit import propose, splice, syntax_guard, text_files
from repomin.tree import Tree

#: Files larger than this are left to the line and structure passes.
MAX_BYTES = 8 * 1024

_TOKEN = re.compile(rb"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|\w+|[^\w\s]")
_HSPACE = re.compile(rb"[ \t]+")


@dataclass(frozen=True, slots=True)
class Token:
    start: int
    end: int
    text: bytes


def tokens(data: bytes) -> list[Token]:
    """The file's tokens; each span also covers trailing blanks when the token starts a word."""
    out: list[Token] = []
    for match in _TOKEN.finditer(data):
        start, end = match.span()
        if start == 0 or data[start - 1 : start].isspace():
            blank = _HSPACE.match(data, end)
            if blank is not None:
                end = blank.end()
        out.append(Token(start, end, match.group()))
    return out


class DeleteTokens:
    """The ``tokens`` pass (see the module docstring)."""

    name: ClassVar[str] = "tokens"

    def run(self, problem: Problem) -> None:
        files = text_files(problem, lambda _p, data: len(data) <= MAX_BYTES)
        for path in reversed(files):
            if path in problem.current:
                self._reduce_file(problem, path)

    def _reduce_file(self, problem: Problem, path: str) -> None:
        data = problem.current[path].data
        units = tokens(data)
        guard = syntax_guard(path, data)

        def build(remaining: Sequence[Token]) -> Tree:
            keep = set(remaining)
            edits = [(t.start, t.end, b"") for t in units if t not in keep]
            return propose(problem, path, splice(data, edits), guard)

        def describe(chunk: Sequence[Token]) -> str:
            shown = b" ".join(t.text for t in chunk[:4]).decode("utf-8", "replace")[:60]
            more = f" and {len(chunk) - 4} more" if len(chunk) > 4 else ""
            return f"delete tokens {shown!r}{more} in {path}"

        ddmin_delete(problem, self.name, units, build, describe)
