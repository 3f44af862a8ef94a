"""The reduction: the one :class:`~repomin.search.problem.Problem` passes see, and the driver.

:class:`Reduction` is a thin door made of three objects: the :class:`Incumbent` (the current
tree, its history, adoption and backtracking: ``incumbent.py``), the :class:`Decider` (every
door to the oracle and how many candidates run at once: ``decider.py``) and the
:class:`Background` work passes leave beside the search (``background.py``). :func:`run_passes`
is the driver: it runs the registered passes to a fixpoint. Stopping early (budget, Ctrl-C)
leaves the best tree so far in ``current``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import Oracle, StopSearch
from repomin.search.background import Background
from repomin.search.decider import Decider, Labels
from repomin.search.fold import AheadFinal
from repomin.search.incumbent import Incumbent, Mutation
from repomin.search.problem import Batch, Pass, Problem, Remembering
from repomin.tree import Tree

T = TypeVar("T")


class Reduction:
    """The reduction problem: the incumbent and the doors to the oracle, for passes."""

    def __init__(
        self,
        *,
        initial: Tree,
        oracle: Oracle,
        ledger: Ledger,
        jobs: int,
        protected: Callable[[str], bool],
        on_accept: Callable[[Mutation], None] | None = None,
        history: Sequence[Tree] = (),
        on_revert: Callable[[Tree], None] | None = None,
        ahead: AheadFinal | None = None,
    ) -> None:
        self.oracle = oracle
        self.ledger = ledger
        self._protected = protected
        labels = Labels()
        self.incumbent = Incumbent(
            initial,
            oracle=oracle,
            ledger=ledger,
            label=labels.next,
            history=history,
            on_accept=on_accept,
            on_revert=on_revert,
        )
        self.decider = Decider(
            self.incumbent, oracle=oracle, ledger=ledger, jobs=jobs, labels=labels, ahead=ahead
        )
        #: Work a pass left running beside the search (``later``): in the background only
        #: with batch slots, where the samples of the next pass keep the slots busy meanwhile.
        self.background = Background(lambda: self.decider.batch_width > 1)

    # -- reading --------------------------------------------------------------------------------

    @property
    def current(self) -> Tree:
        return self.incumbent.current

    @property
    def history(self) -> Sequence[Tree]:
        return self.incumbent.history

    def protected(self, path: str) -> bool:
        return self._protected(path)

    @property
    def runs(self) -> int:
        return self.oracle.samples

    @property
    def miss_rate(self) -> float:
        return self.decider.miss_rate

    @property
    def batch_width(self) -> int:
        return self.decider.batch_width

    @property
    def chain_width(self) -> int:
        return self.decider.chain_width

    def note(self, phase: str, description: str, **fields: Any) -> None:
        self.ledger.event(phase, description, decision="info", **fields)

    def known(self, tree: Tree) -> bool | None:
        return self.decider.known(tree)

    def after(self, k: int) -> list[Tree]:
        return []  # the driver proposes nothing after a pass

    # -- deciding -------------------------------------------------------------------------------

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        return self.decider.try_first(phase, candidates)

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        return self.decider.try_batch(phase, batch)

    def probe(self, phase: str, tree: Tree) -> bool:
        return self.decider.probe(phase, tree)

    def backtrack(self, phase: str) -> Tree:
        """Bisect the accepted history for the last tree a fresh test keeps (``Incumbent``)."""
        return self.incumbent.backtrack(phase)

    # -- work beside the search (``Background``) --------------------------------------------

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        self.background.later(phase, work, finish)

    def settle(self, phase: str, propose: bool = True) -> None:
        self.background.settle(phase, propose)


@dataclass(frozen=True, slots=True)
class ReductionResult:
    tree: Tree
    stop_reason: str  # "fixpoint", "max_runs", "max_time", "interrupted"
    rounds: int
    history: tuple[Tree, ...] = ()  # accepted trees, source first (backtracking)


def run_passes(
    reduction: Reduction,
    schedule: Sequence[str],
    *,
    passes: Mapping[str, Pass],
    stall_only: Collection[str] = frozenset(),
    max_rounds: int = 50,
    on_pass: Callable[[str], None] | None = None,
    backtrack_first: bool = False,
) -> ReductionResult:
    """Run ``passes`` (by name, in ``schedule``) to a fixpoint, most productive (bytes
    removed per sample) first.

    ``stall_only`` passes run only in a round where the others made no progress (then, with
    progress, the others get another round). Work a pass left running beside the search
    (``Reduction.later``) is settled after the next pass that draws samples, or at the
    round's end. A pass may skip files it finished in an earlier round and that have not
    changed since (:class:`~repomin.search.problem.Remembering`); a round that changes
    nothing then makes them forget and is followed by one that skips nothing, before the
    ``stall_only`` passes and before the tree is called a fixpoint. ``on_pass`` sees every
    pass as it starts (the live display's stage); ``backtrack_first`` (a failed payload gate)
    backtracks the incumbent first."""
    instances = dict(passes)
    order = [n for n in schedule if n not in stall_only]
    last_resort = [n for n in schedule if n in stall_only]
    rounds = 0
    try:
        if backtrack_first:
            reduction.backtrack(schedule[0] if schedule else "files")
        while rounds < max_rounds:
            rounds += 1
            yield_: dict[str, float | None] = {}
            for n in order:
                quiet = all(v is None for v in yield_.values())
                reduction.decider.settle_round(rounds > 1 and quiet)
                drawn = reduction.oracle.samples
                yield_[n] = _run_pass(reduction, n, instances[n], on_pass)
                if reduction.oracle.samples > drawn:  # so it ran beside samples
                    _settle(reduction, instances, yield_, n, on_pass)
            _settle(reduction, instances, yield_, None, on_pass)
            progress = any(v is not None for v in yield_.values())
            if not progress and _forget(instances):
                continue  # files were skipped: a round that skips nothing before the last resort
            reduction.decider.settle_round(rounds > 1 and not progress)
            if not progress:
                progress = any(
                    _run_pass(reduction, n, instances[n], on_pass) is not None for n in last_resort
                )
            reduction.decider.settle_round(False)
            if not progress:
                if not _retest_rejected(reduction, order[0]):
                    return _result(reduction, "fixpoint", rounds)
                _forget(instances)  # the re-test round skips nothing either
                continue
            # Structural passes keep their relative order; ties keep the schedule order.
            order.sort(key=lambda n: (-(yield_.get(n) or 0.0), schedule.index(n)))
            order = _files_first(order)
    except StopSearch as stop:
        return _result(reduction, stop.reason, rounds)
    finally:  # a stopped search waits for background work and proposes nothing from it
        reduction.background.drop()
    return _result(reduction, "max_rounds", rounds)


def _forget(instances: Mapping[str, Pass]) -> bool:
    """A round changed nothing: every pass that carried finished work across rounds forgets
    it (:class:`~repomin.search.problem.Remembering`). True when one of them skipped a file
    since it last forgot: the tree is a fixpoint only after a round that skipped nothing, so
    that every unit is tried against the final tree."""
    skipped = False
    for instance in instances.values():
        if isinstance(instance, Remembering):
            skipped |= instance.forget()
    return skipped


def _retest_rejected(reduction: Reduction, phase: str) -> bool:
    """A flaky oracle can reject a good candidate: at its fixpoint (where the tree is small and
    candidates are few) every rejected tree gets one more test, once. False: a fixpoint."""
    oracle = reduction.oracle
    if oracle.cache.retesting or not oracle.design().retests_rejections():
        return False
    oracle.start_retesting()
    message = "fixpoint under a flaky oracle: re-testing rejected candidates once"
    reduction.ledger.event(phase, message, decision="info")
    return True


def _run_pass(
    reduction: Reduction,
    name: str,
    instance: Pass,
    on_pass: Callable[[str], None] | None = None,
) -> float | None:
    """Run one pass; its yield (bytes removed per sample), or None if the tree did not change."""
    if on_pass is not None:
        on_pass(name)
    before = reduction.current
    reduction.ledger.track_stage(name, before.file_count, before.byte_count)
    samples_before = reduction.oracle.samples
    started = time.monotonic()
    try:
        instance.run(reduction)
    finally:  # a pass stopped by the budget or an interrupt still reports the time it ran
        reduction.ledger.add_duration(name, time.monotonic() - started)
    if reduction.current.digest == before.digest:
        return None
    gained = before.byte_count - reduction.current.byte_count
    return gained / max(1, reduction.oracle.samples - samples_before)


def _settle(
    reduction: Reduction,
    instances: dict[str, Pass],
    yield_: dict[str, float | None],
    ran: str | None,
    on_pass: Callable[[str], None] | None,
) -> None:
    """Finish the background work of every pass but ``ran`` (it ran beside ``ran``), in
    schedule order, each as a pass of its own (its samples, time and yield)."""
    for name in instances:
        if name != ran and reduction.background.waiting(name):
            gained = _run_pass(reduction, name, _Settling(name), on_pass)
            if gained is not None:
                yield_[name] = (yield_.get(name) or 0.0) + gained


class _Settling:
    """Settling a pass's background work, run as a pass (its samples, time and yield)."""

    name: ClassVar[str] = "settle"

    def __init__(self, phase: str) -> None:
        self.phase = phase

    def run(self, problem: Problem) -> None:
        problem.settle(self.phase)


def _files_first(order: list[str]) -> list[str]:
    """File deletion (the cheapest per byte) first, after the trace cut (it re-traces)."""
    return sorted(order, key=lambda n: 0 if n == "trace" else 1 if n == "files" else 2)


def _result(reduction: Reduction, reason: str, rounds: int) -> ReductionResult:
    return ReductionResult(reduction.current, reason, rounds, tuple(reduction.history))
