"""What the search knows beyond the tree: the latest trace, a re-trace callback, reference
distances. One :class:`SearchHints` is shared by the passes of one reduction (``attach``).

Priors for the learning deletion search (``passes.learning``) come from here: a unit the latest
traced run never touched is likely deletable, one it touched less so, and one far from the
roots of the reference graph (``distance``, when a provider is attached) more likely deletable
than one next to them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from repomin.trace import TraceResult
from repomin.tree import Tree

#: Multipliers of the base prior (1/N): untouched by the latest trace, touched by it.
UNTOUCHED = 0.25
TOUCHED = 2.0


@dataclass
class SearchHints:
    """Shared, mutable hints; every field is optional."""

    trace: TraceResult | None = None
    #: Runs the traced run on a tree (an event, never an oracle sample); None: no re-trace.
    retrace: Callable[[Tree], TraceResult] | None = None
    #: Per-path distance from the reference-graph roots (e.g. the ``refs`` engineer's graph).
    distances: Callable[[Tree], Mapping[str, int]] | None = None
    _touched: frozenset[str] | None = field(default=None, repr=False)

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

    def file_priors(self, tree: Tree, units: list[str]) -> list[float]:
        """Priors (probability of being needed) for deleting ``units`` (paths) of ``tree``."""
        base = 1.0 / max(1, len(units))
        touched = self.touched()
        distance = self.distances(tree) if self.distances is not None else None
        priors = []
        for unit in units:
            p = base
            if touched is not None:
                p *= TOUCHED if unit in touched else UNTOUCHED
            if distance is not None and unit in distance:
                p /= 1 + max(0, distance[unit])
            priors.append(p)
        return priors


def attach(passes: Mapping[str, object], hints: SearchHints) -> None:
    """Give every pass that accepts hints (a ``hints`` attribute) the shared object."""
    for instance in passes.values():
        if hasattr(instance, "hints"):
            instance.hints = hints
