"""The payload gate: search, final test, and -- when the test fails -- backtrack and search on.

Owns the loop of :func:`search_and_validate`, the one place where a failed final test changes
the course of a reduction instead of ending it. Under ``--sampling auto`` (``policy.gated``)
the k-th final test of a reduction is the exact binomial test of ``p > θ`` at level
``α_k = spend(α, k)``; each tests a fixed tree on fresh runs, and the levels sum to α, so the
exported payload reproduces at a rate ≤ θ with probability ≤ α however the search decided and
however often it backtracked (docs/statistics.md, "Payload gate"). Explicit ``--sampling``
modes test at α once and export whatever the result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from repomin.analysis.trace import TraceResult
from repomin.app import pipeline as stage
from repomin.report import execution as rx
from repomin.sampling.policy import MAX_GATES
from repomin.search.reducer import ReductionResult


def search_and_validate(
    ctx: stage.Context,
    baselined: stage.Baselined,
    trace: TraceResult,
    protected: Callable[[str], bool],
) -> tuple[ReductionResult, rx.FinalRuns]:
    """Search, then the final test; under the payload gate a failed final test at a search
    fixpoint escalates single-run sampling to the exact design (θ unchanged), bisects the
    accepted history for the last tree that passes a fresh exact test, revokes every later one
    and searches again -- at most ``MAX_GATES`` final tests. When the gate cannot backtrack
    (budget, interrupt, nothing accepted, gates spent) the last result is returned as is."""
    oracle = ctx.oracle
    searched = stage.search_stage(ctx, baselined, trace, protected)
    final = stage.validate_stage(ctx, searched)
    while (
        not final.passed
        and final.runs
        and oracle.policy.gated
        and oracle.policy.gates < MAX_GATES
        and searched.stop_reason in ("fixpoint", "max_rounds")
        and len(searched.history) > 1
    ):
        if oracle.escalate():
            rx.escalation_event(ctx.ledger, oracle.policy, searched.tree)
        baselined = replace(
            baselined, initial=searched.tree, history=searched.history, backtrack=True
        )
        searched = stage.search_stage(ctx, baselined, trace, protected)
        final = stage.validate_stage(ctx, searched)
    return searched, final
