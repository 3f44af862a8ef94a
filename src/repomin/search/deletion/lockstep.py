"""Several learning searches in lockstep: one batch fills the slots across searches.

With ``--jobs W`` (a deterministic command) the learning search decides W disjoint candidates
per round (``search.deletion.learning``). A pass with many small searches -- the lines of each text
file -- leaves most slots idle when it runs them one after another: a 5-line file needs two
rounds (its batch and the merge check) and uses a few slots of each. :func:`learn_together`
runs one :class:`~repomin.search.deletion.learning.Search` per *member* (a file) and, every round,
gives each member with work at least one slot and the spare slots to members that can use
more, so the candidates of all members go out in one batch.

Each member keeps its own state -- its belief learns its own density, which is side
information the partition gives: one search over the union of the units would lose it (measured
on mixed dense and sparse files: more runs at every width and more rounds below 16 slots).
A member's "needed" records are against its own *version* (``version(tree, member)``: e.g.
the digest of its file), so a member is done when every survivor's deletion alone was
rejected against its final version -- what its own search would have ended with; other
members' edits never make it re-check (the driver's next round does, as after a file-by-file
pass). Candidates of different members are disjoint by construction; the batch's merge is
the tree of every member's state with the accepted parts removed (``build``, exact), checked
by one more run alongside the next batch (``ahead``), as in one search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

from repomin.search.deletion.learning import Search, learn_delete
from repomin.search.deletion.split import Part
from repomin.search.problem import Batch, Combine, Problem, Speculate
from repomin.tree import Tree

U = TypeVar("U")

#: ``build(remaining)``: the tree in which member ``k`` keeps exactly ``remaining[k]`` (None:
#: member ``k`` was cut short and its content stays as it is).
Build = Callable[[Sequence[Sequence[U] | None]], Tree]
#: (member, part) pairs of one planned batch, in proposal order.
Plan = list[tuple[int, Part]]

#: With at least this many batch slots (and more than one member) the members' searches run
#: in lockstep; with fewer, one after another, each a whole ``learn_delete`` (its chains).
ACROSS = 2


class Lockstep(Generic[U]):
    """The searches of the members and how their slots are shared (see the module docstring)."""

    def __init__(
        self,
        members: Sequence[tuple[Sequence[U], Sequence[float]]],
        build: Build[U],
        version: Callable[[Tree, int], str],
    ) -> None:
        self.searches: list[Search[U]] = [Search(units, priors) for units, priors in members]
        self.build = build
        self.version = version
        self.active = list(range(len(members)))
        #: Members cut short (their content no longer matches their units).
        self.cut: set[int] = set()

    def tree(self, searches: Sequence[Search[U]], gone: Mapping[int, Sequence[int]]) -> Tree:
        """The tree of ``searches``' states with ``gone[k]`` (unit indexes) removed too."""
        remaining: list[list[U] | None] = []
        for k, search in enumerate(searches):
            drop = set(gone.get(k, ()))
            keep = [search.units[i] for i in search.order if i not in drop]
            remaining.append(None if k in self.cut else keep)
        return self.build(remaining)

    def plan(self, searches: Sequence[Search[U]], width: int, base: Tree) -> Plan:
        """Every member with work gets one slot (at most ``width`` members, in member order);
        spare slots go round-robin to members whose plan grows with one more slot."""
        versions = {k: self.version(base, k) for k in self.active}
        plans: dict[int, list[Part]] = {}
        for k in list(self.active):
            if len(plans) == width:
                break
            parts = searches[k].plan(1, versions[k])
            if parts:
                plans[k] = parts
            elif searches is self.searches:
                self.active.remove(k)  # done: every survivor rejected against its version
        widths = dict.fromkeys(plans, 1)
        spare = width - len(plans)
        growing = list(plans)
        while spare > 0 and growing:
            for k in list(growing):
                if not spare:
                    break
                more = searches[k].plan(widths[k] + 1, versions[k])
                if len(more) > len(plans[k]):
                    widths[k] += 1
                    plans[k] = more
                    spare -= 1
                else:
                    growing.remove(k)
        return [(k, part) for k, parts in plans.items() for part in parts]

    def learn(
        self,
        searches: Sequence[Search[U]],
        batch: Plan,
        outcomes: Sequence[bool | None],
        trees: Sequence[Tree],
        before: Tree,
        after: Tree,
    ) -> None:
        """Record a batch's outcomes in each member's search (all learn first, then infer:
        a member's inference builds the tree of every member's new state)."""
        by: dict[int, tuple[list[Part], list[bool | None], list[Tree]]] = {}
        for (k, part), ok, tree in zip(batch, outcomes, trees, strict=True):
            entry = by.setdefault(k, ([], [], []))
            entry[0].append(part)
            entry[1].append(ok)
            entry[2].append(tree)
        for k, (parts, oks, ts) in by.items():
            searches[k].learn(parts, oks, self.version(before, k), ts)
        if not any(outcomes):
            return
        for k, (parts, oks, _) in by.items():
            if any(oks):

                def rest(units: list[int], k: int = k) -> str:
                    return self.tree(searches, {k: units}).digest

                searches[k].infer(parts, oks, rest, self.version(after, k))

    def sync(self, sync: Callable[[int, Sequence[U]], Sequence[bool] | None]) -> None:
        """Re-map every member not cut short onto the new incumbent (``sync`` per member)."""
        for k, search in enumerate(self.searches):
            if k in self.cut:
                continue
            still = sync(k, [search.units[i] for i in search.order])
            if still is None:
                self.cut.add(k)
                if k in self.active:
                    self.active.remove(k)
                continue
            search.remove([i for i, ok in zip(search.order, still, strict=True) if not ok])


