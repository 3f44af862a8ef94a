"""Which Dask worker runs the next sample.

Left to the scheduler, a sample lands on whichever worker is free, and that worker often lacks
the delta's anchor or some blob: it answers ``need``, and the retry, pinned to it, may queue
behind a sample another thread sent there meanwhile (measured with 16 workers: most samples
made a ``need`` round trip, and a few per round waited for a whole second sample). So the
runner places each sample itself: on a worker with the fewest of this runner's samples in
flight, and among those on the one that already holds most of the tree (the smallest delta
against an anchor it holds plus the blobs it was never sent), ties taken in turn. The task is
then pinned there with a loose restriction: if that worker has gone, Dask runs it elsewhere and
the ``need`` protocol still guarantees the right tree. Placement only decides where a sample
runs, never what it runs or how its outcome is read, so it cannot change any verdict.

The worker list is the scheduler's, refreshed at most every :data:`REFRESH_SECONDS` (workers
that joined later get samples; workers that left stop getting them). Pure bookkeeping: the
caller holds its own lock around every method.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from repomin.cluster import manifest as mf

#: Seconds between refreshes of the worker list from the scheduler.
REFRESH_SECONDS = 2.0


class Placement:
    """Samples in flight per worker, and the choice of the next worker."""

    def __init__(self, workers: Iterable[str], now: float = 0.0) -> None:
        self._busy: dict[str, int] = dict.fromkeys(workers, 0)
        self._turn = 0
        self._refreshed = now

    def due(self, now: float) -> bool:
        """Whether the worker list should be refreshed now (then not again for a while)."""
        if now - self._refreshed < REFRESH_SECONDS:
            return False
        self._refreshed = now
        return True

    @property
    def workers(self) -> list[str]:
        return list(self._busy)

    def update(self, workers: Iterable[str]) -> None:
        """The scheduler's current workers: new ones join idle, gone ones leave."""
        live = list(workers)
        if not live:
            return
        self._busy = {w: self._busy.get(w, 0) for w in live}

    def acquire(self, cost: Callable[[str], float], exclude: set[str]) -> str | None:
        """The worker for the next sample (counted busy until :meth:`release`); None if every
        worker is excluded. ``cost(worker)``: what shipping the tree to it costs."""
        free = [w for w in self._busy if w not in exclude]
        if not free:
            return None
        low = min(self._busy[w] for w in free)
        idle = [w for w in free if self._busy[w] == low]
        self._turn += 1
        start = self._turn % len(idle)
        order = idle[start:] + idle[:start]
        best = min(order, key=cost)  # min keeps the first of equal costs: ties in turn
        self._busy[best] += 1
        return best

    def release(self, worker: str) -> None:
        if self._busy.get(worker, 0) > 0:
            self._busy[worker] -= 1


def shipping_cost(
    target: mf.Manifest,
    wanted: set[str],
    anchors: Mapping[str, tuple[mf.Manifest, set[str]]],
    sent: Mapping[str, set[str]],
) -> Callable[[str], float]:
    """``cost(worker)``: manifest entries of the smallest delta against an anchor the worker
    holds (a full manifest without one) plus the blobs of ``wanted`` it was never sent."""
    sizes = {d: mf.delta(d, m, target).size for d, (m, _h) in anchors.items()}
    held: dict[str, list[str]] = {}
    for d, (_m, holders) in anchors.items():
        for w in holders:
            held.setdefault(w, []).append(d)

    def cost(worker: str) -> float:
        entries = min((sizes[d] for d in held.get(worker, [])), default=len(target))
        return entries + len(wanted - sent.get(worker, set()))

    return cost
