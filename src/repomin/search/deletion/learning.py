"""A deletion search that learns: adaptive group testing over a candidate set, in batches.

Every unit carries the caller's prior ``p`` of being needed (trace, sizes, reference distance);
a posterior over *how many* units are needed (``search.deletion.belief``) is updated by every test.
The search keeps three kinds of units: *undecided* ones, *pending groups* (a rejected deletion
of several units: some unit of it is needed) and *known-needed* ones (a rejected deletion of
the unit alone, with the digest of the tree it was tested against). Each round proposes a
*batch* of disjoint parts, all deleted from the same incumbent:

* every pending group is split (binary search; with spare slots an (m+1)-way split of which m
  parts are tested; with as many spare slots as units, every unit alone and no rest); when
  every tested part is accepted, the untested rest is inferred to
  hold the needed unit -- *exactly*, without assuming monotonicity, when the tree of deleting
  it from the new incumbent is the very tree whose rejection created the group (the digests
  are compared), otherwise as a hint that the final check confirms;
* the remaining slots take fresh groups from the undecided units, lowest ``p`` first, each the
  largest prefix whose deletion succeeds with posterior probability >= 1/2;
* every survivor whose singleton rejection was recorded against an older tree is proposed
  alone once more against the current one: when nothing is undecided or pending, or in the
  slots left idle by a batch of single units only (which can be the last).

The search ends when every survivor's deletion alone was rejected against the final tree, so
the result is **1-minimal over the units** for any predicate.

**A flaky oracle.** When a good candidate can be rejected (``Problem.miss_rate`` m > 0: a
failure that shows in 6 runs of 10, decided on one run, misses 4 times in 10), a rejection is
weighed as what it is: the belief's likelihood of a rejected group is ``1 - (1 - m) P(clean)``
(``search.deletion.belief``), so misses do not make the problem look dense and the groups stay
large. A unit the search only inferred needed (the untested rest of a split) is tested alone
once, and the re-checks go fewest rejections first (the likeliest misses, whose acceptances make
the others stale again). A single rejection against the final tree still ends a unit's search,
as for a deterministic oracle: the driver's fixpoint and the re-test of rejected trees give a
miss more chances. With m = 0 the search is exactly the deterministic one.

**Holds.** A caller may say which present units cannot go alone while the others present stay
(``hold``: a Python binding that code still present reads, ``passes.python_names``). They are
left out of groups and re-checks and tried alone once nothing else is left: the units that
need them go first, and a held unit costs one test per search instead of one per acceptance.
They are still tested against the final tree, so the result is 1-minimal whatever ``hold`` says.

**Batches.** A problem whose ``batch_width`` W > 1 (the reducer with ``--jobs W``: a
deterministic command, or a flaky one from 4 slots) decides the W parts of ``try_batch`` at
once and folds every accepted one into one new incumbent (``fold.fold_batch``: verified by one
more test when it merged several; if that test rejects, only the first accepted part is adopted
and the others return to the undecided units). Every rejected part is evidence about its own
units. Otherwise the batch has one part and goes through ``try_first`` (chained behind the
proposals that would follow a rejection when ``chain_width`` > 1: ``deletion.chain``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from repomin.search.deletion.belief import PRIOR_MAX, TieredBelief
from repomin.search.deletion.chain import chain_first
from repomin.search.deletion.split import Part, Pending, split
from repomin.search.problem import Batch, Combine, Problem, Spare, Speculate
from repomin.tree import Tree

U = TypeVar("U")
#: Present unit indexes -> those not to try yet (``learn_delete``'s ``hold``).
Hold = Callable[[Sequence[int]], Collection[int]]

#: Priors are kept inside (PRIOR_MIN, PRIOR_MAX): 0 would never be tested, 1 never deleted
#: (their scale is learnt, so only their ratios matter; a floor would flatten them).
PRIOR_MIN = 1e-12

#: Prior of a unit that survived an earlier search of the same pass: tested alone early.
SURVIVOR_PRIOR = 0.5


@dataclass
class SearchStats(Generic[U]):
    """What one search did (for tests and the benchmark): proposals, acceptances, batches."""

    proposals: int = 0
    accepted: int = 0
    batches: int = 0
    survivors: list[U] = field(default_factory=list)


def clamp(p: float) -> float:
    return min(PRIOR_MAX, max(PRIOR_MIN, p))


class Search(Generic[U]):
    """The state of one search over ``units`` (indexes ``0..n-1``)."""

    def __init__(self, units: Sequence[U], priors: Sequence[float]) -> None:
        self.units = units
        self.p = [clamp(x) for x in priors]
        self.belief = TieredBelief(self.p)
        self.order = list(range(len(units)))  # every unit still present
        self.needed: dict[int, str] = {}  # index -> digest it was known needed against
        self.pending: list[Pending] = []
        #: The oracle's miss rate for the next tests (``Problem.miss_rate``).
        self.miss = 0.0
        #: index -> how often its deletion alone was rejected (a flaky oracle's re-check order).
        self.rejections: dict[int, int] = {}
        #: The caller's hold (``learn_delete``): present units not to try yet.
        self.hold: Hold | None = None

    def copy(self) -> Search[U]:
        """An independent copy of the state (units and priors shared)."""
        other = copy.copy(self)
        other.belief = self.belief.copy()
        other.order = list(self.order)
        other.needed = dict(self.needed)
        other.rejections = dict(self.rejections)
        other.pending = [Pending(list(g.units), g.rejected, g.key, g.miss) for g in self.pending]
        return other

    def step(
        self,
        parts: Sequence[Part],
        outcomes: Sequence[bool | None],
        digest: str,
        trees: Sequence[Tree],
        after: str,
        rest_digest: Callable[[list[int]], str],
    ) -> None:
        """Learn a batch's outcomes (tested against ``digest``; ``after``: the new incumbent)."""
        self.learn(parts, outcomes, digest, trees)
        if any(outcomes):
            self.infer(parts, outcomes, rest_digest, after)

    def undecided(self, held: Collection[int] = ()) -> list[int]:
        """Present units neither known needed nor in a pending group (nor ``held``), lowest
        prior first."""
        grouped = {i for g in self.pending for i in g.units}
        free = [
            i for i in self.order if i not in self.needed and i not in grouped and i not in held
        ]
        return sorted(free, key=lambda i: self.p[i])  # stable: ties keep the given order

    def plan(self, width: int, digest: str) -> list[Part]:
        """The next batch: splits of pending groups, fresh groups, or stale re-checks.

        Every pending group (up to ``width``) gets one tested part; fresh groups take up to
        half of the other slots, each sized as if the ones before it in the batch succeed
        (so one batch ramps from one unit up to large groups); the rest split pending groups
        finer, and whatever is still free goes to more fresh groups. Units the caller holds
        wait: they are tried alone once nothing else is left (see ``learn_delete``)."""
        held = self.hold(self.order) if self.hold is not None else set()
        groups = self.pending[:width]
        splits = {id(g): 1 for g in groups}
        free = self.undecided(held)
        slots = width - len(groups)
        hypo = self.belief.copy()
        pending = [(g.units, g.miss) for g in self.pending]
        fresh: list[Part] = []

        def add_fresh(count: int) -> None:
            nonlocal free
            for _ in range(count):
                if not free:
                    return
                size = hypo.group_size(free, pending)  # inside the tier of free[0]
                fresh.append(Part(free[:size]))
                hypo.unneeded(free[:size])
                free = free[size:]

        take = (slots + 1) // 2 if groups else slots
        add_fresh(take)
        slots -= len(fresh)
        grown = True
        while slots > 0 and grown:  # finer splits (up to every unit alone) of pending groups
            grown = False
            for g in groups:
                if slots and splits[id(g)] < len(g.units):
                    splits[id(g)] += 1
                    slots -= 1
                    grown = True
        add_fresh(slots)
        parts = [
            part
            for g in groups
            for part in split(
                g,
                splits[id(g)],
                self.p,
                self.belief.group_size(
                    sorted(g.units, key=lambda i: self.p[i]),
                    [(o.units, o.miss) for o in self.pending if o is not g],
                ),
            )
        ] + fresh
        if any(len(part.units) > 1 for part in parts):
            return parts
        # The last round if no part is accepted: slots left idle re-check survivors known
        # needed against an older tree (disjoint from every part; with one slot, only when
        # nothing else is left).
        stale = [i for i in self.order if self.needed.get(i, digest) != digest]
        if self.miss > 0:
            # An inference from a rejection that may have been a miss proves nothing: a unit
            # inferred needed is tested alone once; and the likeliest misses go first, since
            # their acceptances make the others stale again.
            stale += [
                i for i in self.order if self.needed.get(i) == digest and i not in self.rejections
            ]
            stale.sort(key=lambda i: self.rejections.get(i, 0))
        if held:
            waiting = [i for i in stale if i in held]
            stale = [i for i in stale if i not in held]
            if not parts and not stale:  # nothing else left: the held units, alone
                grouped = {i for g in self.pending for i in g.units}
                fresh_held = [i for i in self.order if i in held and i not in self.needed]
                stale = [i for i in fresh_held if i not in grouped] + waiting
        return parts + [Part([i]) for i in stale[: width - len(parts)]]

    def learn(
        self,
        parts: Sequence[Part],
        outcomes: Sequence[bool | None],
        digest: str,
        trees: Sequence[Tree],
    ) -> None:
        """Record a batch's outcomes (``digest``: the incumbent it was tested against)."""
        adopted = [i for part, ok in zip(parts, outcomes, strict=True) if ok for i in part.units]
        sources = {p.source.key for p in parts if p.source is not None}
        self.pending = [g for g in self.pending if g.key not in sources]
        for part, ok, tree in zip(parts, outcomes, trees, strict=True):
            if ok is False and len(part.units) == 1:
                self.needed[part.units[0]] = digest
                self.rejections[part.units[0]] = self.rejections.get(part.units[0], 0) + 1
                self.belief.needed(part.units[0], self.miss)
            elif ok is False:
                self.pending.append(Pending(list(part.units), tree.digest, miss=self.miss))
        self.belief.unneeded(adopted)
        self.remove(adopted)

    def infer(
        self,
        parts: Sequence[Part],
        outcomes: Sequence[bool | None],
        rest_digest: Callable[[list[int]], str],
        digest: str,
    ) -> None:
        """A split whose tested parts were all adopted: its rest holds the needed unit."""
        by_source: dict[int, list[bool | None]] = {}
        for part, ok in zip(parts, outcomes, strict=True):
            if part.source is not None:
                by_source.setdefault(part.source.key, []).append(ok)
        for part in parts:
            source = part.source
            if source is None or not part.rest or not all(by_source.pop(source.key, [None])):
                continue
            exact = rest_digest(part.rest) == source.rejected
            if len(part.rest) == 1:
                self.needed[part.rest[0]] = digest if exact else ""
                self.belief.needed(part.rest[0], source.miss)
            else:
                rejected = source.rejected if exact else ""
                self.pending.append(Pending(list(part.rest), rejected, miss=source.miss))

    def remove(self, gone: Sequence[int]) -> None:
        drop = set(gone)
        if not drop:
            return
        self.order = [i for i in self.order if i not in drop]
        for i in drop:
            self.needed.pop(i, None)
        for g in self.pending:
            g.units = [i for i in g.units if i not in drop]
        self.pending = [g for g in self.pending if g.units]


