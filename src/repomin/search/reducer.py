"""The reduction driver: runs registered passes to a fixpoint through one :class:`Reduction`.

:class:`Reduction` is the problem object passes see. It is the only place that adopts a new
incumbent, records attempts by category, logs accepted mutations as events, and (in single-run
mode) re-checks the incumbent, backtracking through the accepted history at the first
inconsistency. Stopping early (budget, Ctrl-C) leaves the best tree so far in ``current``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from repomin.sampling.accounting import Ledger
from repomin.sampling.lanes import Lane, first_accepted_lanes
from repomin.sampling.oracle import Cancelled, Oracle, StopSearch, Verdict
from repomin.sampling.parallel import first_accepted, in_background
from repomin.search.fold import AheadFinal, Evaluate, fold_batch, fold_round
from repomin.search.problem import Combine, Pass, Problem, Spare, Speculate
from repomin.tree import Tree

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Mutation:
    """One accepted candidate, as the session journal and the progress display see it."""

    phase: str
    description: str
    tree: Tree
    verdict: Verdict


class Background:
    """Work the passes leave running beside the search (``Problem.later``), one piece per
    phase: started in a thread of its own when ``beside()`` says so (the reduction: with batch
    slots), otherwise done at once; finished when its phase is settled -- by the pass itself,
    or by the driver after the next pass that draws samples (:func:`run_passes`)."""

    def __init__(self, beside: Callable[[], bool]) -> None:
        self._beside = beside
        self._waiting: dict[str, tuple[Future[Any], Callable[[Any], None]]] = {}

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        self.settle(phase)
        if self._beside():
            self._waiting[phase] = (in_background(work), finish)
        else:
            finish(work())

    def settle(self, phase: str, propose: bool = True) -> None:
        job = self._waiting.pop(phase, None)
        if job is None:
            return
        result = job[0].result()
        if propose:
            job[1](result)

    def waiting(self, phase: str) -> bool:
        """Has ``phase`` work running beside the search, not yet settled?"""
        return phase in self._waiting

    def drop(self) -> None:
        """Wait for every piece of work and discard its result (the search stopped)."""
        for phase in list(self._waiting):
            self.settle(phase, propose=False)


class Reduction:
    """The reduction problem: incumbent + the one door to the oracle for passes."""

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
        self._current = initial
        self.oracle = oracle
        self.ledger = ledger
        self.jobs = max(1, jobs)
        self._protected = protected
        self.on_accept = on_accept
        self.on_revert = on_revert
        #: Accepted trees in order, the (trusted) source first; ``initial`` is the last one.
        self.history: list[Tree] = list(history) or [initial]
        if self.history[-1].digest != initial.digest:
            self.history.append(initial)
        self._label = 0
        self._lock = threading.Lock()
        #: Trees evaluated speculatively by folding rounds (never twice).
        self.speculated: set[str] = set()
        #: A fixpoint round after the first that has not changed the tree yet (``run_passes``).
        self.settled = False
        #: Final runs started in a settled round's idle slots (``prefetch.py``).
        self.ahead = ahead
        #: Work a pass left running beside the search (``later``): in the background only
        #: with batch slots, where the samples of the next pass keep the slots busy meanwhile.
        self.background = Background(lambda: self.batch_width > 1)

    @property
    def current(self) -> Tree:
        return self._current

    def protected(self, path: str) -> bool:
        return self._protected(path)

    @property
    def runs(self) -> int:
        return self.oracle.samples

    def note(self, phase: str, description: str, **fields: Any) -> None:
        self.ledger.event(phase, description, decision="info", **fields)

    def known(self, tree: Tree) -> bool | None:
        verdict = self.oracle.cached(tree)
        return None if verdict is None else verdict.accepted

    def after(self, k: int) -> list[Tree]:
        return []  # the driver proposes nothing after a pass

    # -- work beside the search (``Background``) --------------------------------------------

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        self.background.later(phase, work, finish)

    def settle(self, phase: str, propose: bool = True) -> None:
        self.background.settle(phase, propose)

    # -- deciding candidates (the search layer: ``fold.py``, ``sampling/lanes.py``) --------

    def next_label(self, phase: str) -> str:
        return self._next_label(phase)

    def adopt(self, phase: str, description: str, tree: Tree, verdict: Verdict) -> None:
        """Make ``tree`` the incumbent (logged with ``verdict``'s evidence)."""
        self._adopt(phase, description, tree, verdict)

    def _next_label(self, phase: str) -> str:
        with self._lock:
            self._label += 1
            return f"{phase}-c{self._label}"

    @property
    def batch_width(self) -> int:
        """Disjoint candidates the learning search may propose at once (``try_batch``): one per
        slot for a deterministic (single-run) command; a flaky command's candidates go one at
        a time, each with its samples in parallel."""
        return self.jobs if self.oracle.policy.single else 1

    @property
    def miss_rate(self) -> float:
        """How often the oracle rejects a candidate as good as the incumbent
        (``SamplingPolicy.miss_rate``: 0 for a deterministic failure)."""
        return self.oracle.policy.miss_rate()

    @property
    def chain_width(self) -> int:
        """Candidates of one ``try_first`` call a flaky command keeps in flight (their samples
        share ``jobs`` slots, earlier candidates first: ``lanes.py``), so a search that
        proposes one candidate at a time may hand ``try_first`` the proposals it would make
        next if each before it were rejected; 1 for a deterministic command (it batches)."""
        return 1 if self.oracle.policy.single else self.oracle.policy.race_width(self.jobs)

    def try_batch(
        self,
        phase: str,
        candidates: Sequence[tuple[Tree, str]],
        ahead: Speculate | None = None,
        combine: Combine | None = None,
        spare: Spare | None = None,
    ) -> list[bool | None]:
        """Decide every candidate against the incumbent and fold all accepted ones into one
        new incumbent (``fold.fold_batch``, which says what ``ahead``, ``combine`` and
        ``spare`` do). Per candidate True (adopted), False (rejected or a no-op) or None
        (accepted but not adopted, or not decided)."""
        if self.ahead is not None:
            self.ahead.make_room(len(candidates), self.jobs)
            if self.settled:
                self.ahead.offer(self._current, phase, self.jobs - len(candidates))
        return fold_batch(self, phase, candidates, self._evaluator(phase), ahead, combine, spare)

    def probe(self, phase: str, tree: Tree) -> bool:
        """Decide ``tree`` without adopting it (a scratch search: ``passes.restart``). Counted
        as rejected, or as superseded when accepted (accepted, not adopted); the verdict is
        cached, so proposing the tree through ``try_first`` afterwards costs no further run."""
        verdict = self.oracle.evaluate(tree, phase, self._next_label(phase))
        self.ledger.attempt(phase, "superseded" if verdict.accepted else "rejected")
        return verdict.accepted

    def _evaluator(self, phase: str) -> Evaluate:
        def evaluate(
            item: tuple[int, Tree, str], cancel: threading.Event, lane: Lane[bool] | None = None
        ) -> Verdict | None:
            _, tree, _ = item
            label = self._next_label(phase)
            try:
                return self.oracle.evaluate(tree, phase, label, cancel, lane=lane)
            except Cancelled:
                return None
            except StopSearch:
                self.ledger.attempt(phase, "aborted")
                raise

        return evaluate

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        if self.ahead is not None:
            self.ahead.make_room(self.jobs, self.jobs)
        incumbent = self._current
        positions: list[int] = []

        def live() -> Iterable[tuple[int, Tree, str]]:
            for pos, (tree, description) in enumerate(candidates):
                if tree.digest == incumbent.digest or (
                    tree.byte_count >= incumbent.byte_count and len(tree) >= len(incumbent)
                ):
                    self.ledger.attempt(phase, "no_op")
                    continue
                positions.append(pos)
                yield pos, tree, description

        evaluate = self._evaluator(phase)
        # Concurrency stays at ``jobs`` processes. With several slots and single runs, every
        # compatible accepted candidate is folded (fold.py); under a flaky policy a candidate's
        # samples run in parallel and the slots its sequential test leaves idle run samples of
        # the next candidates (lanes.py); the first accepted in proposal order wins either way.
        if self.oracle.policy.single and self.jobs > 1:
            return fold_round(self, phase, live(), evaluate)
        width = self.chain_width

        def won(v: Verdict | None) -> bool:
            return v is not None and v.accepted

        if width > 1:
            race = first_accepted_lanes(live(), evaluate, won, width, lambda c: c[1].digest)
        else:
            race = first_accepted(live(), evaluate, won, 1)
        for _, _, verdict, status in race.results:
            if status == "accepted":
                continue
            if verdict is not None and not verdict.accepted:
                self.ledger.attempt(phase, "rejected")
            else:
                self.ledger.attempt(phase, "superseded")
        if race.winner_candidate is None or race.winner_result is None:
            return None
        pos, tree, description = race.winner_candidate
        self.ledger.attempt(phase, "accepted")
        self._adopt(phase, description, tree, race.winner_result)
        return pos

    def _adopt(self, phase: str, description: str, tree: Tree, verdict: Verdict) -> None:
        before = self._current
        self.ledger.add_removed(
            phase, before.file_count - tree.file_count, before.byte_count - tree.byte_count
        )
        self._current = tree
        self.history.append(tree)
        self.ledger.track_size(tree.file_count, tree.byte_count)
        self.ledger.event(
            phase,
            description,
            decision="accepted",
            files=tree.file_count,
            bytes=tree.byte_count,
            **verdict.evidence(),
        )
        if self.on_accept is not None:
            self.on_accept(Mutation(phase, description, tree, verdict))
        self.oracle.adopted(tree, verdict, phase)  # rate evidence and re-checks (flaky)
        every = self.oracle.config.incumbent_check_every
        if self.oracle.policy.single and every and self.ledger.accepted % every == 0:
            self._check_incumbent(phase)

    def _check_incumbent(self, phase: str) -> None:
        if self.oracle.check_incumbent(self._current, phase):
            return
        self.ledger.event(
            phase,
            f"incumbent check failed: switching to the {self.oracle.policy.mode.value} "
            "sequential design (same threshold) and re-testing the incumbent",
            decision="inconsistency",
        )
        if len(self.history) > 1 and not self._retest(phase, len(self.history) - 1):
            self.backtrack(phase)

    def _retest(self, phase: str, position: int) -> bool:
        """Re-decide ``history[position]`` on fresh runs under the current design."""
        tree = self.history[position]
        verdict = self.oracle.evaluate(tree, phase, self._next_label(phase), fresh=True)
        self.ledger.event(
            phase,
            f"backtracking: re-test of accepted tree {position} of {len(self.history) - 1}",
            decision="accepted" if verdict.accepted else "rejected",
            files=tree.file_count,
            bytes=tree.byte_count,
            **verdict.evidence(),
        )
        return verdict.accepted

    def backtrack(self, phase: str) -> Tree:
        """The incumbent is not trusted: bisect the accepted history for the last tree that
        passes a fresh test under the current (exact) design, make it the incumbent and revoke
        every later one. The source (``history[0]``) is trusted without a test. The bisection
        assumes a bad edit spoils every later tree; when that is not so it loses only
        reduction (edits are re-proposed from the restored tree), never soundness: the
        exported payload is still decided by its own final test."""
        good, bad = 0, len(self.history) - 1
        while bad - good > 1:
            middle = (good + bad) // 2
            if self._retest(phase, middle):
                good = middle
            else:
                bad = middle
        revoked = self.history[good + 1 :]
        del self.history[good + 1 :]
        self._current = self.history[-1]
        self.ledger.track_size(self._current.file_count, self._current.byte_count)
        self.oracle.revoke(revoked, "revoked-by-backtracking")
        self.ledger.event(
            phase,
            f"backtracked to accepted tree {good}; {len(revoked)} later tree(s) revoked",
            decision="info",
            files=self._current.file_count,
            bytes=self._current.byte_count,
        )
        if self.on_revert is not None:
            self.on_revert(self._current)
        return self._current


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
    round's end. ``on_pass`` sees every pass as it starts (the live display's stage);
    ``backtrack_first`` (a failed payload gate) backtracks the incumbent first."""
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
                reduction.settled = rounds > 1 and all(v is None for v in yield_.values())
                drawn = reduction.oracle.samples
                yield_[n] = _run_pass(reduction, n, instances[n], on_pass)
                if reduction.oracle.samples > drawn:  # so it ran beside samples
                    _settle(reduction, instances, yield_, n, on_pass)
            _settle(reduction, instances, yield_, None, on_pass)
            progress = any(v is not None for v in yield_.values())
            reduction.settled = rounds > 1 and not progress
            if not progress:
                progress = any(
                    _run_pass(reduction, n, instances[n], on_pass) is not None for n in last_resort
                )
            reduction.settled = False
            if not progress:
                if not _retest_rejected(reduction, order[0]):
                    return _result(reduction, "fixpoint", rounds)
                continue
            # Structural passes keep their relative order; ties keep the schedule order.
            order.sort(key=lambda n: (-(yield_.get(n) or 0.0), schedule.index(n)))
            order = _files_first(order)
    except StopSearch as stop:
        return _result(reduction, stop.reason, rounds)
    finally:  # a stopped search waits for background work and proposes nothing from it
        reduction.background.drop()
    return _result(reduction, "max_rounds", rounds)


def _retest_rejected(reduction: Reduction, phase: str) -> bool:
    """A flaky oracle can reject a good candidate: at its fixpoint (where the tree is small and
    candidates are few) every rejected tree gets one more test, once. False: a fixpoint."""
    oracle = reduction.oracle
    if oracle.cache.retesting or not oracle.policy.flaky:
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
