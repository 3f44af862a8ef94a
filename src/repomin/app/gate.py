"""The payload gate: search, final test, and -- when the test fails -- backtrack and search on.

Owns the loop of :func:`search_and_validate`, the one place where a failed final test changes
the course of a reduction instead of ending it. Under ``--sampling auto`` (``policy.gated``)
the k-th final test of a reduction is the exact binomial test of ``p > θ`` at level
``α_k = spend(α, k)``; each tests a fixed tree on fresh runs, and the levels sum to α, so the
exported payload reproduces at a rate ≤ θ with probability ≤ α however the search decided and
however often it backtracked (docs/statistics.md, "Payload gate"). Explicit ``--sampling``
modes test at α once and export whatever the result.

A failed gate that will be backtracked from is journalled before anything is done about it
(``Session.record_gate_failure``): a reduction killed between the failed gate and the
journalled revert resumes by backtracking, not by searching on from the tree that failed.
An interrupt during a final test (or after it, before export) ends the reduction as an
interrupt during the search does: exit 130 and nothing exported, or with
``--export-on-interrupt`` the tree so far without final runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from repomin.analysis.trace import TraceResult
from repomin.app import pipeline as stage
from repomin.app.session import Session
from repomin.errors import Interrupted
from repomin.report import execution as rx
from repomin.sampling.budget import StopSearch
from repomin.sampling.policy import MAX_GATES
from repomin.search.reducer import ReductionResult
from repomin.tree import Tree


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
    (budget, interrupt, nothing accepted, gates spent) the last result is returned as is.
    A resumed session whose journal ends with a failed gate backtracks before searching."""
    oracle, session = ctx.oracle, baselined.session
    if session is not None and ctx.options.resume and session.pending_backtrack():
        baselined = _backtrack_after(ctx, baselined, baselined.initial)
    _show_session_notes(ctx, session)
    searched = stage.search_stage(ctx, baselined, trace, protected)
    searched, final = _validate(ctx, searched, session)
    while (
        not final.passed
        and final.runs
        and oracle.policy.gated
        and oracle.policy.gates < MAX_GATES
        and searched.stop_reason in ("fixpoint", "max_rounds")
        and len(searched.history) > 1
    ):
        if session is not None:
            session.record_gate_failure(searched.tree)  # before escalating or backtracking
        baselined = replace(baselined, history=searched.history)
        baselined = _backtrack_after(ctx, baselined, searched.tree)
        searched = stage.search_stage(ctx, baselined, trace, protected)
        searched, final = _validate(ctx, searched, session)
    return searched, final


def _backtrack_after(
    ctx: stage.Context, baselined: stage.Baselined, failed: Tree
) -> stage.Baselined:
    """A failed gate (now, or journalled by a reduction that was killed before its revert):
    escalate single-run sampling (a no-op when the policy already did) and search again from
    the backtracked incumbent."""
    if ctx.oracle.escalate():
        rx.escalation_event(ctx.ledger, ctx.oracle.policy, failed)
    return replace(baselined, initial=failed, backtrack=True)


def _validate(
    ctx: stage.Context, searched: ReductionResult, session: Session | None
) -> tuple[ReductionResult, rx.FinalRuns]:
    """The final test; an interrupt during it ends the reduction (``interrupted``)."""
    try:
        return searched, stage.validate_stage(ctx, searched)
    except StopSearch:
        searched = interrupted(ctx, session, searched)
        return searched, stage.validate_stage(ctx, searched)  # no runs once interrupted


def interrupted(
    ctx: stage.Context, session: Session | None, searched: ReductionResult
) -> ReductionResult:
    """The search's result marked ``interrupted`` (exported without final runs, exit 130)
    under ``--export-on-interrupt``; otherwise :class:`Interrupted` (exit 130, nothing
    exported, the session kept for ``--resume``)."""
    if not ctx.options.export_on_interrupt:
        hint = f" --resume --session {ctx.session_root}" if session is not None else ""
        raise Interrupted(
            "interrupted; nothing was exported (the source tree is untouched); rerun "
            f"the same command with{hint or ' --export-on-interrupt next time'} to continue"
        )
    return replace(searched, stop_reason="interrupted")


def stopped_before_export(
    ctx: stage.Context, session: Session | None, searched: ReductionResult
) -> ReductionResult:
    """After the final test: a stop that came since (Ctrl-C during the runs in the user's own
    shell) is an interrupt like any other, never an export that looks complete."""
    if not ctx.stop.is_set() or searched.stop_reason == "interrupted":
        return searched
    return interrupted(ctx, session, searched)


def _show_session_notes(ctx: stage.Context, session: Session | None) -> None:
    """What reading a resumed session skipped or repaired, said once before the search."""
    if session is not None:
        for note in session.take_notes():
            ctx.progress.notice(note)
