"""Counters for the report: per-phase accounting and the ordered event log.

Owns every counter of a reduction: per-phase counters, the run totals (all samples, candidate
runs and passes, incumbent checks) and the ordered event log. Counters change only through the
methods below, each under the ledger's lock, so that both accounting identities of the report
hold by construction and are re-checked by the validator:

    attempts = no_op + rejected + accepted + superseded + aborted
    oracle_sample_uses = oracle_samples + cache_hits

It also keeps the size history the report's pictures draw (``size_history``): the tree's size
after every change of the incumbent and where each pass and fixed-size stage began, each at the
count of oracle runs and the seconds since the start; :meth:`Ledger.size_history` downsamples it
to a bounded length.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

AttemptResult = Literal["no_op", "rejected", "accepted", "superseded", "aborted"]

#: Bounds of the report's ``size_history`` (each list is downsampled to at most this length).
HISTORY_POINTS = 256
HISTORY_STAGES = 256
#: Fixed-size stages whose event (with ``oracle_runs``) marks where their runs began.
_FIXED_STAGES = frozenset({"baseline", "final", "holdout"})


@dataclass(slots=True)
class PhaseCounters:
    name: str
    attempts: int = 0
    no_op: int = 0
    rejected: int = 0
    accepted: int = 0
    superseded: int = 0
    aborted: int = 0
    oracle_samples: int = 0
    cache_hits: int = 0
    samples_saved_by_early_stopping: int = 0
    bytes_removed: int = 0
    files_removed: int = 0
    duration_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "attempts": self.attempts,
            "no_op": self.no_op,
            "rejected": self.rejected,
            "accepted": self.accepted,
            "superseded": self.superseded,
            "aborted": self.aborted,
            "oracle_sample_uses": self.oracle_samples + self.cache_hits,
            "oracle_samples": self.oracle_samples,
            "cache_hits": self.cache_hits,
            "samples_saved_by_early_stopping": self.samples_saved_by_early_stopping,
            "files_removed": self.files_removed,
            "bytes_removed": self.bytes_removed,
            "duration_seconds": round(self.duration_seconds, 6),
        }


@dataclass
class Ledger:
    """All counters and events of one reduction (thread-safe)."""

    phases: dict[str, PhaseCounters] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    coverage: Literal["complete", "partial"] = "complete"
    samples: int = 0
    candidate_runs: int = 0
    candidate_passes: int = 0
    incumbent_checks: int = 0
    #: Seconds of the samples: the runner's CPU time where it reports one, else the sample's
    #: wall time (``sample_cpu``: how many samples reported CPU time); ``sample_wall_seconds``:
    #: their wall time, always.
    sample_seconds: float = 0.0
    sample_cpu: int = 0
    sample_wall_seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _started: float = field(default_factory=time.monotonic, repr=False)
    #: (runs, seconds, files, bytes) after each change of the tree, in order.
    _sizes: list[tuple[int, float, int, int]] = field(default_factory=list, repr=False)
    #: (name, runs, seconds) where each pass or fixed-size stage began, in order.
    _stages: list[tuple[str, int, float]] = field(default_factory=list, repr=False)

    def add_sample(self, phase: str | None, wall: float = 0.0, cpu: float | None = None) -> int:
        """One oracle run (baseline, search, final, holdout) that took ``wall`` seconds and,
        when the runner measured it, ``cpu`` seconds of CPU time; the new total."""
        counters = self.phase(phase) if phase is not None else None
        with self._lock:
            self.samples += 1
            self.sample_wall_seconds += max(0.0, wall)
            self.sample_seconds += max(0.0, wall if cpu is None else cpu)
            self.sample_cpu += cpu is not None
            if counters is not None:
                counters.oracle_samples += 1
            return self.samples

    def add_candidate_run(self, reproduced: bool) -> None:
        with self._lock:
            self.candidate_runs += 1
            self.candidate_passes += reproduced

    def add_incumbent_check(self) -> None:
        with self._lock:
            self.incumbent_checks += 1

    def add_removed(self, phase: str, files: int, bytes_: int) -> None:
        counters = self.phase(phase)
        with self._lock:
            counters.files_removed += files
            counters.bytes_removed += bytes_

    def add_duration(self, phase: str, seconds: float) -> None:
        counters = self.phase(phase)
        with self._lock:
            counters.duration_seconds += seconds

    def mark_partial(self) -> None:
        """Phase statistics cover only this process (a resumed session)."""
        with self._lock:
            self.coverage = "partial"

    def phase(self, name: str) -> PhaseCounters:
        with self._lock:
            counters = self.phases.get(name)
            if counters is None:
                counters = self.phases[name] = PhaseCounters(name)
            return counters

    def attempt(self, phase: str, result: AttemptResult) -> None:
        counters = self.phase(phase)
        with self._lock:
            counters.attempts += 1
            setattr(counters, result, getattr(counters, result) + 1)

    def rebook_samples(self, phase: str, n: int) -> None:
        """``n`` samples taken outside any phase (final runs started early: ``prefetch.py``)
        that were not used as final runs: they count as samples of ``phase``."""
        counters = self.phase(phase)
        with self._lock:
            counters.oracle_samples += n

    def add_cache_hit(self, phase: str) -> None:
        counters = self.phase(phase)
        with self._lock:
            counters.cache_hits += 1

    def add_saved(self, phase: str, saved: int) -> None:
        counters = self.phase(phase)
        with self._lock:
            counters.samples_saved_by_early_stopping += saved

    def event(self, phase: str, description: str, **fields: Any) -> dict[str, Any]:
        """Log an event. That of a fixed-size stage (baseline, final, holdout) with its
        ``oracle_runs`` also marks in the size history where the stage's runs began."""
        with self._lock:
            elapsed = round(time.monotonic() - self._started, 6)
            record: dict[str, Any] = {
                "index": len(self.events) + 1,
                "phase": phase,
                "description": description,
                "elapsed_seconds": elapsed,
            }
            record.update({k: v for k, v in fields.items() if v is not None})
            record.setdefault("duration_seconds", 0.0)
            self.events.append(record)
            runs = record.get("oracle_runs")
            if phase in _FIXED_STAGES and isinstance(runs, int):
                began = elapsed - float(record["duration_seconds"])
                self._stage(phase, self.samples - runs, began)
                if "files" in record and "bytes" in record:
                    self._size(elapsed, record["files"], record["bytes"])
            return record

    # -- size history (the report's ``size_history``) ----------------------------------------

    def track_size(self, files: int, bytes_: int) -> None:
        """The incumbent changed (accepted, backtracked): its size, now."""
        with self._lock:
            self._size(time.monotonic() - self._started, files, bytes_)

    def track_stage(self, name: str, files: int, bytes_: int) -> None:
        """Pass ``name`` starts on a tree of ``files``/``bytes_``, now."""
        with self._lock:
            now = time.monotonic() - self._started
            self._stage(name, self.samples, now)
            self._size(now, files, bytes_)

    def _size(self, seconds: float, files: int, bytes_: int) -> None:
        """The tree's size now (under the lock), when it differs from the last one recorded."""
        if not self._sizes or self._sizes[-1][2:] != (files, bytes_):
            self._sizes.append((self.samples, seconds, files, bytes_))

    def _stage(self, name: str, runs: int, seconds: float) -> None:
        """A stage starts (under the lock): never before the previous one (final runs started
        early beside the search stay in the search's stages)."""
        if self._stages:
            _, last_runs, last_seconds = self._stages[-1]
            runs, seconds = max(runs, last_runs), max(seconds, last_seconds)
        self._stages.append((name, max(0, runs), max(0.0, seconds)))

    def size_history(self) -> dict[str, Any] | None:
        """The report's ``size_history`` (None before anything was tracked): the points
        downsampled to the last one of each of at most ``HISTORY_POINTS`` equal run intervals,
        stages that drew no run dropped and, beyond ``HISTORY_STAGES``, the ones with the
        fewest runs merged into the stage before them."""
        with self._lock:
            sizes, stages, total = list(self._sizes), list(self._stages), self.samples
        if not sizes:
            return None
        kept = _thin_stages(stages, total)
        return {
            "points": [
                {"runs": r, "seconds": round(t, 3), "files": f, "bytes": b}
                for r, t, f, b in _thin_points(sizes)
            ],
            "stages": [{"name": n, "runs": r, "seconds": round(t, 3)} for n, r, t in kept],
            "recorded_points": len(sizes),
            "recorded_stages": len(stages),
        }

    @property
    def attempts(self) -> int:
        return sum(p.attempts for p in self.phases.values())

    @property
    def accepted(self) -> int:
        return sum(p.accepted for p in self.phases.values())

    @property
    def cache_hits(self) -> int:
        return sum(p.cache_hits for p in self.phases.values())


