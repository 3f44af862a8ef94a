"""The interface between passes and the reduction problem, and the shared ddmin loop."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar, Protocol, TypeVar

from repomin.tree import Tree

#: ``try_batch``'s ``ahead``: given the merged tree of a batch and the outcomes it would have,
#: the next batch's trees (run alongside the merge check).
Speculate = Callable[[Tree, Sequence[bool | None]], list[Tree]]
#: ``try_batch``'s ``combine``: the tree of several accepted candidates (by position) together.
Combine = Callable[[Sequence[int]], Tree]

U = TypeVar("U")


class Problem(Protocol):
    """What a pass may use: the incumbent tree, protection rules, and the oracle door."""

    @property
    def current(self) -> Tree: ...

    def protected(self, path: str) -> bool: ...

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        """Evaluate candidates in order; adopt and return the index of the first accepted."""
        ...


class Pass(Protocol):
    name: ClassVar[str]

    def run(self, problem: Problem) -> None: ...


def ddmin_delete(
    problem: Problem,
    phase: str,
    units: Sequence[U],
    build: Callable[[Sequence[U]], Tree],
    describe: Callable[[Sequence[U]], str],
) -> list[U]:
    """Delete as many ``units`` as possible, in chunks that halve from ``len(units)`` to 1.

    ``build(remaining)`` makes the candidate tree that keeps exactly ``remaining`` units (the
    incumbent's other content unchanged). At each chunk size, every chunk is proposed in order
    (lazily, so parallel workers can speculate); after an accepted deletion the scan resumes at
    the same position. Returns the surviving units.
    """
    remaining = list(units)
    k = len(remaining)
    while k >= 1 and remaining:
        start = 0
        while start < len(remaining):
            snapshot = list(remaining)
            starts = list(range(start, len(snapshot), k))

            def candidates(
                snapshot: list[U] = snapshot, starts: list[int] = starts, k: int = k
            ) -> Iterable[tuple[Tree, str]]:
                for s in starts:
                    chunk = snapshot[s : s + k]
                    yield build(snapshot[:s] + snapshot[s + k :]), describe(chunk)

            won = problem.try_first(phase, candidates())
            if won is None:
                break
            s = starts[won]
            remaining = snapshot[:s] + snapshot[s + k :]
            start = s
        if k == 1:
            break
        k = max(1, k // 2)
    return remaining
