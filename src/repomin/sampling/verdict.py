"""Decisions and their evidence: :class:`Verdict`, :class:`Baseline`, :class:`VerdictCache`.

A :class:`Verdict` is one decision on one tree with the counts it rests on and the confidence
it was taken at, so its event fields (rates, bounds) are derived from it alone. Sessions store
``Verdict.to_json()`` records (versioned). The cache maps tree digests to verdicts; while
rejections are being re-tested (a flaky oracle at its fixpoint) a not-yet-retested rejection is
not served from it.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from repomin.errors import SessionError
from repomin.runners.base import Outcome
from repomin.sampling import stats
from repomin.sampling.policy import Sampling

#: Version of :meth:`Verdict.to_json` records.
VERDICT_RECORD = 1


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision on one tree with its evidence."""

    accepted: bool
    passes: int
    runs: int
    policy: Sampling
    confidence: float = 0.95
    design: str | None = None
    family_index: int | None = None
    family_alpha: float | None = None
    early: bool = False
    saved: int = 0
    duration: float = 0.0
    retested: bool = False

    def evidence(self) -> dict[str, Any]:
        """The event fields the report lists (rates and bounds derived from the counts)."""
        c = self.confidence
        fields: dict[str, Any] = {
            "oracle_passes": self.passes,
            "oracle_runs": self.runs,
            "oracle_rate": self.passes / self.runs if self.runs else None,
            "lower_bound": stats.lower_bound(self.passes, self.runs, c) if self.runs else None,
            "upper_bound": stats.upper_bound(self.passes, self.runs, c) if self.runs else None,
            "bound_confidence": c if self.runs else None,
            "duration_seconds": round(self.duration, 6),
            "sampling_policy": self.policy.value,
            "design": self.design,
            "early_acceptance": self.early if self.accepted else None,
        }
        if self.family_index is not None:
            fields["candidate_family_index"] = self.family_index
            fields["candidate_family_alpha"] = self.family_alpha
            fields["candidate_family_confidence"] = c
        return fields

    def to_json(self) -> dict[str, Any]:
        return {"record": VERDICT_RECORD, **asdict(self), "policy": self.policy.value}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        data = dict(data)
        if data.pop("record", None) != VERDICT_RECORD:
            raise SessionError("session verdicts have an unknown record version; start a new one")
        data["policy"] = Sampling(data["policy"])
        return cls(**data)


@dataclass(frozen=True, slots=True)
class Baseline:
    passes: int
    runs: int
    lower: float
    upper: float
    exit_code: int | None
    timeouts: int
    outcomes: tuple[Outcome, ...] = field(repr=False, default=())

    @property
    def rate(self) -> float:
        return self.passes / self.runs if self.runs else 0.0

    @property
    def deterministic(self) -> bool:
        return self.passes == self.runs

    def to_json(self) -> dict[str, Any]:
        return {
            "passes": self.passes,
            "runs": self.runs,
            "lower": self.lower,
            "upper": self.upper,
            "exit_code": self.exit_code,
            "timeouts": self.timeouts,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Baseline:
        return cls(
            data["passes"],
            data["runs"],
            data["lower"],
            data["upper"],
            data["exit_code"],
            data["timeouts"],
        )


class VerdictCache:
    """Verdicts by tree digest (thread-safe); ``enabled=False`` remembers nothing."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._verdicts: dict[str, Verdict] = {}
        self._retesting = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._verdicts)

    def __contains__(self, digest: str) -> bool:
        return digest in self._verdicts

    @property
    def retesting(self) -> bool:
        return self._retesting

    def start_retesting(self) -> None:
        """From now on, every rejection not yet re-tested is decided once more."""
        self._retesting = True

    def get(self, digest: str) -> Verdict | None:
        """A cached verdict, except a not-yet-retested rejection while retesting is on."""
        if not self.enabled:
            return None
        with self._lock:
            hit = self._verdicts.get(digest)
        if hit is not None and self._retesting and not hit.accepted and not hit.retested:
            return None
        return hit

    def put(self, digest: str, verdict: Verdict) -> None:
        if self.enabled:
            with self._lock:
                self._verdicts[digest] = verdict

    def update(self, verdicts: dict[str, Verdict]) -> None:
        if self.enabled:
            with self._lock:
                self._verdicts.update(verdicts)

    def clear(self) -> None:
        with self._lock:
            self._verdicts.clear()