def learn_delete(
    problem: Problem,
    phase: str,
    units: Sequence[U],
    build: Callable[[Sequence[U]], Tree],
    describe: Callable[[Sequence[U]], str],
    priors: Sequence[float] | None = None,
    stats: SearchStats[U] | None = None,
    sync: Callable[[Sequence[U]], Sequence[bool] | None] | None = None,
    then: Spare | None = None,
    hold: Hold | None = None,
) -> list[U]:
    """Delete as many ``units`` as possible; returns the survivors (1-minimal over units).

    ``build(remaining)`` makes the candidate tree that keeps exactly ``remaining`` (in the
    given order); ``priors[i]`` is the caller's estimate that ``units[i]`` is needed.
    ``sync(survivors)``, called after every acceptance, says which survivors are still in the
    new incumbent, or returns None when the incumbent no longer matches the units (the search
    then stops early, and the caller's next round starts from the new content). ``then(k)``:
    up to ``k`` trees the caller proposes next if the search ends with the incumbent as it
    is; with batch slots, a batch of single units (each more likely needed than not) that
    leaves slots idle runs in them what follows if it is rejected -- the next batch of this
    search, or at its end ``then``'s trees.

    ``hold(present)`` (indexes into ``units``): the present units whose deletion alone is
    known to fail while the others present stay (a Python binding that code still present
    loads: ``passes.python_names``). They are left out of groups and re-checks and tried
    alone once nothing else is left, so what needs them goes first; they are still tested
    against the final tree, so the result stays 1-minimal whatever the hold says.
    """
    n = len(units)
    if priors is not None and len(priors) != n:
        raise ValueError("one prior per unit")
    search: Search[U] = Search(units, priors if priors is not None else [1.0 / max(1, n)] * n)
    search.hold = hold
    width = max(1, problem.batch_width)
    run = _Learning(problem, phase, units, build, describe, then, search, width)
    while True:
        digest = problem.current.digest
        run.search.miss = problem.miss_rate
        parts = run.search.plan(width - 1 if run.narrow and width > 1 else width, digest)
        run.narrow = False
        if not parts:
            break
        parts, trees, outcomes = run.decide(parts, digest)
        if stats is not None:
            stats.proposals += len(parts)
            stats.batches += 1
            stats.accepted += sum(1 for ok in outcomes if ok)
        run.narrow = run.narrow and sum(1 for ok in outcomes if ok) > 1  # the check accepted
        run.search.step(
            parts,
            outcomes,
            digest,
            trees,
            problem.current.digest,
            lambda rest: run.without(run.search, rest).digest,  # called inside step
        )
        if any(outcomes) and sync is not None:
            still = sync([units[i] for i in run.search.order])
            if still is None:
                break
            run.search.remove([i for i, ok in zip(run.search.order, still, strict=True) if not ok])
    survivors = [units[i] for i in run.search.order]
    if stats is not None:
        stats.survivors = survivors
    return survivors


