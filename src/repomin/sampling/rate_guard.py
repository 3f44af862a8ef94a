"""Slippage of a flaky failure's rate: the report's ``slippage`` record and ``--keep-rate``.

A flaky failure can slip into a different, deterministic one: the reduced test fails every run
for another reason and the regex still matches. Two uses of the exact two-sample
test in :mod:`repomin.sampling.stats.slippage`:

* :func:`slippage_record` compares the final runs (and the holdout's) with the baseline
  (two-sided, at ``alpha = 1 - confidence``) for the report, the summary and ``REPOMIN.md``.
* :class:`KeepRate` is the ``OracleHooks.accept`` predicate of ``--keep-rate``: every candidate
  the sequential test accepted gets ``runs`` *fresh* runs (as many as the baseline had), and it
  is rejected when their rate is significantly above the baseline's (one-sided Fisher test at
  ``alpha``). Fresh runs, not the verdict's own: the sequential test stops early on lucky
  streaks, so its counts are biased upward and would reject candidates whose rate did not move.
  A baseline that reproduced in every run can never be exceeded, so the hook then costs
  nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from repomin.sampling.parallel import map_samples
from repomin.sampling.stats.slippage import TEST_ID, advice, compare, rate_above_baseline
from repomin.sampling.verdict import Baseline, Verdict
from repomin.tree import Tree

if TYPE_CHECKING:
    from repomin.sampling.oracle import Oracle


class CurrentPass:
    """The name of the running pass, set by the search's ``on_pass`` callback (the phase in
    which :class:`KeepRate`'s fresh runs are counted)."""

    def __init__(self) -> None:
        self.name: str | None = None

    def set(self, name: str | None) -> None:
        self.name = name

    def get(self) -> str | None:
        return self.name


class KeepRate:
    """``OracleHooks.accept`` for ``--keep-rate`` (thread-safe counters)."""

    def __init__(
        self,
        baseline: Baseline,
        alpha: float,
        run: Callable[[Tree], bool],
        jobs: int = 1,
    ) -> None:
        self._baseline = baseline
        self._alpha = alpha
        self._run = run
        self._jobs = max(1, jobs)
        self._lock = threading.Lock()
        self.runs = baseline.runs
        self.checked = 0
        self.rejected = 0

    @property
    def active(self) -> bool:
        """False when the baseline reproduced every run (nothing can be above it)."""
        return self._baseline.passes < self._baseline.runs

    def __call__(self, tree: Tree, verdict: Verdict) -> bool:
        if not self.active:
            return True
        passes = sum(map_samples(lambda _i: self._run(tree), self.runs, self._jobs))
        above = rate_above_baseline(
            self._baseline.passes, self._baseline.runs, passes, self.runs, alpha=self._alpha
        )
        with self._lock:
            self.checked += 1
            self.rejected += above
        return not above

    def to_json(self) -> dict[str, Any]:
        return {
            "runs_per_check": self.runs if self.active else 0,
            "checked": self.checked,
            "rejected": self.rejected,
        }


def attach_keep_rate(
    oracle: Oracle,
    baseline: Baseline,
    confidence: float,
    jobs: int,
    phase: Callable[[], str | None],
) -> KeepRate:
    """Install a :class:`KeepRate` as ``oracle``'s ``accept`` hook; its fresh runs are oracle
    samples of the running pass (``phase()``)."""

    def run(tree: Tree) -> bool:
        outcome = oracle.sample(tree, "keep-rate", phase=phase())
        return oracle.contract.reproduces(outcome)

    keep = KeepRate(baseline, round(1 - confidence, 12), run, jobs)
    oracle.attach(replace(oracle.hooks, accept=keep))
    return keep


def slippage_record(
    baseline: Baseline,
    final: tuple[int, int],
    holdout: Mapping[str, Any],
    alpha: float,
    keep_rate: KeepRate | None,
) -> dict[str, Any]:
    """The report's ``slippage`` object: the final runs' (and the holdout record's completed
    runs') rate against the baseline's."""
    completed = holdout.get("completed_runs") or 0
    held = (int(holdout["passes"]), int(completed)) if completed else None

    def one(sample: tuple[int, int] | None) -> dict[str, Any] | None:
        if sample is None or sample[1] == 0:
            return None
        return compare(baseline.passes, baseline.runs, *sample, alpha=alpha).to_json()

    final_json, holdout_json = one(final), one(held)
    directions = [r["direction"] for r in (final_json, holdout_json) if r is not None]
    direction = next((d for d in directions if d != "none"), "none")
    return {
        "test": TEST_ID,
        "alpha": alpha,
        "direction": direction,
        "advice": advice(direction),  # type: ignore[arg-type]
        "final": final_json,
        "holdout": holdout_json,
        "keep_rate": keep_rate.to_json() if keep_rate is not None else None,
    }
