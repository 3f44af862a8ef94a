"""Counters for the report: per-phase accounting and the ordered event log.

Owns every counter of a reduction: per-phase counters, the run totals (all samples, candidate
runs and passes, incumbent checks) and the ordered event log. Counters change only through the
methods below, each under the ledger's lock, so that both accounting identities of the report
hold by construction and are re-checked by the validator:

    attempts = no_op + rejected + accepted + superseded + aborted
    oracle_sample_uses = oracle_samples + cache_hits
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

AttemptResult = Literal["no_op", "rejected", "accepted", "superseded", "aborted"]


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
        with self._lock:
            record: dict[str, Any] = {
                "index": len(self.events) + 1,
                "phase": phase,
                "description": description,
                "elapsed_seconds": round(time.monotonic() - self._started, 6),
            }
            record.update({k: v for k, v in fields.items() if v is not None})
            record.setdefault("duration_seconds", 0.0)
            self.events.append(record)
            return record

    @property
    def attempts(self) -> int:
        return sum(p.attempts for p in self.phases.values())

    @property
    def accepted(self) -> int:
        return sum(p.accepted for p in self.phases.values())

    @property
    def cache_hits(self) -> int:
        return sum(p.cache_hits for p in self.phases.values())
