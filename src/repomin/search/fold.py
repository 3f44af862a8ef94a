"""Folding: several accepted candidates into one new incumbent, so every slot counts.

:func:`fold_batch` decides a batch of disjoint candidates (a learning search's; with a
deterministic command, or a flaky one from 4 slots) through the decider's ``decide_all`` and
adopts the merge of the accepted ones only when one more test of the merged tree accepts it.
With ``--jobs N`` and a deterministic (single-run) oracle, :func:`fold_round` evaluates the
candidates of one ``try_first`` call with N in flight and, instead of keeping only the first
accepted one, folds *every* compatible accepted candidate into one new incumbent: a three-way
merge against the incumbent (deletions unite, equal changes agree, two edits of one text file
merge when their line ranges are apart). Each candidate is run *rebased* onto everything
folded when it was dispatched, so in a run of acceptances each run checks the accumulated
tree; when the last folded candidate did not run on top of all the others, one more run of the
merged tree verifies it before adoption, and if that run rejects, only the first accepted
candidate is adopted. Idle slots at the end of a round run that verification and re-run
rejections that ran on an older merge (the next round finds them in the cache).

``try_first`` keeps its meaning: it returns the position of the first accepted candidate, and
the new incumbent contains it (and possibly more, which passes see in ``problem.current``).
"""

from __future__ import annotations

import contextlib
import difflib
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from repomin.sampling.oracle import Cancelled, StopSearch, Verdict
from repomin.sampling.parallel import Folded, fold_accepted
from repomin.search.problem import Batch, Spare, Speculate
from repomin.tree import Entry, Tree

if TYPE_CHECKING:
    from repomin.sampling.accounting import Ledger
    from repomin.sampling.lanes import Lane
    from repomin.sampling.oracle import Oracle

#: A round folds at most this many accepted candidates per slot.
FOLD_LIMIT = 8


@dataclass(frozen=True, slots=True)
class Candidate:
    """One proposal of a ``try_first`` call or a batch."""

    #: Its place among the caller's candidates (what ``try_first`` returns).
    position: int
    tree: Tree
    description: str


J = TypeVar("J")
#: How ``decide_all`` decides one job: given its cancel event and lane (None: its own slots).
Decide = Callable[[J, threading.Event, "Lane[bool] | None"], "Verdict | None"]


class Evaluate(Protocol):
    """How ``try_first`` decides one candidate (``lane``: the slots it shares, flaky races)."""

    def __call__(
        self, candidate: Candidate, cancel: threading.Event, lane: Lane[bool] | None = None
    ) -> Verdict | None: ...


class AheadFinal(Protocol):
    """Final runs started early (``prefetch.FinalPrefetch``)."""

    def offer(self, tree: Tree, phase: str, spare: int) -> None: ...
    def make_room(self, needed: int, jobs: int) -> None: ...
    def running(self) -> int: ...


class Folding(Protocol):
    """What folding needs of the search (:class:`~repomin.search.decider.Decider`)."""

    oracle: Oracle
    ledger: Ledger
    jobs: int
    ahead: AheadFinal | None

    @property
    def current(self) -> Tree: ...

    def next_label(self, phase: str) -> str: ...

    def adopt(self, phase: str, description: str, tree: Tree, verdict: Verdict) -> None: ...

    def claim(self, tree: Tree) -> bool:
        """May an idle slot run ``tree`` speculatively (once per tree, never a decided one)?"""
        ...

    def decide_all(self, jobs: Sequence[J], decide: Decide[J]) -> list[Verdict | None]:
        """``decide`` every job at once within the sample slots (none cancelled by another's
        verdict; order kept): one slot each for single runs, shared lanes for sequential
        tests."""
        ...


#: A candidate's change against the incumbent: path -> new entry, or None for a deletion.
Delta = dict[str, Entry | None]


