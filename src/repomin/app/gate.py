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
from repomin.app import execution as rx
from repomin.app import pipeline as stage
from repomin.app.session import Session
from repomin.app.user_shell import plan
from repomin.errors import Interrupted
from repomin.sampling.budget import StopSearch, after_search_seconds
from repomin.sampling.policy import MAX_GATES
from repomin.search.reducer import ReductionResult
from repomin.tree import Tree


def search_and_validate(
    ctx: stage.Context,
    baselined: stage.Baselined,
    trace: TraceResult,
    protected: Callable[[str], bool],
) -> tuple[ReductionResult, rx.FinalRuns]:
    """Search, then the final test; under the payload gate the reduction's first failed final
    test at a search fixpoint whose own rate is above θ gets a second test of the same tree,
    sized for that rate; a failed test without one escalates single-run sampling to the exact
    design (θ unchanged), bisects the accepted history for the last tree that passes a fresh
    exact test, revokes every later one and searches again -- at most ``MAX_GATES`` final
    tests. When the gate cannot backtrack (budget, interrupt, nothing accepted, gates spent)
    the last result is returned as is.
    A resumed session whose journal ends with a failed gate backtracks before searching."""
    oracle, session = ctx.oracle, baselined.session
    pending = session is not None and ctx.options.resume and session.pending_backtrack()
    _show_resumed(ctx, baselined, pending)
    if pending:
        baselined = _backtrack_after(ctx, baselined, baselined.initial)
    _show_session_notes(ctx, session)
    _keep_time_after_search(ctx, baselined)
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
        if session is not None:  # before a second test, escalating or backtracking: a kill
            session.record_gate_failure(searched.tree)  # then resumes by backtracking
        runs = _second_test_runs(ctx, final)  # after the first gate only: never twice
        if runs is not None:
            searched, final = _validate(ctx, searched, session, runs)
            continue
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


def _second_test_runs(ctx: stage.Context, final: rx.FinalRuns) -> int | None:
    """A failed gate whose own rate is above θ: the n of a second test of the same tree,
    announced (None: backtrack now; ``SamplingPolicy.second_test_runs``)."""
    policy = ctx.oracle.policy
    runs = policy.second_test_runs(ctx.options.sampling.final_runs, final.passes, final.runs)
    if runs is None or not _fits(ctx, runs):
        return None
    message = (
        f"payload gate {final.gate} failed at {final.passes}/{final.runs} runs, a rate above "
        f"θ = {policy.theta:.3g}: the same tree gets a second test of up to {runs} runs "
        "before any backtracking"
    )
    ctx.ledger.event("final", message, decision="info")
    ctx.progress.notice(message)
    return runs


def _validate(
    ctx: stage.Context,
    searched: ReductionResult,
    session: Session | None,
    runs: int | None = None,
) -> tuple[ReductionResult, rx.FinalRuns]:
    """The final test (``runs``: its n when sized by the caller); an interrupt during it ends
    the reduction (``interrupted``). Under ``--deadline`` a final test that does not fit in
    the time left does not run at all."""
    _show_search_cut(ctx)
    if not _final_test_fits(ctx, searched):
        return searched, _no_final_test(ctx, searched)
    try:
        return searched, stage.validate_stage(ctx, searched, runs)
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


def _show_resumed(ctx: stage.Context, baselined: stage.Baselined, pending: bool) -> None:
    """What ``--resume`` found, said once before the search goes on."""
    if baselined.session is None or not ctx.options.resume:
        return
    base, tree = baselined.baseline, baselined.initial
    backtrack = (
        "a failed final test is pending: backtracking first" if pending else "no backtrack pending"
    )
    restored = "restored" if not base.outcomes else "rerun"  # a stored one keeps no outcomes
    ctx.progress.notice(
        f"resuming: baseline {restored} ({base.passes}/{base.runs} runs reproduced); "
        f"{len(ctx.oracle.cache)} trees already decided; "
        f"{len(baselined.history) - 1} accepted mutations; the incumbent has "
        f"{tree.file_count} files, {tree.byte_count} B; {backtrack}"
    )