def learn_together(
    problem: Problem,
    phase: str,
    members: Sequence[tuple[Sequence[U], Sequence[float]]],
    build: Build[U],
    describe: Callable[[int, Sequence[U]], str],
    version: Callable[[Tree, int], str],
    sync: Callable[[int, Sequence[U]], Sequence[bool] | None],
) -> list[list[U] | None]:
    """Delete as many units of every member as possible, the members' searches in lockstep.

    ``members[k]`` = (units, priors) as for ``learn_delete``; ``build(remaining)`` keeps exactly
    ``remaining[k]`` of each member (the incumbent's other content unchanged); ``sync(k,
    survivors)``, after every acceptance, says which of member ``k``'s survivors are still in
    the new incumbent, or None when it no longer matches (that member stops: cut short).
    Returns each member's survivors (1-minimal against its final version), or None for a
    member that was cut short. Below :data:`ACROSS` batch slots, or with one member, the
    members run one after another (:func:`one_by_one`).
    """
    width = max(1, problem.batch_width)
    if width < ACROSS or len(members) < 2:
        return one_by_one(problem, phase, members, build, describe, sync)
    state: Lockstep[U] = Lockstep(members, build, version)
    narrow = False

    def ahead_of(batch: Plan, trees: Sequence[Tree], before: Tree) -> Speculate:
        def ahead(merged: Tree, outcomes: Sequence[bool | None]) -> list[Tree]:
            nonlocal narrow
            hypo = [s.copy() for s in state.searches]
            state.learn(hypo, batch, outcomes, trees, before, merged)
            narrow = True
            following = state.plan(hypo, width - 1, merged)
            upcoming = [state.tree(hypo, {k: part.units}) for k, part in following]
            if 1 < len(upcoming) < width - 1:
                # A spare slot: the merge check of that batch if every part of it is accepted
                # (its verdict waits in the cache; a lost slot otherwise).
                gone: dict[int, list[int]] = {}
                for k, part in following:
                    gone.setdefault(k, []).extend(part.units)
                upcoming.append(state.tree(hypo, gone))
            return upcoming

        return ahead

    def combine_of(batch: Plan) -> Combine:
        def tree(won: Sequence[int]) -> Tree:
            gone: dict[int, list[int]] = {}
            for j in won:
                k, part = batch[j]
                gone.setdefault(k, []).extend(part.units)
            return state.tree(state.searches, gone)

        return tree

    while True:
        before = problem.current
        batch = state.plan(state.searches, width - 1 if narrow else width, before)
        narrow = False
        if not batch:
            break
        trees = [state.tree(state.searches, {k: part.units}) for k, part in batch]
        candidates = [
            (t, describe(k, [state.searches[k].units[i] for i in part.units]))
            for t, (k, part) in zip(trees, batch, strict=True)
        ]
        outcomes = problem.try_batch(
            phase, Batch(candidates, ahead_of(batch, trees, before), combine_of(batch))
        )
        narrow = narrow and sum(1 for ok in outcomes if ok) > 1  # the check accepted
        state.learn(state.searches, batch, outcomes, trees, before, problem.current)
        if any(outcomes):
            state.sync(sync)
    return [
        None if k in state.cut else [s.units[i] for i in s.order]
        for k, s in enumerate(state.searches)
    ]


def one_by_one(
    problem: Problem,
    phase: str,
    members: Sequence[tuple[Sequence[U], Sequence[float]]],
    build: Build[U],
    describe: Callable[[int, Sequence[U]], str],
    sync: Callable[[int, Sequence[U]], Sequence[bool] | None],
) -> list[list[U] | None]:
    """``learn_together``'s answer with the members searched one after another, each by its
    own ``learn_delete`` (which chains what it would propose next into idle sample slots)."""
    results: list[list[U] | None] = []
    for k, (units, priors) in enumerate(members):
        cut = False

        def own(remaining: Sequence[U], k: int = k) -> Tree:
            return build([remaining if j == k else None for j in range(len(members))])

        def said(chunk: Sequence[U], k: int = k) -> str:
            return describe(k, chunk)

        def still(kept: Sequence[U], k: int = k) -> Sequence[bool] | None:
            nonlocal cut
            mask = sync(k, kept)
            cut = mask is None
            return mask

        kept = learn_delete(problem, phase, units, own, said, priors, sync=still)
        results.append(None if cut else kept)
    return results
