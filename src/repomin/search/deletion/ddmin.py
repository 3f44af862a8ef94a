"""The shared ddmin loop: delete units in chunks that halve from all of them to single ones.

A search-layer strategy, like the learning search beside it: with batch slots it hands one
``try_first`` call every remaining size's chunks (and what the caller proposes next), so that
no slot idles at a size's end; the proposals and their order are the same either way.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from repomin.search.problem import Problem
from repomin.tree import Tree

U = TypeVar("U")


def ddmin_delete(
    problem: Problem,
    phase: str,
    units: Sequence[U],
    build: Callable[[Sequence[U]], Tree],
    describe: Callable[[Sequence[U]], str],
    then: Callable[[], Iterable[tuple[Tree, str]]] | None = None,
) -> list[U]:
    """Delete as many ``units`` as possible, in chunks that halve from ``len(units)`` to 1.

    ``build(remaining)`` makes the candidate tree that keeps exactly ``remaining`` units (the
    incumbent's other content unchanged). At each chunk size, every chunk is proposed in order
    (lazily, so parallel workers can speculate); after an accepted deletion the scan resumes at
    the same position. Returns the surviving units.

    With batch slots (``batch_width`` > 1: a deterministic command and ``--jobs``) one
    ``try_first`` call proposes the chunks of the current size and then those of every smaller
    size (lazily), so a slot the last chunks of a size leave idle (one chunk of the whole
    file, a size whose other chunks the syntax guard turns into no-ops) runs the next size's
    first chunk. What is proposed in which order, and the first accepted, are as with one slot.
    ``then()``: what the caller proposes next (the next file's :func:`ddmin_first`), chained
    behind the last chunks the same way; when one of those is accepted, this search is over.
    """
    remaining = list(units)
    k = len(remaining)
    start = 0
    chained = problem.batch_width > 1  # several at once: hand on what comes next
    while k >= 1 and remaining:
        snapshot = list(remaining)
        tried: list[tuple[int, int]] = []
        own = _chunks(snapshot, build, describe, k, start, chained, tried)
        following = then() if chained and then is not None else ()
        won = problem.try_first(phase, itertools.chain(own, following))
        if won is not None and won < len(tried):
            k, s = tried[won]
            remaining = snapshot[:s] + snapshot[s + k :]
            start = s
            continue
        if k == 1 or chained:
            break
        k, start = max(1, k // 2), 0
    return remaining


def ddmin_first(
    units: Sequence[U], build: Callable[[Sequence[U]], Tree], describe: Callable[[Sequence[U]], str]
) -> Iterator[tuple[Tree, str]]:
    """The candidates of :func:`ddmin_delete`'s first ``try_first`` call with batch slots."""
    return _chunks(list(units), build, describe, len(units), 0, True, [])


def _chunks(
    snapshot: list[U],
    build: Callable[[Sequence[U]], Tree],
    describe: Callable[[Sequence[U]], str],
    k: int,
    first: int,
    chained: bool,
    tried: list[tuple[int, int]],
) -> Iterator[tuple[Tree, str]]:
    """Chunks of size ``k`` from ``first`` on (chained: then of every smaller size), lazily;
    ``tried`` records (size, start) of each one handed out."""
    sizes = [k]
    while chained and sizes[-1] > 1:
        sizes.append(max(1, sizes[-1] // 2))
    for size in sizes:
        for s in range(first if size == sizes[0] else 0, len(snapshot), size):
            tried.append((size, s))
            chunk = snapshot[s : s + size]
            yield build(snapshot[:s] + snapshot[s + size :]), describe(chunk)
