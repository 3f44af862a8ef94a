"""The JavaScript search of the ``brackets`` pass: statements and members, then bodies.

A JavaScript file (one that :mod:`repomin.passes.jslex` lexes) is reduced container by
container, the file first, then the surviving ``{...}``/``[...]`` pairs bottom-up (the one that
starts last first, so an edit never moves a container still waiting). Per container, three
learning deletion searches (``search.deletion.learning``; 1-minimal over their units for any
predicate):

1. **delete elements** -- the statements of the file or of a block, the members of an object
   literal (``name: function () {...},``), the elements of an array (``passes.elements``); a
   statement continued by ``else``, ``catch``, ``finally`` (or a ``do`` block by its
   ``while``) is one element with it;
2. **empty bodies** -- every ``{...}`` pair an element holds at its own level or inside its
   parentheses (function and method bodies, branches, object literals, class bodies, the
   function passed to a call or wrapped in ``(...)``) becomes ``{}``: a method that is called
   but whose work is not needed keeps its name and loses its body, where deleting it would
   break the call;
3. **unwrap blocks** -- a statement that wraps a block (``if (...) {...}`` with its ``else``,
   ``try {...}`` with its ``catch``/``finally``, ``do {...} while (...)``, a bare ``{...}``)
   is replaced by the inside of its first block: the guard, the handler or the loop goes and
   the code it wrapped stays where it was. Neither deleting nor emptying reaches this when
   the wrapped code is on the failing path (gulp's ``natives`` runs the failing
   ``runInThisContext`` inside ``try { if (ContextifyScript) {...} } finally {...}``); the
   JavaScript counterpart of ``pyexpr``'s unwrapping of a Python block.

Then the pairs left non-empty are the next containers. Units that survived an earlier search
of the same file (by their text) get the survivor prior (tested alone first). Candidates pass
the JavaScript syntax guard (``textedit.syntax_guard``: the file must still lex).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from repomin.passes.elements import Element, elements, mode_of, top_level
from repomin.passes.jslex import Lexed, lex
from repomin.passes.textedit import Guard, describe_spans, propose, splice
from repomin.search.deletion.learning import SURVIVOR_PRIOR, learn_delete
from repomin.search.problem import Problem
from repomin.tree import Tree

#: Words that continue the statement before them (merged into the element before).
_CONTINUE = (b"else", b"catch", b"finally")
_WORD = re.compile(rb"[A-Za-z_$][\w$]*")
_SPACE = frozenset(b" \t\r\n\f\v")
#: Words that start a statement wrapping a block the unwrap step may replace by its inside.
_WRAPPERS = (b"if", b"try", b"do")
#: A search cut short by an edit it cannot map starts its container again at most this often.
RESTARTS = 3


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace bytes ``[start, end)`` with ``text``; ``line``: 1-based, for descriptions."""

    start: int
    end: int
    line: int
    text: bytes = b""


def statements(data: bytes, lexed: Lexed, lo: int, hi: int, opener: int | None) -> list[Element]:
    """The elements of the container ``[lo, hi)``, with continued statements merged."""
    mode = mode_of(data, lexed, lo, hi, opener, False)
    out: list[Element] = []
    for unit in elements(data, lexed, lo, hi, mode, False):
        head = data[unit.start : unit.end].lstrip()
        continued = any(
            head.startswith(w) and not head[len(w) : len(w) + 1].isalnum() for w in _CONTINUE
        )
        after_do = (
            head.startswith(b"while")
            and out
            and data[out[-1].start : out[-1].end].lstrip().startswith(b"do")
        )
        if out and mode == ";" and (continued or after_do):
            out[-1] = Element(out[-1].start, unit.end, out[-1].line)
        else:
            out.append(unit)
    return out


def _changed(problem: Problem, path: str, data: bytes) -> bool:
    entry = problem.current.entries.get(path)
    return entry is not None and entry.data != data


def unwrapping(data: bytes, lexed: Lexed, unit: Element) -> Edit | None:
    """The edit replacing the block statement that ends element ``unit`` by the inside of its
    first block: an ``if``/``try``/``do`` statement starting the element or one of its lines
    (statements without semicolons share an element up to the block that ends it), or a bare
    block heading the element; None when there is none or its first block is empty."""
    start: int | None = None
    line_start = True  # at the element's start, or only space and comments since a newline
    head = True
    for i in top_level(data, lexed, unit.start, unit.end):
        if data[i] in _SPACE:
            line_start = line_start or data[i] == ord("\n")
            continue
        if i in lexed.opaque and (i, lexed.opaque[i]) in lexed.comments:
            continue
        if data[i] == ord("{") and i in lexed.pairs:
            if start is None and not head:
                return None
            inside = data[i + 1 : lexed.pairs[i]]
            if not inside.strip():
                return None
            begin = i if start is None else start
            return Edit(begin, unit.end, data.count(b"\n", 0, begin) + 1, inside)
        word = _WORD.match(data, i) if line_start else None
        if word is not None and word.group() in _WRAPPERS:
            start = i
        head = line_start = False
    return None


def bodies(data: bytes, lexed: Lexed, lo: int, hi: int) -> Iterator[int]:
    """Openers of the ``{``/``[`` pairs at the level of ``[lo, hi)``, looking through ``(...)``."""
    for i in top_level(data, lexed, lo, hi):
        if i in lexed.pairs and data[i] in b"{[":
            yield i
        elif i in lexed.pairs and data[i] == ord("("):
            yield from bodies(data, lexed, i + 1, lexed.pairs[i])