def _thin_points(
    sizes: list[tuple[int, float, int, int]], limit: int = HISTORY_POINTS
) -> list[tuple[int, float, int, int]]:
    """At most ``limit`` points: the first, then the last of each of ``limit - 1`` equal
    intervals of runs (the tree's size at that interval's end)."""
    if len(sizes) <= limit:
        return sizes
    first, span = sizes[0][0], max(1, sizes[-1][0] - sizes[0][0])
    last_of: dict[int, tuple[int, float, int, int]] = {}
    for point in sizes[1:]:
        last_of[min(limit - 2, (point[0] - first) * (limit - 1) // span)] = point
    return [sizes[0], *(last_of[k] for k in sorted(last_of))]


def _thin_stages(
    stages: list[tuple[str, int, float]], total: int, limit: int = HISTORY_STAGES
) -> list[tuple[str, int, float]]:
    """Stages that drew runs (the last one kept anyway), at most ``limit``: beyond it the
    narrowest (fewest runs; the later of equals) are dropped, their runs drawn as the previous
    stage's."""
    if not stages:
        return []
    ends = [s[1] for s in stages[1:]] + [total]
    drew = [s for s, end in zip(stages, ends, strict=True) if end > s[1]]
    if not drew or drew[-1] is not stages[-1]:
        drew.append(stages[-1])
    if len(drew) <= limit:
        return drew
    ends = [s[1] for s in drew[1:]] + [total]
    width = sorted(range(1, len(drew)), key=lambda i: (ends[i] - drew[i][1], -i))
    dropped = set(width[: len(drew) - limit])
    return [s for i, s in enumerate(drew) if i not in dropped]
