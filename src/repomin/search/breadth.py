"""How broad the search decides: how many candidates it takes at once, asked in one place.

The reduction (:class:`~repomin.search.reducer.Reduction`) decides how many candidates run at
once: with a deterministic command and ``--jobs`` W, a batch of W disjoint candidates
(``batch_width``, folded by ``search/fold.py``); with a flaky command, one candidate at a time
whose samples share the slots with the next candidates of the same ``try_first`` call
(``chain_width``, ``sampling/lanes.py``). A pass never reads these numbers. The deletion
searches of the search layer (``search/deletion/``) shape their proposals by them, and three
passes choose between two ways of proposing the same edits by asking here, never by reading a
width: ``files`` and ``lines`` (:func:`broad`: one search over every file at once instead of
one per directory or file) and ``pyexpr`` (:func:`proposes_ahead`: every open file's
candidates in one call). A problem that offers none of this (a scratch incumbent, a test
double) is decided one candidate at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from repomin.search.problem import Combine, Spare, Speculate
from repomin.tree import Tree


@runtime_checkable
class Broad(Protocol):
    """A problem that decides several disjoint candidates at once."""

    @property
    def batch_width(self) -> int: ...


@runtime_checkable
class BatchProblem(Broad, Protocol):
    """A problem that can decide a batch of disjoint candidates and fold the accepted ones
    (``Reduction.try_batch``; ``fold.fold_batch`` says what ``ahead``, ``combine`` and
    ``spare`` do)."""

    def try_batch(
        self,
        phase: str,
        candidates: Sequence[tuple[Tree, str]],
        ahead: Speculate | None = None,
        combine: Combine | None = None,
        spare: Spare | None = None,
    ) -> list[bool | None]: ...


@runtime_checkable
class Chaining(Protocol):
    """A problem that keeps several candidates of one ``try_first`` call in flight."""

    @property
    def chain_width(self) -> int: ...


def batch_width(problem: object) -> int:
    """Disjoint candidates ``problem`` decides at once (1: one at a time)."""
    return problem.batch_width if isinstance(problem, Broad) else 1


def chain_width(problem: object) -> int:
    """Candidates of one ``try_first`` call ``problem`` keeps in flight (1: none ahead)."""
    return int(problem.chain_width) if isinstance(problem, Chaining) else 1


def proposes_ahead(problem: object) -> bool:
    """Does ``problem`` run several candidates at once, so that a caller should hand one
    ``try_first`` call what it would propose next (the order stays the caller's)?"""
    return batch_width(problem) > 1


def broad(problem: object, at_least: int) -> bool:
    """Does ``problem`` decide batches of at least ``at_least`` candidates (enough for one
    search over many files to beat one search per file)?"""
    return isinstance(problem, BatchProblem) and problem.batch_width >= at_least


__all__: Sequence[str] = (
    "BatchProblem",
    "Broad",
    "Chaining",
    "batch_width",
    "broad",
    "chain_width",
    "proposes_ahead",
)