def container(data: bytes, opener: int) -> tuple[Lexed, int, int] | None:
    """The lexed file and the inside of the pair at ``opener`` (``-1``: the whole file)."""
    lexed = lex(data)
    if lexed is None:
        return None
    if opener < 0:
        return lexed, 0, len(data)
    close = lexed.pairs.get(opener)
    return None if close is None else (lexed, opener + 1, close)


def deletions(data: bytes, lexed: Lexed, lo: int, hi: int, opener: int) -> list[Edit]:
    """Step 1: delete each element of the container ``[lo, hi)``."""
    units = statements(data, lexed, lo, hi, None if opener < 0 else data[opener])
    return [Edit(u.start, u.end, u.line) for u in units]


def emptyings(data: bytes, lexed: Lexed, lo: int, hi: int, opener: int) -> list[Edit]:
    """Step 2: empty each non-empty ``{...}`` at the container's level (or in its ``(...)``)."""
    return [
        Edit(o + 1, lexed.pairs[o], data.count(b"\n", 0, o) + 1)
        for o in bodies(data, lexed, lo, hi)
        if data[o] == ord("{") and data[o + 1 : lexed.pairs[o]].strip()
    ]


def unwrappings(data: bytes, lexed: Lexed, lo: int, hi: int, opener: int) -> list[Edit]:
    """Step 3: unwrap each block statement of a statement container."""
    kind = None if opener < 0 else data[opener]
    if mode_of(data, lexed, lo, hi, kind, False) != ";":
        return []
    units = statements(data, lexed, lo, hi, kind)
    return [e for u in units if (e := unwrapping(data, lexed, u)) is not None]


#: The searches per container, in order (the module docstring's three steps).
_STEPS = (
    ("delete elements", deletions),
    ("empty bodies", emptyings),
    ("unwrap blocks", unwrappings),
)


class JsSearch:
    """The search over one file (see the module docstring); ``survived`` is kept across runs."""

    def __init__(self, phase: str, survived: set[tuple[str, bytes]]) -> None:
        self.phase = phase
        self.survived = survived

    def run(self, problem: Problem, path: str, guard: Guard) -> None:
        pending: list[tuple[int, int]] = [(1, -1)]
        restarts = 0
        while pending:
            _, opener = heapq.heappop(pending)
            for kind, edits_of in _STEPS:
                entry = problem.current.entries.get(path)
                found = None if entry is None else container(entry.data, opener)
                if entry is None or found is None:
                    break
                lexed, lo, hi = found
                edits = edits_of(entry.data, lexed, lo, hi, opener)
                if self._search(problem, path, entry.data, edits, guard, kind) and (
                    restarts < RESTARTS
                ):
                    restarts += 1
                    heapq.heappush(pending, (-opener, opener) if opener >= 0 else (1, -1))
                    break
                if edits_of is unwrappings and _changed(problem, path, entry.data):
                    # What was wrapped is now at this level: its statements, and the wrappers
                    # it held, get this container's searches again (each unwrap drops a brace
                    # pair, so this ends).
                    heapq.heappush(pending, (-opener, opener) if opener >= 0 else (1, -1))
                    break
            else:
                entry = problem.current.entries.get(path)
                found = None if entry is None else container(entry.data, opener)
                if entry is not None and found is not None:
                    lexed, lo, hi = found
                    for child in bodies(entry.data, lexed, lo, hi):
                        if entry.data[child + 1 : lexed.pairs[child]].strip():
                            heapq.heappush(pending, (-child, child))
            if path not in problem.current:
                return

    def _search(
        self,
        problem: Problem,
        path: str,
        data: bytes,
        edits: list[Edit],
        guard: Guard,
        kind: str,
    ) -> bool:
        """One learning search over ``edits``; True when an edit it cannot map onto its units
        was folded into the file (``--jobs``): the caller starts the container again."""
        if not edits:
            return False

        def text(remaining: Sequence[Edit]) -> bytes:
            keep = set(remaining)
            return splice(data, [(e.start, e.end, e.text) for e in edits if e not in keep])

        def build(remaining: Sequence[Edit]) -> Tree:
            return propose(problem, path, text(remaining), guard)

        def describe(chunk: Sequence[Edit]) -> str:
            return describe_spans(kind, path, [e.line for e in chunk])

        cut_short = False

        def sync(kept: Sequence[Edit]) -> list[bool] | None:
            nonlocal cut_short
            entry = problem.current.entries.get(path)
            cut_short = entry is not None and entry.data != text(kept)
            return None if entry is None or cut_short else [True] * len(kept)

        base = 1.0 / len(edits)
        priors = [
            SURVIVOR_PRIOR if (path, data[e.start : e.end]) in self.survived else base
            for e in edits
        ]
        kept = learn_delete(problem, self.phase, edits, build, describe, priors, sync=sync)
        if not cut_short:
            self.survived.update((path, data[e.start : e.end]) for e in kept)
        return cut_short


__all__ = [
    "Edit",
    "JsSearch",
    "bodies",
    "container",
    "deletions",
    "emptyings",
    "statements",
    "unwrapping",
    "unwrappings",
]
