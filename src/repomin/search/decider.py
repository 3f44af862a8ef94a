"""The decider: every door from a pass's candidates to the oracle, and how many run at once.

:class:`Decider` owns the sample slots (``--jobs``) for the search. How it uses them depends on
the candidate design (``sampling/designs.py``), never on the pass. A learning search may hand
it whole batches of disjoint candidates (``try_batch``, ``batch_width``): every one is decided
and every compatible accepted one is folded into the new incumbent, verified by one more test
of the merge (``fold.py``). With a deterministic (single-run) command each candidate takes one
slot, and the candidates of one ``try_first`` call are folded the same way; with a flaky
command each candidate's samples run through a lane of one shared pool of slots, earlier
candidates first (``sampling/lanes.py``), and the candidates of one ``try_first`` call race in
proposal order (``chain_width``): the first accepted wins. Adoption goes through the
:class:`Incumbent`; final runs started early (``prefetch.py``) keep the slots they hold.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from repomin.sampling.accounting import Ledger
from repomin.sampling.lanes import Lane, evaluate_all_lanes, first_accepted_lanes
from repomin.sampling.oracle import Cancelled, Oracle, StopSearch, Verdict
from repomin.sampling.parallel import evaluate_all, first_accepted
from repomin.search.fold import (
    AheadFinal,
    Candidate,
    Decide,
    Evaluate,
    J,
    fold_batch,
    fold_round,
)
from repomin.search.incumbent import Incumbent
from repomin.search.problem import Batch
from repomin.tree import Tree


class Labels:
    """Candidate labels (``<phase>-c<n>``), unique across threads."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def next(self, phase: str) -> str:
        with self._lock:
            self._count += 1
            return f"{phase}-c{self._count}"


