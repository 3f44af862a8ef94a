"""A deletion search that learns: probabilistic delta debugging over a candidate set.

In the style of ProbDD (Wang et al., FSE 2021): every unit carries an estimate ``p`` of being
*needed*. The search proposes deleting the subset with the best expected gain — the prefix of
the undecided units sorted by ``p`` (ties in the given order) that maximises
``|S| * prod(1 - p_i for i in S)``; a rejection of ``S`` is Bayesian evidence that at least one
unit of ``S`` is needed, so every ``p_i`` in ``S`` becomes ``p_i / (1 - prod(1 - p_j))``; a
rejected singleton is known-needed (``p = 1``) and never proposed again in that context; an
accepted deletion removes ``S``. Priors come from the caller (trace, sizes, reference distance).

**1-minimality.** A singleton rejection is knowledge about the tree it was tested against. When
every unit is decided, each survivor whose rejection was recorded against an older tree is
proposed alone once more against the final one (a cache hit when nothing changed); the search
ends when every survivor's singleton deletion was rejected against the final tree, so the
result is 1-minimal over the units.

**Parallel speculation.** Candidates are produced lazily: the ``n``-th candidate of one
``try_first`` call is computed under the hypothesis that the ``n - 1`` before it were rejected,
which is exactly what "first accepted in proposal order" means. With ``--jobs N`` the next
candidates are therefore the ones the sequential search would make, and the result equals
``--jobs 1`` for a deterministic command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from repomin.passes.base import Problem
from repomin.tree import Tree

U = TypeVar("U")

#: Without priors every unit starts at ``1/N`` (ProbDD's fixed 0.1 makes the first candidates
#: about ten units wide; measured on planted 4-of-1000 problems: 143 runs against 82 at 1/N).
#: Priors are kept inside (PRIOR_MIN, PRIOR_MAX): 0 would never be tested, 1 never deleted.
PRIOR_MIN = 1e-4
PRIOR_MAX = 0.9
#: Prior of a unit that survived an earlier search of the same pass: tested alone first.
SURVIVOR_PRIOR = 0.5


@dataclass
class Model:
    """The search state over unit indexes ``0..n-1`` (copyable for speculation)."""

    p: dict[int, float]
    order: list[int]
    needed: dict[int, str] = field(default_factory=dict)  # index -> digest it was tested on

    def copy(self) -> Model:
        return Model(dict(self.p), list(self.order), dict(self.needed))

    def undecided(self) -> list[int]:
        return [i for i in self.order if i not in self.needed]

    def choose(self) -> list[int]:
        """The subset of undecided units with the best expected number of deleted units."""
        pending = sorted(self.undecided(), key=lambda i: self.p[i])  # stable: keeps order
        best: list[int] = []
        best_gain = 0.0
        keep_all = 1.0
        for count, i in enumerate(pending, start=1):
            keep_all *= 1.0 - self.p[i]
            gain = count * keep_all
            if gain > best_gain:
                best_gain, best = gain, pending[:count]
        return best

    def reject(self, subset: Sequence[int], digest: str) -> None:
        if len(subset) == 1:
            self.needed[subset[0]] = digest
            self.p[subset[0]] = 1.0
            return
        survive = math.prod(1.0 - self.p[i] for i in subset)
        scale = 1.0 / max(1e-12, 1.0 - survive)
        for i in subset:
            self.p[i] = min(PRIOR_MAX, self.p[i] * scale)

    def delete(self, subset: Sequence[int]) -> None:
        gone = set(subset)
        self.order = [i for i in self.order if i not in gone]
        for i in gone:
            self.p.pop(i, None)
            self.needed.pop(i, None)


@dataclass
class SearchStats(Generic[U]):
    """What one search did (for tests and the benchmark): proposals and acceptances."""

    proposals: int = 0
    accepted: int = 0
    survivors: list[U] = field(default_factory=list)


def clamp(p: float) -> float:
    return min(PRIOR_MAX, max(PRIOR_MIN, p))


def learn_delete(
    problem: Problem,
    phase: str,
    units: Sequence[U],
    build: Callable[[Sequence[U]], Tree],
    describe: Callable[[Sequence[U]], str],
    priors: Sequence[float] | None = None,
    stats: SearchStats[U] | None = None,
    sync: Callable[[Sequence[U]], Sequence[bool] | None] | None = None,
) -> list[U]:
    """Delete as many ``units`` as possible; returns the survivors (1-minimal over units).

    ``build(remaining)`` makes the candidate tree that keeps exactly ``remaining`` (in the
    given order); ``priors[i]`` is the caller's estimate that ``units[i]`` is needed.
    ``sync(survivors)``, called after every acceptance, says which survivors are still in the
    new incumbent (with ``--jobs > 1`` one acceptance may fold in other candidates' deletions),
    or returns None when the incumbent no longer matches the units (the search then stops
    early, and the caller's next round starts from the new content).
    """
    n = len(units)
    if priors is not None and len(priors) != n:
        raise ValueError("one prior per unit")
    model = Model(
        p={i: clamp(priors[i] if priors is not None else 1.0 / n) for i in range(n)},
        order=list(range(n)),
    )
    while model.order:
        digest = problem.current.digest
        if not model.undecided():
            stale = [i for i in model.order if model.needed[i] != digest]
            if not stale:
                break
            for i in stale:  # a singleton rejection against an older tree: test it again
                del model.needed[i]
                model.p[i] = PRIOR_MAX
        proposed: list[list[int]] = []

        def candidates(
            base: Model = model, proposed: list[list[int]] = proposed, digest: str = digest
        ) -> Iterator[tuple[Tree, str]]:
            spec = base.copy()
            while spec.undecided():
                subset = spec.choose()
                proposed.append(subset)
                gone = set(subset)
                keep = [units[i] for i in spec.order if i not in gone]
                yield build(keep), describe([units[i] for i in subset])
                spec.reject(subset, digest)

        won = problem.try_first(phase, _counted(candidates(), stats))
        settled = proposed if won is None else proposed[:won]
        for subset in settled:
            model.reject(subset, digest)
        if won is not None:
            model.delete(proposed[won])
            if stats is not None:
                stats.accepted += 1
            if sync is not None:
                still = sync([units[i] for i in model.order])
                if still is None:
                    break
                model.delete([i for i, ok in zip(model.order, still, strict=True) if not ok])
    survivors = [units[i] for i in model.order]
    if stats is not None:
        stats.survivors = survivors
    return survivors


def _counted(
    candidates: Iterable[tuple[Tree, str]], stats: SearchStats[U] | None
) -> Iterator[tuple[Tree, str]]:
    for item in candidates:
        if stats is not None:
            stats.proposals += 1
        yield item
