"""The incumbent: the tree the search stands on, the accepted trees before it, and trust in them.

:class:`Incumbent` is the only place that makes a tree the incumbent. Adopting one records it
(the ledger's removed bytes, size history and an ``accepted`` event with the verdict's
evidence), tells the session (``on_accept``) and the oracle (rate evidence and re-checks of a
flaky incumbent), and in single-run mode re-checks it every ``--incumbent-check-every``
acceptances. A failed re-check switches the oracle to an exact sequential design and
backtracks: the accepted history is bisected for the last tree that passes a fresh test, and
every later one is revoked. Nothing here decides how a candidate is decided or how many run at
once (``search/decider.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import Oracle, Verdict
from repomin.tree import Tree


@dataclass(frozen=True, slots=True)
class Mutation:
    """One accepted candidate, as the session journal and the progress display see it."""

    phase: str
    description: str
    tree: Tree
    verdict: Verdict


class Incumbent:
    """The current tree and the accepted history (the trusted source first)."""

    def __init__(
        self,
        initial: Tree,
        *,
        oracle: Oracle,
        ledger: Ledger,
        label: Callable[[str], str],
        history: Sequence[Tree] = (),
        on_accept: Callable[[Mutation], None] | None = None,
        on_revert: Callable[[Tree], None] | None = None,
    ) -> None:
        self._current = initial
        self._oracle = oracle
        self._ledger = ledger
        self._label = label
        self._on_accept = on_accept
        self._on_revert = on_revert
        #: Accepted trees in order, the (trusted) source first; ``initial`` is the last one.
        self._history: list[Tree] = list(history) or [initial]
        if self._history[-1].digest != initial.digest:
            self._history.append(initial)

    @property
    def current(self) -> Tree:
        return self._current

    @property
    def history(self) -> Sequence[Tree]:
        """The accepted trees in order, the source first, the incumbent last."""
        return tuple(self._history)

    def adopt(self, phase: str, description: str, tree: Tree, verdict: Verdict) -> None:
        """Make ``tree`` the incumbent (logged with ``verdict``'s evidence)."""
        before = self._current
        self._ledger.add_removed(
            phase, before.file_count - tree.file_count, before.byte_count - tree.byte_count
        )
        self._current = tree
        self._history.append(tree)
        self._ledger.track_size(tree.file_count, tree.byte_count)
        self._ledger.event(
            phase,
            description,
            decision="accepted",
            files=tree.file_count,
            bytes=tree.byte_count,
            **verdict.evidence(),
        )
        if self._on_accept is not None:
            self._on_accept(Mutation(phase, description, tree, verdict))
        self._oracle.adopted(tree, verdict, phase)  # rate evidence and re-checks (flaky)
        every = self._oracle.config.incumbent_check_every
        due = bool(every) and self._ledger.accepted % every == 0
        if due and self._oracle.design().checks_incumbent():
            self._check(phase)

    def _check(self, phase: str) -> None:
        if self._oracle.check_incumbent(self._current, phase):
            return
        self._ledger.event(
            phase,
            f"incumbent check failed: switching to the {self._oracle.policy.mode.value} "
            "sequential design (same threshold) and re-testing the incumbent",
            decision="inconsistency",
        )
        if len(self._history) > 1 and not self._retest(phase, len(self._history) - 1):
            self.backtrack(phase)

    def _retest(self, phase: str, position: int) -> bool:
        """Re-decide ``history[position]`` on fresh runs under the current design."""
        tree = self._history[position]
        verdict = self._oracle.evaluate(tree, phase, self._label(phase), fresh=True)
        self._ledger.event(
            phase,
            f"backtracking: re-test of accepted tree {position} of {len(self._history) - 1}",
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
        good, bad = 0, len(self._history) - 1
        while bad - good > 1:
            middle = (good + bad) // 2
            if self._retest(phase, middle):
                good = middle
            else:
                bad = middle
        revoked = self._history[good + 1 :]
        del self._history[good + 1 :]
        self._current = self._history[-1]
        self._ledger.track_size(self._current.file_count, self._current.byte_count)
        self._oracle.revoke(revoked, "revoked-by-backtracking")
        self._ledger.event(
            phase,
            f"backtracked to accepted tree {good}; {len(revoked)} later tree(s) revoked",
            decision="info",
            files=self._current.file_count,
            bytes=self._current.byte_count,
        )
        if self._on_revert is not None:
            self._on_revert(self._current)
        return self._current


__all__: Sequence[str] = ("Incumbent", "Mutation")
