"""What the search knows beyond the tree: the latest trace, a re-trace callback, reference
distances. One :class:`SearchHints` is shared by the passes of one reduction (``attach``).

Priors for the learning deletion search (``search.deletion.learning``) come from here: a unit
the latest traced run never touched is likely deletable, one it touched less so, and one far
from the roots of the reference graph (``distance``, when a provider is attached) more likely
deletable than one next to them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from repomin.analysis.trace import TraceResult
from repomin.tree import Tree

#: Multipliers of the base prior (1/N): untouched by the latest trace, touched by it.
UNTOUCHED = 0.25
TOUCHED = 2.0
#: Reference distances beyond this count as this far (unreachable files are ``math.inf``).
FAR = 8.0


@dataclass
class SearchHints:
    """Shared, mutable hints; every field is optional."""

    trace: TraceResult | None = None
    #: Runs the traced run on a tree (an event, never an oracle sample); None: no re-trace.
    retrace: Callable[[Tree], TraceResult] | None = None
    #: Per-file distance from the reference-graph roots (``repomin.analysis.refs.distances``).
    distances: Callable[[Tree], Mapping[str, float]] | None = None
    _touched: frozenset[str] | None = field(default=None, repr=False)
    _distance_cache: tuple[str, Mapping[str, float]] | None = field(default=None, repr=False)

    def update_trace(self, trace: TraceResult) -> None:
        if trace.opened is not None:
            self.trace = trace
            self._touched = None

    def touched(self) -> frozenset[str] | None:
        """Every path the latest usable trace touched, with all its parent directories."""
        if self.trace is None or self.trace.opened is None:
            return None
        if self._touched is None:
            found: set[str] = set()
            for path in self.trace.opened:
                parts = path.split("/")
                found.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
            self._touched = frozenset(found)
        return self._touched

    def distance_of(self, tree: Tree, unit: str) -> float | None:
        """A file's reference distance, a directory's nearest file's; None when unknown."""
        if self.distances is None:
            return None
        if self._distance_cache is None or self._distance_cache[0] != tree.digest:
            self._distance_cache = (tree.digest, self.distances(tree))
        known = self._distance_cache[1]
        if unit in known:
            return min(FAR, known[unit])
        below = [known[p] for p in tree.under(unit) if p in known] if tree.is_dir(unit) else []
        return min(FAR, min(below)) if below else None

    def file_priors(self, tree: Tree, units: list[str]) -> list[float]:
        """Priors (probability of being needed) for deleting ``units`` (paths) of ``tree``."""
        base = 1.0 / max(1, len(units))
        touched = self.touched()
        priors = []
        for unit in units:
            p = base
            if touched is not None:
                p *= TOUCHED if unit in touched else UNTOUCHED
            distance = self.distance_of(tree, unit)
            if distance is not None and not math.isnan(distance):
                p /= 1 + max(0.0, distance)
            priors.append(p)
        return priors


@runtime_checkable
class Hinted(Protocol):
    """A pass that takes the shared hints (a ``hints`` attribute)."""

    hints: SearchHints | None


def attach(passes: Mapping[str, object], hints: SearchHints) -> None:
    """Give every pass that accepts hints (:class:`Hinted`) the shared object."""
    for instance in passes.values():
        if isinstance(instance, Hinted):
            instance.hints = hints
