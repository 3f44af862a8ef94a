"""Splitting a rejected group of the learning deletion search (:mod:`.learning`).

A *pending group* is a rejected deletion of several units (some unit of it is needed); a
*part* is one candidate of a batch. :func:`split` cuts a group into the parts one batch tests
(binary, cut at a tier boundary of the priors when there is one, or finer with spare slots)
and the untested rest the search infers needed when every tested part is adopted.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from repomin.search.deletion.belief import TIER

_KEYS = itertools.count()


@dataclass
class Pending:
    """A rejected deletion of several units: some unit of it is needed, or the oracle missed
    (``rejected``: digest of the rejected tree; ``miss``: the oracle's miss rate then)."""

    units: list[int]
    rejected: str
    key: int = field(default_factory=lambda: next(_KEYS))  # the same in a copied state
    miss: float = 0.0


@dataclass
class Part:
    """One candidate of a batch: delete ``units``. A split of ``source`` carries the untested
    ``rest`` of that group (inferred needed when every tested part of the split is adopted)."""

    units: list[int]
    source: Pending | None = None
    rest: list[int] = field(default_factory=list)


def split(group: Pending, tested: int, p: Sequence[float], most: int) -> list[Part]:
    """``tested`` parts of a pending group (lowest prior first) and its untested rest. A
    binary split tests the first half -- at most ``most`` units (the posterior's group size:
    in a dense group, unit by unit), cut at a tier boundary when there is one."""
    units = sorted(group.units, key=lambda i: p[i])
    if len(units) <= 1:
        return [Part(units, group)]
    if tested >= len(units):  # spare slots: every unit alone, nothing left to infer
        return [Part([i], group) for i in units]
    if tested == 1:
        size = min(-(-len(units) // 2), max(1, most), len(units) - 1)
        cut = tier_cut([p[i] for i in units], len(units) - 1)
        size = cut if cut and cut <= size else size
        return [Part(units[:size], group, units[size:])]
    size = -(-len(units) // (tested + 1))
    chunks = [units[j : j + size] for j in range(0, len(units), size)]
    head, rest = chunks[: max(1, len(chunks) - 1)], chunks[-1] if len(chunks) > 1 else []
    return [Part(c, group, rest) for c in head]


def tier_cut(ascending: Sequence[float], limit: int) -> int:
    """The position (1..limit) of the largest jump of at least TIER between neighbours, or 0."""
    best, cut = TIER, 0
    for j in range(1, min(limit, len(ascending) - 1) + 1):
        ratio = ascending[j] / ascending[j - 1]
        if ratio >= best:
            best, cut = ratio, j
    return cut
