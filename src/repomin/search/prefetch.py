"""Final runs in the idle slots of a settled search round.

With W slots, the last search round of a reduction is usually a fixpoint round that re-checks
a few survivors and leaves most slots idle; the final runs then follow as one more round. When
a batch of a deterministic (single-run) search leaves at least the planned number of final
runs idle, in a fixpoint round that has changed nothing yet (``Reduction.settled``), the final
runs of the incumbent start at once, in those slots. If the search ends with that tree, they
*are* the final runs; otherwise they are discarded and booked as one superseded attempt of the
phase that started them (their samples count in that phase: the accounting identities hold).

Why the final test stays exact: the final runs are a fixed number of fresh runs of one fixed
tree; whether they are used depends only on whether that tree becomes the payload, which the
outcomes of *other* trees' samples decide, never these runs' own outcomes, and the gate's
level is taken at validation, before any of them is read (``pipeline.validate_stage``). So
the used runs are distributed exactly as final runs started after the search, and the test's
error bound holds as before. At most one prefetch per incumbent; at most one per settled round
can be wasted (the round stops being settled when it changes the tree), and none runs under
``--max-runs`` (their samples are not budgeted) or under a flaky policy (its final runs are many
and its candidates take every slot).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from repomin.runners.base import Outcome
from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import Oracle
from repomin.sampling.parallel import map_samples
from repomin.tree import Tree


@dataclass(slots=True)
class _Pending:
    digest: str
    runs: int
    phase: str
    thread: threading.Thread | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    done: int = 0  # samples taken (each in the ledger already)
    running: int = 0  # samples not finished
    error: BaseException | None = None


class FinalPrefetch:
    """Starts the final runs of a settled incumbent early (``offer``); hands them to the final
    validation if the search ended with that tree (``take``), else books them as superseded."""

    def __init__(self, oracle: Oracle, ledger: Ledger, planned: Callable[[], int]) -> None:
        self._oracle = oracle
        self._ledger = ledger
        self._planned = planned
        self._current: _Pending | None = None
        self._stale: list[_Pending] = []
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)
        #: Prefetches used as final runs / discarded.
        self.used = 0
        self.discarded = 0

    def offer(self, tree: Tree, phase: str, spare: int) -> None:
        """A batch of ``phase`` leaves ``spare`` slots idle while ``tree`` is the incumbent."""
        runs = self._planned()
        if runs <= 0 or spare < runs or not self._oracle.design().prefetches_final():
            return
        pending = _Pending(tree.digest, runs, phase, running=runs)
        with self._lock:
            if self._current is not None:
                if self._current.digest == tree.digest:
                    return
                self._stale.append(self._current)
            self._current = pending
        pending.thread = threading.Thread(
            target=self._run, args=(pending, tree), name="repomin-final-ahead", daemon=True
        )
        pending.thread.start()

    def _run(self, pending: _Pending, tree: Tree) -> None:
        def one(i: int) -> Outcome:
            try:
                outcome = self._oracle.sample(tree, f"final-{i}", phase=None, budgeted=False)
                with self._lock:
                    pending.done += 1
                return outcome
            finally:
                with self._lock:
                    pending.running -= 1
                    self._finished.notify_all()

        try:
            pending.outcomes = map_samples(one, pending.runs, pending.runs)
        except BaseException as exc:  # interrupt, infrastructure: this prefetch is unusable
            pending.error = exc
        finally:
            with self._lock:
                pending.running = 0
                self._finished.notify_all()

    def make_room(self, needed: int, jobs: int) -> None:
        """Wait until ``needed`` more samples fit in ``jobs`` slots beside the final runs in
        flight (so ``--jobs`` holds: at most that many samples at once)."""
        with self._lock:
            while needed + self._running() > jobs and self._running():
                self._finished.wait()

    def running(self) -> int:
        """Final runs in flight now."""
        with self._lock:
            return self._running()

    def _running(self) -> int:
        return sum(p.running for p in [*self._stale, *([self._current] if self._current else [])])

    def take(self, tree: Tree, runs: int) -> list[Outcome] | None:
        """The final runs of ``tree`` if they were prefetched (all of them, without error);
        otherwise None. Every other prefetch is booked as a superseded attempt."""
        with self._lock:
            current, self._current = self._current, None
            stale, self._stale = self._stale, []
        found: list[Outcome] | None = None
        for pending in [*stale, *([current] if current is not None else [])]:
            if pending.thread is not None:
                pending.thread.join()
            usable = pending is current and pending.error is None
            if usable and pending.digest == tree.digest and pending.runs == runs:
                self.used += 1
                found = pending.outcomes
            else:
                self.discarded += 1
                self._ledger.rebook_samples(pending.phase, pending.done)
                self._ledger.attempt(pending.phase, "superseded")
        return found
