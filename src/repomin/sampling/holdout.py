"""Holdout certification: fresh fixed-size runs of the frozen exported payload.

The payload is read back from disk after export (so the runs see exactly what was exported),
its digest checked against the accepted tree, and ``planned_runs`` fresh samples are run with
the same command, environment, contract and concurrency as the search. No search decision ever
reads these samples, so the exact one-sided binomial test (docs/statistics.md §A5) has error exactly
``alpha``. The result is the report's ``holdout_certification`` object, derived from the
recorded samples by :func:`holdout_record`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from repomin.errors import UsageError
from repomin.failure.contract import FailureContract
from repomin.runners.base import Outcome
from repomin.sampling import stats
from repomin.sampling.oracle import StopSearch
from repomin.sampling.parallel import map_samples
from repomin.tree import Tree

POLICY = "holdout-exact-binomial-v1"
HOLDOUT_SCHEMA_VERSION = 1


class Artifact(Protocol):
    """What the record names of the payload the runs saw: its two digests (the report's
    :class:`~repomin.report.fingerprint.Fingerprint` of the exported payload)."""

    @property
    def tree_sha256(self) -> str: ...

    @property
    def tree_content_sha256(self) -> str: ...


@dataclass(frozen=True, slots=True)
class HoldoutConfig:
    """``min_rate`` None: the candidate threshold θ, known after the baseline (``resolved``)."""

    runs: int
    min_rate: float | None
    alpha: float = 0.05

    def resolved(self, theta: float) -> HoldoutConfig:
        return self if self.min_rate is not None else replace(self, min_rate=theta)

    def __post_init__(self) -> None:
        if self.runs < 1:
            raise UsageError("--holdout-runs must be at least 1")
        if not 0 < self.alpha < 1:
            raise UsageError("--holdout-confidence must be in (0, 1), e.g. 0.95")
        if self.min_rate is not None and not 0 < self.min_rate < 1:
            raise UsageError("--holdout-min-rate must be in (0, 1)")


def sample_record(index: int, outcome: Outcome, reproduced: bool) -> dict[str, Any]:
    if outcome.timed_out:
        kind = "timed_out"
    elif outcome.resource_exhausted:
        kind = "resource_exhausted"
    else:
        kind = "passed" if reproduced else "failed"
    return {
        "index": index,
        "outcome": kind,
        "accepted": reproduced,
        "timed_out": outcome.timed_out,
        "resource_exhausted": outcome.resource_exhausted,
        "exit_code": outcome.exit_code,
        "duration_seconds": round(outcome.duration, 6),
    }


def interrupted_record(index: int) -> dict[str, Any]:
    return {
        "index": index,
        "outcome": "interrupted",
        "accepted": False,
        "timed_out": False,
        "resource_exhausted": False,
        "exit_code": None,
        "duration_seconds": None,
    }


def holdout_record(
    config: HoldoutConfig,
    samples: list[dict[str, Any]],
    artifact: Artifact,
    jobs: int,
    *,
    aborted: bool = False,
) -> dict[str, Any]:
    """The ``holdout_certification`` object, derived from the recorded samples only."""
    if config.min_rate is None:
        raise ValueError("resolve the holdout's min_rate (HoldoutConfig.resolved) first")
    p0 = config.min_rate
    completed = len(samples)
    passes = sum(1 for s in samples if s["accepted"])
    record: dict[str, Any] = {
        "schema_version": HOLDOUT_SCHEMA_VERSION,
        "policy": POLICY,
        "planned_runs": config.runs,
        "completed_runs": completed,
        "passes": passes,
        "min_rate": config.min_rate,
        "alpha": config.alpha,
        "timeouts": sum(1 for s in samples if s["outcome"] == "timed_out"),
        "resource_exhausted": sum(1 for s in samples if s["outcome"] == "resource_exhausted"),
        "interrupted": sum(1 for s in samples if s["outcome"] == "interrupted"),
        "ordinary_failures": sum(1 for s in samples if s["outcome"] == "failed"),
        "artifact_tree_sha256": artifact.tree_sha256,
        "artifact_tree_content_sha256": artifact.tree_content_sha256,
        "jobs": jobs,
        "samples": samples,
    }
    if completed < config.runs or record["interrupted"]:
        record["status"] = "aborted" if aborted else "interrupted"
        return record
    result = stats.holdout_test(passes, config.runs, p0, config.alpha)
    record.update(
        {
            "status": "certified" if result.certified else "rejected",
            "observed_rate": result.observed_rate,
            "lower_bound": result.lower_bound,
            "upper_bound": result.upper_bound,
            "p_value": result.p_value,
            "confidence": result.confidence,
            "k_crit": result.k_crit,
            "exact_gate_passed": result.certified,
        }
    )
    return record


def run_holdout(
    *,
    tree: Tree,
    config: HoldoutConfig,
    sample: Callable[[Tree, str], Outcome],
    contract: FailureContract,
    artifact: Artifact,
    jobs: int,
    stop: threading.Event,
) -> dict[str, Any]:
    """Run the holdout; an interruption keeps the completed samples (contiguous indexes)."""
    results: dict[int, dict[str, Any]] = {}

    def one(i: int) -> None:
        if stop.is_set():
            return
        try:
            outcome = sample(tree, f"holdout-{i + 1}")
        except StopSearch:
            return
        if stop.is_set() and (outcome.timed_out or outcome.exit_code is None or outcome.signal):
            # Killed by the interruption: no execution evidence.
            results[i] = interrupted_record(i + 1)
            return
        results[i] = sample_record(i + 1, outcome, contract.reproduces(outcome))

    map_samples(one, config.runs, jobs)
    contiguous: list[dict[str, Any]] = []
    for i in range(config.runs):
        if i not in results:
            break
        contiguous.append(results[i])
    return holdout_record(config, contiguous, artifact, jobs)


def not_requested() -> dict[str, Any]:
    return {"status": "not_requested"}
