"""The learning search's belief: how many of the units are needed, learnt from every test.

Unit ``i`` is needed with probability ``q_i(d) = min(PRIOR_MAX, d * p_i / sum(p))``,
independently, where ``p`` are the caller's priors (only their ratios matter) and ``d`` -- the
expected number of needed units -- is unknown. ``d`` has a prior uniform in the density ``d / N``
(on a grid of half-octave steps from 1/2 to ``N``: the search does not assume that few units
are needed), and every observation updates its posterior exactly on the grid:

* a unit deleted by an accepted candidate is unneeded: ``1 - q_i``;
* a unit known needed (its deletion alone was rejected): ``q_i + m (1 - q_i)``;
* a rejected group not yet resolved: ``1 - (1 - m) prod(1 - q_i)`` (some unit of it is
  needed, or the oracle missed).

``m`` is the oracle's *miss rate* when the test was made: the probability that it rejects a
candidate as good as the incumbent (0 for a deterministic failure: a rejection proves that some
unit is needed; about 0.4 for a failure that shows in 6 runs of 10 decided on one run). Without
it, every miss of a flaky failure would count as a needed unit: the posterior would believe the
problem dense and test unit by unit.

Groups are sized from the posterior predictive ``P(all of S unneeded)``: the search proposes
the largest prefix (lowest ``p`` first) whose deletion succeeds with probability at least
1/2 -- the most informative test, about one bit -- so a dense problem is tested unit by unit
and a sparse one in halving groups, without knowing ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float64]

#: A rejected group still unresolved: its units and the oracle's miss rate when it was tested.
Rejected = tuple[Sequence[int], float]

#: A unit's probability of being needed stays below this (1 would never be deleted).
PRIOR_MAX = 0.9
#: A group is proposed when its deletion succeeds with at least this predictive probability.
TARGET = 0.5
#: The prior of ``d`` is proportional to ``d ** PRIOR_SLOPE`` on the log grid: 1 is a
#: uniform prior on the density ``d / N`` (a log-uniform prior, 0, trusts sparsity too early:
#: measured on planted problems, 4 of 8 needed cost 15 runs against 12).
PRIOR_SLOPE = 1.0
#: At most this many units (with priors that say nothing) are tested one by one: then N + k
#: runs (every unit once, every survivor once more against the final tree) is within
#: 3 k log2(N / k) for every k.
INDIVIDUAL_LIMIT = 8
#: A prior this many times its predecessor's (lowest first) starts a new tier.
TIER = 2.0
#: Prior weight of the caller's own calibration (``d`` at most twice the sum of the priors).
TRUST = 0.5
#: ... from this many units on, or when the priors differ (below, with priors that say
#: nothing, testing unit by unit costs little anyway and dense sets are common).
TRUST_FROM = 64


class Belief:
    """Posterior over the expected number ``d`` of needed units (see the module docstring)."""

    def __init__(self, priors: Sequence[float], informed: bool | None = None) -> None:
        import numpy

        np: Any = numpy
        n = max(1, len(priors))
        total = max(1e-300, float(sum(priors)))
        steps = 2 * math.ceil(math.log2(max(2, n))) + 3
        self._np = np
        self.d = np.array([0.5 * 2 ** (j / 2) for j in range(steps)])
        self._weight = self.d / total  # q_i(d) = min(PRIOR_MAX, weight * p_i)
        self.p = np.asarray(list(priors), dtype=float)
        dense = self.d**PRIOR_SLOPE
        sparse = (self.d <= 2 * max(1.0, total)).astype(float)
        if informed is None:
            informed = max(priors, default=1.0) >= 2 * min(priors, default=1.0)
        trust = TRUST if n >= TRUST_FROM or informed else 0.0
        prior = (1 - trust) * dense / dense.sum() + trust * sparse / sparse.sum()
        self.log_post = np.log(prior)
        self.individual = not informed and n <= INDIVIDUAL_LIMIT

    def copy(self) -> Belief:
        other = Belief.__new__(Belief)
        other.__dict__.update(self.__dict__)
        other.log_post = self.log_post.copy()
        return other

    def _q(self, units: Sequence[int]) -> Array:
        np = self._np
        return np.minimum(PRIOR_MAX, self._weight[:, None] * self.p[list(units)][None, :])  # type: ignore[no-any-return]

    def unneeded(self, units: Sequence[int]) -> None:
        if units:
            self.log_post += self._np.log1p(-self._q(units)).sum(axis=1)

    def needed(self, unit: int, miss: float = 0.0) -> None:
        """Its deletion alone was rejected by an oracle with miss rate ``miss``."""
        q = self._q([unit])[:, 0]
        self.log_post += self._np.log(q + miss * (1.0 - q))

    def _weights(self, pending: Sequence[Rejected]) -> Array:
        np = self._np
        log_w = self.log_post.copy()
        for group, miss in pending:
            clean = np.log1p(-self._q(group)).sum(axis=1) + math.log1p(-min(miss, 1 - 1e-12))
            log_w += np.log(-np.expm1(np.minimum(clean, -1e-12)))
        log_w -= log_w.max()
        w = np.exp(log_w)
        return w / w.sum()  # type: ignore[no-any-return]

    def group_size(self, ordered: Sequence[int], pending: Sequence[Rejected]) -> int:
        """The largest prefix of ``ordered`` whose units are all unneeded with probability
        >= 1/2 under the posterior (at least 1)."""
        if len(ordered) <= 1 or self.individual:
            return min(1, len(ordered))
        np = self._np
        w = self._weights(pending)
        clean = np.cumsum(np.log1p(-self._q(ordered)), axis=1)  # grid x prefix length
        success = w @ np.exp(clean)
        fits = np.nonzero(success >= TARGET)[0]
        return int(fits[-1]) + 1 if len(fits) else 1

    def expected_needed(self, pending: Sequence[Rejected] = ()) -> float:
        """The posterior mean of ``d`` (for tests and the benchmark)."""
        return float(self._weights(pending) @ self.d)


class TieredBelief:
    """One :class:`Belief` per *tier* of the priors: sorted ascending, a unit whose prior is
    ``TIER`` times its predecessor's starts a new tier. The caller's priors then say *which*
    units are likely needed and each tier learns its own density (a tier of units the caller
    believes unneeded can be all clean while the tier it believes needed is dense). Groups
    are formed inside one tier. Same interface as :class:`Belief`, over global indexes."""

    def __init__(self, priors: Sequence[float]) -> None:
        order = sorted(range(len(priors)), key=lambda i: priors[i])
        tiers: list[list[int]] = []
        for i in order:
            if not tiers or priors[i] >= TIER * priors[tiers[-1][-1]]:
                tiers.append([])
            tiers[-1].append(i)
        informed = len(tiers) > 1
        self.where = {i: (t, j) for t, members in enumerate(tiers) for j, i in enumerate(members)}
        self.tiers = [Belief([priors[i] for i in members], informed) for members in tiers]

    def copy(self) -> TieredBelief:
        other = TieredBelief.__new__(TieredBelief)
        other.where = self.where
        other.tiers = [b.copy() for b in self.tiers]
        return other

    def _split(self, units: Sequence[int]) -> dict[int, list[int]]:
        by: dict[int, list[int]] = {}
        for i in units:
            t, j = self.where[i]
            by.setdefault(t, []).append(j)
        return by

    def unneeded(self, units: Sequence[int]) -> None:
        for t, local in self._split(units).items():
            self.tiers[t].unneeded(local)

    def needed(self, unit: int, miss: float = 0.0) -> None:
        t, j = self.where[unit]
        self.tiers[t].needed(j, miss)

    def _local(self, tier: int, pending: Sequence[Rejected]) -> list[Rejected]:
        return [
            ([self.where[i][1] for i in g if self.where[i][0] == tier], miss)
            for g, miss in pending
            if g and self.where[g[0]][0] == tier
        ]

    def group_size(self, ordered: Sequence[int], pending: Sequence[Rejected]) -> int:
        """As :meth:`Belief.group_size`, for a prefix inside the tier of ``ordered[0]``."""
        if not ordered:
            return 0
        tier = self.where[ordered[0]][0]
        same = []
        for i in ordered:
            if self.where[i][0] != tier:
                break
            same.append(self.where[i][1])
        return self.tiers[tier].group_size(same, self._local(tier, pending))

    def expected_needed(self, pending: Sequence[Rejected] = ()) -> float:
        return sum(b.expected_needed(self._local(t, pending)) for t, b in enumerate(self.tiers))
