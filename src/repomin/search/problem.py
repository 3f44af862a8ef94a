"""The one interface between the passes and the search: what a pass may read and ask.

A pass is a named object with ``run(problem)``. Everything it may use of the reduction is a
member of :class:`Problem`, declared here; nothing else is probed. Three members are all most
passes need (``current``, ``protected``, ``try_first``); the others serve the passes that
log their own cost, keep a scratch incumbent, offer what they would propose next, leave work
running beside the next pass, or (the deletion searches of ``search/deletion/``) hand the
search batches of disjoint candidates. How many candidates run at once is the search layer's
decision (``search/decider.py``); ``batch_width`` and ``chain_width`` say what it decided, so
that a search can shape its proposals.

:class:`ProblemDefaults` gives neutral answers for a problem with no oracle behind it (a
pass's own scratch incumbent, a test double): no runs counted, no events, one candidate at a
time, work done at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from repomin.tree import Tree

#: ``try_batch``'s ``ahead``: given the merged tree of a batch and the outcomes it would have,
#: the next batch's trees (run alongside the merge check).
Speculate = Callable[[Tree, Sequence[bool | None]], list[Tree]]
#: ``try_batch``'s ``combine``: the tree of several accepted candidates (by position) together.
Combine = Callable[[Sequence[int]], Tree]
#: ``try_batch``'s ``spare``: given a number of idle slots, the trees the caller will propose
#: next if every candidate of the batch is rejected (run in those slots).
Spare = Callable[[int], list[Tree]]


@dataclass(frozen=True)
class Batch:
    """What ``try_batch`` decides: disjoint candidates, all against the same incumbent, and
    what the caller knows about them (``search/fold.py`` says how each is used)."""

    candidates: Sequence[tuple[Tree, str]]
    #: Given the merged tree and the outcomes it would have, the next batch's trees.
    ahead: Speculate | None = None
    #: The tree of several accepted candidates (by position) together; else a content merge.
    combine: Combine | None = None
    #: Given idle slots, the trees proposed next if every candidate is rejected.
    spare: Spare | None = None


T = TypeVar("T")


class Problem(Protocol):
    """What a pass may use: the incumbent, protection rules, and the doors to the oracle."""

    @property
    def current(self) -> Tree:
        """The incumbent (immutable; read it again after every ``try_first``)."""
        ...

    def protected(self, path: str) -> bool:
        """Must ``path`` stay as it is (``--keep``, or a view's focus)?"""
        ...

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        """Decide candidates in order; adopt and return the index of the first accepted."""
        ...

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        """Decide a batch of disjoint candidates and fold every accepted one into the new
        incumbent (``batch.combine`` builds several together; ``batch.ahead`` and
        ``batch.spare`` fill idle slots: ``search/fold.py``). Per candidate True (adopted),
        False (rejected or a no-op) or None (accepted but not adopted, or not decided)."""
        ...

    @property
    def batch_width(self) -> int:
        """Disjoint candidates worth handing ``try_batch`` at once (1: one at a time)."""
        ...

    @property
    def chain_width(self) -> int:
        """Candidates of one ``try_first`` call the search keeps in flight (1: none ahead), so
        a search proposing one at a time may hand it what it would propose next."""
        ...

    @property
    def runs(self) -> int:
        """Oracle runs drawn so far by the whole search (a pass's budget or cost log)."""
        ...

    @property
    def history(self) -> Sequence[Tree]:
        """The accepted trees in order, the source first."""
        ...

    @property
    def miss_rate(self) -> float:
        """The probability that ``try_first`` rejects a candidate as good as the incumbent: 0
        for a deterministic failure (a rejection proves the candidate lost it), more for a
        flaky one decided on few runs (how much a rejection says, for a search that learns
        from them)."""
        ...

    def note(self, phase: str, description: str, **fields: Any) -> None:
        """Record an informational event of ``phase`` in the report's event log."""
        ...

    def probe(self, phase: str, tree: Tree) -> bool:
        """Decide ``tree`` without adopting it (a scratch search); the verdict is cached."""
        ...

    def known(self, tree: Tree) -> bool | None:
        """The cached decision on ``tree`` (accepted?), None when it was never decided."""
        ...

    def after(self, k: int) -> list[Tree]:
        """Up to ``k`` trees whoever runs this pass proposes next if the incumbent stays as
        it is (a pass whose own search ends may hand them on: the search layer decides
        whether to run them early); none for a pass run by the driver."""
        ...

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        """Run ``work`` and call ``finish`` with its result -- at once, or (when the search
        has room for it) in the background, finishing when the search layer settles
        ``phase``: after the next pass that draws samples, or at :meth:`settle`. ``phase`` is
        the name of the scheduled pass the work belongs to (the driver settles work by pass
        name; work under another name is only waited for when the search stops). One piece
        of work per phase; a new one settles the previous first."""
        ...

    def settle(self, phase: str, propose: bool = True) -> None:
        """Wait for ``phase``'s work from :meth:`later`, if any, and call its ``finish``
        (``propose``) or discard the result."""
        ...


class Pass(Protocol):
    name: ClassVar[str]

    def run(self, problem: Problem) -> None: ...


@runtime_checkable
class Lookahead(Protocol):
    """A pass that can say what it would propose first on a file (optional): a pass running
    it file by file (``ordered``) offers that as what comes next (``Problem.after``)."""

    def first_trees(self, problem: Problem, path: str, k: int) -> list[Tree]: ...


@runtime_checkable
class Remembering(Protocol):
    """A pass that carries finished work from one round to the next (optional): it skips a
    file it finished in an earlier round while the file is unchanged. The driver calls
    :meth:`forget` when a round changed nothing; True means something was skipped, so the
    driver runs one more round with nothing skipped before it calls the tree a fixpoint."""

    def forget(self) -> bool: ...


class ProblemDefaults:
    """The optional members of :class:`Problem` for a problem with no oracle of its own.

    A subclass provides ``current``, ``protected`` and ``try_first``; here it counts no runs,
    never misses, records no events, has no history but its incumbent, cannot probe, knows no
    verdict, has nothing to propose after a pass, decides one candidate at a time (a batch
    too: :meth:`try_batch`), and does background work at once."""

    @property
    def current(self) -> Tree:
        raise NotImplementedError

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        raise NotImplementedError

    @property
    def batch_width(self) -> int:
        return 1

    @property
    def chain_width(self) -> int:
        return 1

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        """The batch one candidate at a time through ``try_first``: the first accepted is
        adopted, each later one is decided on top of all adopted before it (``combine``), or
        left undecided (None) when there is no ``combine``."""
        results: list[bool | None] = []
        adopted: list[int] = []
        for i, (tree, description) in enumerate(batch.candidates):
            if adopted:
                if batch.combine is None:
                    results.append(None)
                    continue
                tree = batch.combine([*adopted, i])
            won = self.try_first(phase, [(tree, description)]) is not None
            if won:
                adopted.append(i)
            results.append(won)
        return results

    @property
    def runs(self) -> int:
        return 0

    @property
    def history(self) -> Sequence[Tree]:
        return (self.current,)

    @property
    def miss_rate(self) -> float:
        return 0.0

    def note(self, phase: str, description: str, **fields: Any) -> None:
        return None

    def probe(self, phase: str, tree: Tree) -> bool:
        raise NotImplementedError("this problem has no oracle to probe")

    def known(self, tree: Tree) -> bool | None:
        return None

    def after(self, k: int) -> list[Tree]:
        return []

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        finish(work())

    def settle(self, phase: str, propose: bool = True) -> None:
        return None


__all__: Sequence[str] = (
    "Combine",
    "Lookahead",
    "Pass",
    "Problem",
    "ProblemDefaults",
    "Spare",
    "Speculate",
)