class _Learning(Generic[U]):
    """One :func:`learn_delete` run: its search state and how it proposes each round's parts."""

    def __init__(
        self,
        problem: Problem,
        phase: str,
        units: Sequence[U],
        build: Callable[[Sequence[U]], Tree],
        describe: Callable[[Sequence[U]], str],
        then: Spare | None,
        search: Search[U],
        width: int,
    ) -> None:
        self.problem = problem
        self.phase = phase
        self.units = units
        self.build = build
        self.describe = describe
        self.then = then
        self.search = search
        self.width = width
        #: The last batch's merge check ran the next batch (one slot narrower).
        self.narrow = False

    def without(self, state: Search[U], gone: Sequence[int]) -> Tree:
        """The candidate tree of ``state`` deleting the units ``gone``."""
        drop = set(gone)
        return self.build([self.units[i] for i in state.order if i not in drop])

    def describe_part(self, part: Part) -> str:
        return self.describe([self.units[i] for i in part.units])

    def decide(
        self, parts: list[Part], digest: str
    ) -> tuple[list[Part], list[Tree], list[bool | None]]:
        """Propose ``parts`` the one way the problem allows: as a batch (``try_batch``), as
        the first of a chain (flaky, several slots: ``deletion.chain``), or in ``try_first``.
        Returns the parts decided, their trees and their outcomes."""
        trees = [self.without(self.search, part.units) for part in parts]
        candidates = [(t, self.describe_part(part)) for t, part in zip(trees, parts, strict=True)]
        problem = self.problem
        if self.width > 1:
            return parts, trees, self.batch(problem, parts, trees, candidates, digest)
        if self.problem.chain_width > 1:
            return self.chain(parts[0], digest)
        return parts, trees, self.first(candidates)

    def batch(
        self,
        problem: Problem,
        parts: Sequence[Part],
        trees: Sequence[Tree],
        candidates: Sequence[tuple[Tree, str]],
        digest: str,
    ) -> list[bool | None]:
        """Decide ``parts`` at once, with the next batch guessed behind the merge check."""
        batch = Batch(
            candidates,
            ahead=self.speculate(parts, trees, digest),
            combine=self.combined(parts),
            spare=self.spare_of(parts, trees, digest),
        )
        return problem.try_batch(self.phase, batch)

    def chain(self, first: Part, digest: str) -> tuple[list[Part], list[Tree], list[bool | None]]:
        """Decide ``first`` and the chain behind it; the search goes on from the state
        before the last decided part."""
        self.search, parts, trees, outcomes = chain_first(
            self.problem, self.phase, self.search, first, digest, self.without, self.describe_part
        )
        return parts, trees, outcomes

    def first(self, candidates: Sequence[tuple[Tree, str]]) -> list[bool | None]:
        """Decide the batch's one part in ``try_first``."""
        return [self.problem.try_first(self.phase, candidates) == 0]

    def speculate(self, parts: Sequence[Part], trees: Sequence[Tree], digest: str) -> Speculate:
        def ahead(merged: Tree, outcomes: Sequence[bool | None]) -> list[Tree]:
            # The batch after this one if the merge check accepts: the same plan the search
            # will make then (``build`` keeps exactly the given units, so building from the
            # old incumbent with the new state's units is building from ``merged``).
            hypo = self.search.copy()
            hypo.step(
                parts,
                outcomes,
                digest,
                trees,
                merged.digest,
                lambda rest: self.without(hypo, rest).digest,
            )
            self.narrow = True
            following = hypo.plan(self.width - 1, merged.digest)
            return [self.without(hypo, part.units) for part in following]

        return ahead

    def spare_of(self, parts: Sequence[Part], trees: Sequence[Tree], digest: str) -> Spare:
        def spare(k: int) -> list[Tree]:
            if any(len(part.units) > 1 for part in parts):
                return []  # a group is sized to succeed as often as not: no safe guess
            hypo = self.search.copy()
            hypo.learn(parts, [False] * len(parts), digest, trees)
            following = hypo.plan(k, digest)
            if following:
                return [self.without(hypo, part.units) for part in following]
            return self.then(k) if self.then is not None else []

        return spare

    def combined(self, parts: Sequence[Part]) -> Combine:
        def tree(won: Sequence[int]) -> Tree:  # several accepted parts deleted together
            return self.without(self.search, [u for j in won for u in parts[j].units])

        return tree


def first_batch(
    units: Sequence[U], build: Callable[[Sequence[U]], Tree], width: int, digest: str
) -> list[Tree]:
    """The trees of the first batch :func:`learn_delete` (default priors) would propose over
    ``units`` with ``width`` slots against the incumbent ``digest`` (a caller's ``then``)."""
    search: Search[U] = Search(units, [1.0 / max(1, len(units))] * len(units))
    trees = []
    for part in search.plan(width, digest):
        gone = set(part.units)
        trees.append(build([units[i] for i in search.order if i not in gone]))
    return trees