@dataclass(frozen=True, slots=True)
class Rebased:
    """A candidate of a folding round as it runs: rebased onto everything folded when it was
    dispatched (``candidate.tree`` is the rebased tree)."""

    candidate: Candidate
    #: Its own change against the incumbent (what folding it in adds to the merge).
    delta: Delta
    #: How many candidates were folded when it was dispatched.
    folded: int


#: The folded candidates of a round, in proposal order.
_Kept = list[Folded[Candidate, Rebased, "Verdict | None"]]

#: Files above this size are never merged line by line (two edits of one big file conflict).
TEXT_MERGE_LIMIT = 256 * 1024


def tree_delta(base: Tree, tree: Tree) -> Delta:
    """What ``tree`` changes in ``base``: new or modified entries, and deletions (None)."""
    delta: Delta = {}
    for path, entry in tree.entries.items():
        old = base.entries.get(path)
        if old is not entry and old != entry:
            delta[path] = entry
    for path in base.entries:
        if path not in tree.entries:
            delta[path] = None
    return delta


class TreeMerge:
    """The accumulated change of the candidates folded so far, against one incumbent.

    A three-way merge against the incumbent: deletions unite, equal changes are compatible,
    and two edits of one text file merge when their changed line ranges (in the incumbent's
    numbering) neither overlap nor touch an insertion; anything else conflicts.
    """

    def __init__(self, base: Tree) -> None:
        self.base = base
        self.delta: Delta = {}
        self.folded = 0

    def combine(self, delta: Delta) -> Delta | None:
        """The accumulated change plus ``delta``, or None on a conflict."""
        out = dict(self.delta)
        for path, value in delta.items():
            if path not in out or out[path] == value:
                out[path] = value
                continue
            mine, old = out[path], self.base.entries.get(path)
            if mine is None or value is None or old is None:
                return None
            if not (old.kind == mine.kind == value.kind == "file") or mine.mode != value.mode:
                return None
            data = merge_text(old.data, mine.data, value.data)
            if data is None:
                return None
            out[path] = mine.with_data(data)
        return out

    def add(self, delta: Delta) -> bool:
        combined = self.combine(delta)
        if combined is None:
            return False
        self.delta = combined
        self.folded += 1
        return True

    def tree(self, delta: Delta | None = None) -> Tree:
        """The incumbent with ``delta`` (default: the accumulated change) applied."""
        # Derived from the incumbent: counts and digest change per changed path only.
        return self.base.with_changes(self.delta if delta is None else delta)


def merge_text(base: bytes, a: bytes, b: bytes) -> bytes | None:
    """Line-level three-way merge of two edits of ``base``; None when they overlap."""
    if max(len(base), len(a), len(b)) > TEXT_MERGE_LIMIT:
        return None
    lines = base.splitlines(keepends=True)
    edits_a = _edits(lines, a.splitlines(keepends=True))
    edits_b = _edits(lines, b.splitlines(keepends=True))
    for i1, i2, _ in edits_a:
        for j1, j2, _ in edits_b:
            if max(i1, j1) < min(i2, j2) or (i1 == i2 and j1 <= i1 <= j2):
                return None
            if j1 == j2 and i1 <= j1 <= i2:
                return None
    out = list(lines)
    for i1, i2, repl in sorted(edits_a + edits_b, key=lambda e: (e[0], e[1]), reverse=True):
        out[i1:i2] = repl
    return b"".join(out)


