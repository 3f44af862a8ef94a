"""A one-at-a-time search, several proposals deep: the candidates it would propose next.

A search that proposes one candidate per ``try_first`` call (the learning search under a flaky
command: ``batch_width`` is 1) leaves nothing for the slots its candidate's sequential test
leaves idle. When the problem keeps several candidates of one ``try_first`` in flight
(``chain_width`` > 1, ``lanes.py``), :func:`chain_first` hands ``try_first`` a lazy chain: the
search's next proposal, then the proposal it would make *if that one were rejected* (planned on
a copy of its state that has learnt the rejection), and so on. ``try_first`` picks the first
accepted in proposal order, and every candidate before it was rejected -- exactly the case the
chain assumed -- so the search ends in the state it would have reached one candidate at a time:
the same proposals, the same verdicts, the same payload (for a seeded runner; tested).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, Self, TypeVar

from repomin.tree import Tree


class _Units(Protocol):
    @property
    def units(self) -> list[int]: ...


P = TypeVar("P", bound=_Units)


class Searching(Protocol[P]):
    """What :func:`chain_first` needs of a search state (``search.deletion.learning.Search``)."""

    def copy(self) -> Self: ...

    def step(
        self,
        parts: Sequence[P],
        outcomes: Sequence[bool | None],
        digest: str,
        trees: Sequence[Tree],
        after: str,
        rest_digest: Callable[[list[int]], str],
    ) -> None: ...

    def plan(self, width: int, digest: str) -> list[P]: ...


class _First(Protocol):
    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None: ...


S = TypeVar("S", bound=Searching[Any])


def chain_first(
    problem: _First,
    phase: str,
    search: S,
    first: P,
    digest: str,
    build: Callable[[S, Sequence[int]], Tree],
    describe: Callable[[P], str],
) -> tuple[S, list[P], list[Tree], list[bool | None]]:
    """Decide ``first`` and the chain behind it (see the module doc) in one ``try_first``.

    ``build(state, gone)`` is the candidate tree deleting the units ``gone`` (``digest``: the
    incumbent every candidate is proposed against). Returns the state to go on from -- the
    search as it stood just before the last decided candidate -- with that candidate, its
    tree and its outcome, for the caller's usual ``step``."""
    before: list[tuple[S, P, Tree]] = []  # (state before it, part, tree) per handed-on part

    def feed() -> Iterator[tuple[Tree, str]]:
        state, part = search.copy(), first
        while True:
            tree = build(state, part.units)
            before.append((state.copy(), part, tree))
            yield tree, describe(part)
            state.step([part], [False], digest, [tree], digest, lambda r: build(state, r).digest)
            nxt = state.plan(1, digest)
            if not nxt:
                return
            part = nxt[0]

    won = problem.try_first(phase, feed())
    # No winner: every candidate handed on was decided and rejected (``try_first`` returns
    # only then); the last one is stepped by the caller, from the state before it.
    last = len(before) - 1 if won is None else won
    if last < 0:
        return search, [], [], []
    state, part, tree = before[last]
    return state, [part], [tree], [won is not None]