class Decider:
    """Decides candidates against the incumbent through the oracle (see the module doc)."""

    def __init__(
        self,
        incumbent: Incumbent,
        *,
        oracle: Oracle,
        ledger: Ledger,
        jobs: int,
        labels: Labels,
        ahead: AheadFinal | None = None,
    ) -> None:
        self.incumbent = incumbent
        self.oracle = oracle
        self.ledger = ledger
        self.jobs = max(1, jobs)
        self.labels = labels
        #: Final runs started in a settled round's idle slots (``prefetch.py``).
        self.ahead = ahead
        #: Trees evaluated speculatively by folding rounds (never twice).
        self._speculated: set[str] = set()
        self._speculated_lock = threading.Lock()
        #: A fixpoint round after the first that has not changed the tree yet: idle slots may
        #: start the final runs of the incumbent (the driver says so, ``settle_round``).
        self._settled = False

    # -- what folding (``fold.py``) uses --------------------------------------------------------

    @property
    def current(self) -> Tree:
        return self.incumbent.current

    def next_label(self, phase: str) -> str:
        return self.labels.next(phase)

    def adopt(self, phase: str, description: str, tree: Tree, verdict: Verdict) -> None:
        self.incumbent.adopt(phase, description, tree, verdict)

    def claim(self, tree: Tree) -> bool:
        """May an idle slot run ``tree`` speculatively? Once per tree, and never a decided one."""
        with self._speculated_lock:
            if tree.digest in self._speculated or self.oracle.cached(tree) is not None:
                return False
            self._speculated.add(tree.digest)
            return True

    def decide_all(self, jobs: Sequence[J], decide: Decide[J]) -> list[Verdict | None]:
        """Every job at once within the slots: one slot each for single runs, one lane each
        of a shared pool for sequential tests (``lanes.py``: at most ``jobs`` samples)."""
        if self.oracle.design().lanes():
            return evaluate_all_lanes(jobs, decide, self.jobs)
        return evaluate_all(jobs, lambda job, cancel: decide(job, cancel, None), self.jobs)

    # -- widths ---------------------------------------------------------------------------------

    def settle_round(self, settled: bool) -> None:
        """The driver: is this a fixpoint round after the first with no change yet?"""
        self._settled = settled

    @property
    def batch_width(self) -> int:
        """Disjoint candidates a learning search may propose at once (``try_batch``): one per
        slot for a deterministic (single-run) command; a flaky command's candidates go one at
        a time, each with its samples in parallel."""
        return self.oracle.design().batch_width(self.jobs)

    @property
    def chain_width(self) -> int:
        """Candidates of one ``try_first`` call a flaky command keeps in flight (their samples
        share ``jobs`` slots, earlier candidates first: ``lanes.py``), so a search that
        proposes one candidate at a time may hand ``try_first`` the proposals it would make
        next if each before it were rejected; 1 for a deterministic command (it batches)."""
        return self.oracle.design().chain_width(self.jobs)

    @property
    def miss_rate(self) -> float:
        """How often the oracle rejects a candidate as good as the incumbent
        (``SamplingPolicy.miss_rate``: 0 for a deterministic failure)."""
        return self.oracle.policy.miss_rate()

    # -- deciding -------------------------------------------------------------------------------

    def known(self, tree: Tree) -> bool | None:
        verdict = self.oracle.cached(tree)
        return None if verdict is None else verdict.accepted

    def probe(self, phase: str, tree: Tree) -> bool:
        """Decide ``tree`` without adopting it (a scratch search: ``passes.restart``). Counted
        as rejected, or as superseded when accepted (accepted, not adopted); the verdict is
        cached, so proposing the tree through ``try_first`` afterwards costs no further run."""
        verdict = self.oracle.evaluate(tree, phase, self.next_label(phase))
        self.ledger.attempt(phase, "superseded" if verdict.accepted else "rejected")
        return verdict.accepted

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        """Decide every candidate against the incumbent and fold all accepted ones into one
        new incumbent (``fold.fold_batch``, which says what the batch's ``ahead``, ``combine``
        and ``spare`` do). Per candidate True (adopted), False (rejected or a no-op) or None
        (accepted but not adopted, or not decided)."""
        width = len(batch.candidates)
        if self.ahead is not None:
            self.ahead.make_room(width, self.jobs)
            if self._settled:
                self.ahead.offer(self.current, phase, self.jobs - width)
        return fold_batch(self, phase, batch, self._evaluator(phase))

    def _evaluator(self, phase: str) -> Evaluate:
        def evaluate(
            candidate: Candidate, cancel: threading.Event, lane: Lane[bool] | None = None
        ) -> Verdict | None:
            label = self.next_label(phase)
            try:
                return self.oracle.evaluate(candidate.tree, phase, label, cancel, lane=lane)
            except Cancelled:
                return None
            except StopSearch:
                self.ledger.attempt(phase, "aborted")
                raise

        return evaluate

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        """Decide candidates in proposal order; adopt the first accepted (folding the other
        compatible accepted ones in single-run mode) and return its position."""
        if self.ahead is not None:
            self.ahead.make_room(self.jobs, self.jobs)
        incumbent = self.current
        ledger = self.ledger

        def live() -> Iterable[Candidate]:
            for pos, (tree, description) in enumerate(candidates):
                if not tree.reduces(incumbent):
                    ledger.attempt(phase, "no_op")
                    continue
                yield Candidate(pos, tree, description)

        evaluate = self._evaluator(phase)
        design = self.oracle.design()
        if not design.lanes() and self.batch_width > 1:  # single runs: fold the round
            return fold_round(self, phase, live(), evaluate)
        width = self.chain_width

        def won(v: Verdict | None) -> bool:
            return v is not None and v.accepted

        if width > 1:
            race = first_accepted_lanes(live(), evaluate, won, width, lambda c: c.tree.digest)
        else:
            race = first_accepted(live(), evaluate, won, 1)
        for judged in race.results:
            if judged.status == "accepted":
                continue
            verdict = judged.result
            if verdict is not None and not verdict.accepted:
                ledger.attempt(phase, "rejected")
            else:
                ledger.attempt(phase, "superseded")
        if race.winner_candidate is None or race.winner_result is None:
            return None
        winner = race.winner_candidate
        ledger.attempt(phase, "accepted")
        self.adopt(phase, winner.description, winner.tree, race.winner_result)
        return winner.position


__all__: Sequence[str] = ("Decider", "Labels")