def _edits(base: list[bytes], new: list[bytes]) -> list[tuple[int, int, list[bytes]]]:
    matcher = difflib.SequenceMatcher(None, base, new, autojunk=False)
    return [(i1, i2, new[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def fold_round(
    reduction: Folding,
    phase: str,
    items: Iterable[Candidate],
    evaluate: Callable[[Candidate, threading.Event], Verdict | None],
) -> int | None:
    """One ``try_first`` round with folding; adopts the result through ``reduction``."""
    folder = _RoundFolder(reduction, phase, evaluate)
    jobs = reduction.jobs
    fold = fold_accepted(items, folder, jobs, FOLD_LIMIT * jobs)
    kept, adopted, verdict = _verified(reduction, phase, folder.merge, fold.accepted)
    folded = {k.order for k in kept}
    ledger = reduction.ledger
    for judged in fold.results:
        if judged.status == "accepted" and judged.order in folded:
            ledger.attempt(phase, "accepted")
        elif judged.status == "rejected":
            ledger.attempt(phase, "rejected")
        else:
            ledger.attempt(phase, "superseded")
    if adopted is None or verdict is None:
        return None
    if len(kept) == 1:
        description = kept[0].candidate.description
    else:
        description = _fold_description([k.candidate.description for k in kept])
    reduction.adopt(phase, description, adopted, verdict)
    return kept[0].candidate.position


class _RoundFolder:
    """The steps of one :func:`fold_round` (``parallel.FoldSteps``) and what they share: the
    merge of the candidates folded so far against the incumbent, and the rejections (which the
    spare slots re-run on the merge when they ran on an older one)."""

    def __init__(
        self,
        reduction: Folding,
        phase: str,
        evaluate: Callable[[Candidate, threading.Event], Verdict | None],
    ) -> None:
        self.reduction = reduction
        self.phase = phase
        self.decide = evaluate
        self.incumbent = reduction.current
        self.merge = TreeMerge(self.incumbent)
        self.rejected: list[Rebased] = []
        self.last_folded = -1
        self.lock = threading.Lock()

    def prepare(self, candidate: Candidate) -> Rebased | None:
        """``candidate`` rebased onto everything folded so far, or None when it conflicts."""
        delta = tree_delta(self.incumbent, candidate.tree)
        combined = self.merge.combine(delta)
        if combined is None:
            return None
        if self.merge.delta:
            candidate = replace(candidate, tree=self.merge.tree(combined))
        return Rebased(candidate, delta, self.merge.folded)

    def fold(self, rebased: Rebased) -> bool:
        if not self.merge.add(rebased.delta):
            return False
        self.last_folded = rebased.candidate.position
        return True

    def evaluate(self, rebased: Rebased, cancel: threading.Event) -> Verdict | None:
        """Decide a rebased candidate (in a slot's thread), remembering a rejection."""
        verdict = self.decide(rebased.candidate, cancel)
        if verdict is not None and not verdict.accepted:
            with self.lock:
                self.rejected.append(rebased)
        return verdict

    def accepted(self, verdict: Verdict | None) -> bool:
        return verdict is not None and verdict.accepted

    def spare(self) -> Callable[[], object] | None:
        """Work for an idle slot: the merge's verification, or a stale rejection rebased."""
        merge, reduction = self.merge, self.reduction
        wanted = [merge.tree()] if merge.folded > 1 else []
        with self.lock:
            stale = [
                r
                for r in self.rejected
                if r.candidate.position > self.last_folded and r.folded < merge.folded
            ]
        for r in stale:
            combined = merge.combine(r.delta)
            if combined is not None:
                wanted.append(merge.tree(combined))
        for tree in wanted:
            if reduction.claim(tree):
                return self.speculation(tree)
        return None

    def speculation(self, tree: Tree) -> Callable[[], object]:
        reduction, phase = self.reduction, self.phase

        def run() -> None:
            with contextlib.suppress(Cancelled, StopSearch):
                reduction.oracle.evaluate(tree, phase, reduction.next_label(phase))

        return run


def _verified(
    reduction: Folding, phase: str, merge: TreeMerge, kept: _Kept
) -> tuple[_Kept, Tree | None, Verdict | None]:
    """The folded candidates to adopt, their tree and its verdict: the last one's run when it
    ran on top of all the others, else one more run of the merge; if that rejects, only the
    first accepted candidate."""
    if kept and kept[-1].prepared.folded == len(kept) - 1:
        # The last folded candidate ran on top of all the others: that run verified the merge.
        return kept, kept[-1].prepared.candidate.tree, cast(Verdict, kept[-1].result)
    if not kept:
        return kept, None, None
    adopted = merge.tree()
    verdict = reduction.oracle.evaluate(adopted, phase, reduction.next_label(phase))
    if not verdict.accepted:
        kept = kept[:1]
        adopted, verdict = kept[0].prepared.candidate.tree, cast(Verdict, kept[0].result)
    return kept, adopted, verdict


def _fold_description(descriptions: Sequence[str]) -> str:
    """The adopted description of several folded candidates."""
    names = "; ".join(descriptions[:3])
    more = f"; and {len(descriptions) - 3} more" if len(descriptions) > 3 else ""
    return f"fold of {len(descriptions)} candidates: {names}{more}"


def fold_batch(
    reduction: Folding, phase: str, batch: Batch, evaluate: Evaluate
) -> list[bool | None]:
    """Decide a batch of candidates that can succeed together, all against the incumbent, and
    fold every accepted one into one new incumbent.

    Every candidate is evaluated (``--jobs`` in flight, none cancelled by another's verdict).
    The accepted ones are merged in proposal order (:class:`TreeMerge`; a conflicting one is
    left out); a merge of several is adopted only after one more run of the merged tree
    accepts it (a cache hit when that tree was decided before), otherwise only the first
    accepted candidate is adopted. ``combine(positions)``, when given, builds the tree of
    several candidates together (else the three-way merge does). ``ahead(merged, outcomes)``
    gives the trees the caller will
    propose next if the merge is adopted: they run speculatively in the check's round (their
    verdicts wait in the cache; samples of the phase, not attempts). Returns per candidate
    True (in the new incumbent), False (rejected, or a no-op) or None (accepted but not
    adopted, or not decided).
    """
    candidates, ahead, combine, spare = batch.candidates, batch.ahead, batch.combine, batch.spare
    incumbent = reduction.current
    ledger = reduction.ledger
    items = _batch_items(ledger, phase, candidates, incumbent)
    outcomes: list[bool | None] = [False] * len(candidates)
    verdicts = _with_spare(reduction, phase, items, evaluate, spare)
    merge = TreeMerge(incumbent)
    kept = _merge_accepted(merge, incumbent, items, verdicts, outcomes)
    merged = incumbent
    check: Verdict | None = None
    if len(kept) > 1:
        # The caller knows what its candidates change (disjoint units): its own combination
        # is exact where a content merge cannot tell two edits with equal results apart.
        merged = combine([item.position for item, _ in kept]) if combine else merge.tree()
        check = _check_merge(reduction, phase, incumbent, merged, kept, outcomes, ahead)
        if check is None or not check.accepted:
            for item, _ in kept[1:]:
                outcomes[item.position] = None
            kept = kept[:1]
    for item, verdict in zip(items, verdicts, strict=True):
        if verdict is not None and not verdict.accepted:
            ledger.attempt(phase, "rejected")
        elif outcomes[item.position] is None:
            ledger.attempt(phase, "superseded")
    for item, _ in kept:
        outcomes[item.position] = True
        ledger.attempt(phase, "accepted")
    if len(kept) == 1:
        item, verdict = kept[0]
        reduction.adopt(phase, item.description, item.tree, verdict)
    elif kept:
        assert check is not None  # several kept: the check accepted the merge
        description = _fold_description([item.description for item, _ in kept])
        reduction.adopt(phase, description, merged, check)
    return outcomes


def _batch_items(
    ledger: Ledger, phase: str, candidates: Sequence[tuple[Tree, str]], incumbent: Tree
) -> list[Candidate]:
    """The candidates worth a run, with their positions; each no-op is recorded as one."""
    items: list[Candidate] = []
    for pos, (tree, description) in enumerate(candidates):
        if not tree.reduces(incumbent):
            ledger.attempt(phase, "no_op")
        else:
            items.append(Candidate(pos, tree, description))
    return items


def _merge_accepted(
    merge: TreeMerge,
    incumbent: Tree,
    items: Sequence[Candidate],
    verdicts: Sequence[Verdict | None],
    outcomes: list[bool | None],
) -> list[tuple[Candidate, Verdict]]:
    """Fold the accepted candidates into ``merge`` in proposal order (a conflicting one is
    left out); an undecided or left-out candidate's outcome becomes None."""
    kept: list[tuple[Candidate, Verdict]] = []
    for item, verdict in zip(items, verdicts, strict=True):
        if verdict is None:
            outcomes[item.position] = None
        elif verdict.accepted and merge.add(tree_delta(incumbent, item.tree)):
            kept.append((item, verdict))
        elif verdict.accepted:
            outcomes[item.position] = None
    return kept


def _check_merge(
    reduction: Folding,
    phase: str,
    incumbent: Tree,
    merged: Tree,
    kept: Sequence[tuple[Candidate, Verdict]],
    outcomes: Sequence[bool | None],
    ahead: Speculate | None,
) -> Verdict | None:
    """The verdict of the merge of several accepted candidates, with the caller's next
    candidates (``ahead``) run alongside; None when the merge is the incumbent itself."""
    provisional = list(outcomes)
    for item, _ in kept:
        provisional[item.position] = True
    # Edits that undo each other together (a syntax guard turned the merge back into the
    # incumbent) are a rejected merge, decided without a run.
    if merged.digest == incumbent.digest:
        return None
    return _check(reduction, phase, merged, ahead(merged, provisional) if ahead else [])


def _with_spare(
    reduction: Folding,
    phase: str,
    items: list[Candidate],
    evaluate: Evaluate,
    spare: Spare | None,
) -> list[Verdict | None]:
    """The batch's verdicts; its idle slots run ``spare``'s trees alongside (``fold_batch``)."""
    oracle, busy = reduction.oracle, reduction.ahead.running() if reduction.ahead else 0
    fresh = sum(1 for item in items if oracle.cached(item.tree) is None)
    idle = reduction.jobs - fresh - busy
    extra: list[Tree] = []
    if spare is not None and idle > 0 and fresh:
        seen = {item.tree.digest for item in items} | {reduction.current.digest}
        extra = [t for t in spare(idle) if t.digest not in seen and oracle.cached(t) is None]

    def run(
        job: Candidate | Tree, cancel: threading.Event, lane: Lane[bool] | None
    ) -> Verdict | None:
        if not isinstance(job, Tree):
            return evaluate(job, cancel, lane)
        try:
            return oracle.evaluate(job, phase, reduction.next_label(phase), cancel, lane=lane)
        except Cancelled:
            return None

    batch: list[Candidate | Tree] = [*items, *extra[:idle]]
    return reduction.decide_all(batch, run)[: len(items)]


def _check(reduction: Folding, phase: str, merged: Tree, ahead: list[Tree]) -> Verdict:
    """The verdict of a merged tree, with the caller's next candidates run alongside."""
    oracle = reduction.oracle
    fresh = [t for t in ahead if oracle.cached(t) is None][: max(0, reduction.jobs - 1)]
    if reduction.ahead is not None:  # final runs in flight keep their slots (prefetch.py)
        reduction.ahead.make_room(1 + len(fresh), reduction.jobs)
    if oracle.cached(merged) is not None or not fresh:
        return oracle.evaluate(merged, phase, reduction.next_label(phase))

    def run(tree: Tree, cancel: threading.Event, lane: Lane[bool] | None) -> Verdict | None:
        try:
            return oracle.evaluate(tree, phase, reduction.next_label(phase), cancel, lane=lane)
        except Cancelled:
            return None

    verdicts = reduction.decide_all([merged, *fresh], run)
    return cast(Verdict, verdicts[0])
