"""Rules on the report's ``slippage`` object: recomputed, never trusted.

Owns :func:`check_slippage`. Each comparison (``final``, ``holdout``) must rest on the counts the
report records elsewhere (the baseline's and the final runs' in ``execution``, the holdout's in
``holdout_certification``), and its p-value and direction are recomputed with the same exact
Fisher test the writer used (:func:`repomin.sampling.stats.slippage.compare`); the overall
direction is
the first comparison that moved, and the advice is the sentence for that direction. Pure
functions over a report that already matches the shipped JSON Schema.
"""

from __future__ import annotations

from typing import Any

from repomin.report.rules import Problem, close, js
from repomin.sampling.stats.slippage import advice, compare


def _recorded(report: dict[str, Any], which: str) -> tuple[int, int] | None:
    ex = report.get("execution", {})
    if which == "final":
        passes, runs = ex.get("final_passes"), ex.get("final_runs")
    else:
        hold = report.get("holdout_certification") or {}
        passes, runs = hold.get("passes"), hold.get("completed_runs")
    if not isinstance(passes, int) or not isinstance(runs, int):
        return None
    return passes, runs


def _comparison(
    report: dict[str, Any], which: str, item: dict[str, Any], alpha: float
) -> list[Problem]:
    problems: list[Problem] = []
    ex = report.get("execution", {})
    base = (ex.get("baseline_passes"), ex.get("baseline_runs"))
    seen = (item["baseline_passes"], item["baseline_runs"])
    sample = (item["passes"], item["runs"])
    recorded = _recorded(report, which)
    if (base[1] is not None and seen != base) or (recorded is not None and sample != recorded):
        problems.append(
            Problem(
                "slippage.counts",
                f"slippage.{which} compares {sample[0]}/{sample[1]} with {seen[0]}/{seen[1]}, "
                f"but the report records {js(recorded)} against baseline {js(list(base))}",
            )
        )
    if not 0 <= sample[0] <= sample[1] or not 0 <= seen[0] <= seen[1] or not 0 < alpha < 1:
        return [*problems, Problem("slippage.counts", f"slippage.{which} counts are impossible")]
    again = compare(seen[0], seen[1], sample[0], sample[1], alpha=item["alpha"])
    if not close(again.p_value, item["p_value"]) or again.direction != item["direction"]:
        problems.append(
            Problem(
                "slippage.p_value",
                f"slippage.{which}: p_value {js(item['p_value'])} and direction "
                f"{js(item['direction'])} recompute to {again.p_value!r} and {again.direction!r}",
            )
        )
    return problems


def check_slippage(report: dict[str, Any]) -> list[Problem]:
    slip = report.get("slippage")
    if not isinstance(slip, dict):
        return []
    problems: list[Problem] = []
    alpha = slip["alpha"]
    moved = []
    for which in ("final", "holdout"):
        item = slip.get(which)
        if isinstance(item, dict):
            problems += _comparison(report, which, item, alpha)
            if item["direction"] != "none":
                moved.append(item["direction"])
    expected = moved[0] if moved else "none"
    if slip["direction"] != expected:
        problems.append(
            Problem(
                "slippage.direction",
                f"slippage.direction is {js(slip['direction'])}, the comparisons say {expected!r}",
            )
        )
    if slip["advice"] != advice(slip["direction"]):
        problems.append(
            Problem("slippage.advice", "slippage.advice is not the sentence for its direction")
        )
    return problems