# -- --deadline -------------------------------------------------------------------------------


def mean_run_seconds(ctx: stage.Context) -> float:
    """The mean wall time of the oracle's runs so far: what one more run is estimated to take."""
    ledger = ctx.ledger
    return ledger.sample_wall_seconds / ledger.samples if ledger.samples else 0.0


def _shell_checked(ctx: stage.Context) -> bool:
    """Whether the runs in your shell apply to these samples (``pipeline.user_shell_stage``
    skips them for Docker and cluster samples)."""
    runner = ctx.runner
    return runner.backend == "host" and runner.describe().get("dispatch_engine") is None


def _keep_time_after_search(ctx: stage.Context, baselined: stage.Baselined) -> None:
    """``--deadline``: the search stops when the time left is what the final test, the runs
    in your shell and the holdout are estimated to take at this ``--jobs`` (re-estimated from
    the mean run at every budgeted sample; the baseline's counts stand in for the final test's
    in the plan of the runs in your shell)."""
    options, deadline = ctx.options, ctx.options.budget.deadline
    if deadline is None:
        return
    base = baselined.baseline
    shell = 0
    if options.user_shell_runs and _shell_checked(ctx):
        confidence = options.sampling.confidence
        shell = plan(options.user_shell_runs, base.passes, base.runs, confidence)[0]
    holdout = options.holdout.runs if options.holdout is not None else 0
    final = ctx.oracle.planned_final_runs()

    def estimate() -> float:
        return after_search_seconds(
            mean_run_seconds(ctx),
            jobs=options.jobs,
            final_runs=final,
            shell_runs=shell,
            holdout_runs=holdout,
        )

    deadline.keep_after_search(estimate)


def _show_search_cut(ctx: stage.Context) -> None:
    deadline = ctx.options.budget.deadline
    if deadline is None or "search" not in deadline.cuts:
        return
    ctx.progress.notice(
        f"deadline: the search stops with {max(0.0, deadline.left()):.1f} s left of --deadline "
        f"{deadline.seconds:g} s, for the final test, the runs in your shell and the export "
        f"(estimated at {mean_run_seconds(ctx):.2f} s a run)"
    )


def _final_test_fits(ctx: stage.Context, searched: ReductionResult) -> bool:
    """Whether the whole final test fits before ``--deadline`` (it is never shortened: its
    size is the policy's, and the report's evidence is that test)."""
    deadline = ctx.options.budget.deadline
    if deadline is None or searched.stop_reason == "interrupted":
        return True
    planned = ctx.oracle.planned_final_runs()
    if not planned or _fits(ctx, planned):
        return True
    need = _seconds(ctx, planned)
    deadline.cut("final_test")
    ctx.progress.notice(
        f"deadline: no time for the final test ({planned} runs, about {need:.1f} s; "
        f"{max(0.0, deadline.left()):.1f} s left of --deadline {deadline.seconds:g} s): the "
        "best tree so far is exported WITHOUT a final test (exit 1)"
    )
    return False


def _seconds(ctx: stage.Context, runs: int) -> float:
    return after_search_seconds(
        mean_run_seconds(ctx), jobs=ctx.options.jobs, final_runs=runs, shell_runs=0,
        holdout_runs=0,
    )  # fmt: skip


def _fits(ctx: stage.Context, runs: int) -> bool:
    """Do ``runs`` final runs fit before ``--deadline`` (always without one)?"""
    deadline = ctx.options.budget.deadline
    return deadline is None or _seconds(ctx, runs) <= deadline.left()


def _no_final_test(ctx: stage.Context, searched: ReductionResult) -> rx.FinalRuns:
    """The record of a final test that did not run (as after an interrupt: no runs)."""
    if ctx.timeouts is not None:
        ctx.timeouts.disarm()  # the holdout's runs get the full --timeout
    ctx.progress.stage("final", 0)
    alpha = ctx.oracle.policy.alpha
    final = rx.FinalRuns(
        passes=0, runs=0, exit_code=None, passed=False, duration=0.0, alpha=alpha, gate=None
    )
    rx.final_event(ctx.ledger, final, searched.tree)
    return final
