"""A problem seen through an extra protection rule and a budget of oracle runs.

A pass that runs other passes on part of the tree (``ordered`` on one file at a time, or on
every file with a short leash; ``restart`` on a scratch copy) hands them a :class:`View`:
every other path protected, at most ``budget`` further runs (and at most ``drought`` runs
without a change of the incumbent), and what the caller proposes next (``after``) for the
inner passes' searches to hand on. Everything else is the underlying problem's, including how
many candidates it decides at once (``batch_width``, ``chain_width``, ``try_batch``): the view
forwards that, so the deletion searches inside it batch and chain as they would outside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from repomin.search.problem import Batch, Problem
from repomin.tree import Tree

T = TypeVar("T")


class OverBudget(Exception):
    """A view used its runs (raised to unwind the passes running in it)."""


class View:
    """A :class:`~repomin.search.problem.Problem` seen through an extra protection rule
    (everything else delegated), optionally with a budget of oracle runs and a drought limit
    (runs since the incumbent last changed, or since the view was made): past either, no more
    candidates are handed on and the next ``try_first`` or ``try_batch`` raises
    :class:`OverBudget`."""

    def __init__(
        self,
        problem: Problem,
        protect: Callable[[str], bool],
        budget: int | None = None,
        after: Callable[[int], list[Tree]] | None = None,
        drought: int | None = None,
    ) -> None:
        self._problem = problem
        self._protect = protect
        self._limit = None if budget is None else problem.runs + budget
        self._drought = drought
        #: The incumbent last seen to change, and the runs then.
        self._mark = (problem.current.digest, problem.runs)
        #: What the caller proposes after the passes in this view, if the tree stays as it
        #: is (the ``ordered`` pass: the next file's first candidates).
        self._after = after

    def _over(self) -> bool:
        runs = self._problem.runs
        if self._drought is not None:
            digest = self._problem.current.digest
            if digest != self._mark[0]:
                self._mark = (digest, runs)
            elif runs - self._mark[1] >= self._drought:
                return True
        return self._limit is not None and runs >= self._limit

    @property
    def current(self) -> Tree:
        return self._problem.current

    def protected(self, path: str) -> bool:
        return self._protect(path) or self._problem.protected(path)

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        if self._over():
            raise OverBudget
        return self._problem.try_first(phase, self._bounded(candidates))

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        # The learning search decides batches here when the problem has slots (``--jobs``):
        # without this the budget was checked only on ``try_first`` and a batched search of a
        # large file ran past it (found on the npm case: the lexer kept the cap to itself).
        if self._over():
            raise OverBudget
        return self._problem.try_batch(phase, batch)

    def _bounded(self, candidates: Iterable[tuple[Tree, str]]) -> Iterator[tuple[Tree, str]]:
        it = iter(candidates)
        # Checked before each pull: a lazy proposer (repomin.search.deletion.chain) then
        # proposes only what is handed on, and only what was handed on is tried
        # (the search stays consistent).
        while not self._over():
            item = next(it, None)
            if item is None:
                return
            yield item

    # How broad the underlying problem decides (named forwards: a future member that decides
    # candidates must be added here, with the budget check, or it is absent from the view).
    @property
    def batch_width(self) -> int:
        return self._problem.batch_width

    @property
    def chain_width(self) -> int:  # flaky: try_first keeps this many candidates in flight
        return self._problem.chain_width

    @property
    def miss_rate(self) -> float:
        return self._problem.miss_rate

    @property
    def runs(self) -> int:
        return self._problem.runs

    @property
    def history(self) -> Sequence[Tree]:
        return self._problem.history

    def note(self, phase: str, description: str, **fields: Any) -> None:
        self._problem.note(phase, description, **fields)

    def probe(self, phase: str, tree: Tree) -> bool:
        return self._problem.probe(phase, tree)

    def known(self, tree: Tree) -> bool | None:
        return self._problem.known(tree)

    def after(self, k: int) -> list[Tree]:
        return self._after(k) if self._after is not None else []

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        self._problem.later(phase, work, finish)

    def settle(self, phase: str, propose: bool = True) -> None:
        self._problem.settle(phase, propose)


def focus(
    problem: Problem,
    path: str,
    budget: int | None = None,
    after: Callable[[int], list[Tree]] | None = None,
) -> View:
    """``problem`` with every file but ``path`` protected (content passes edit ``path`` only)."""
    return View(problem, lambda p: p != path, budget, after)


__all__: Sequence[str] = ("OverBudget", "View", "focus")
