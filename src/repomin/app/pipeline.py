"""The stages of one reduction, each a function of small frozen records.

Owns the order and the hand-offs of a reduction::

    select ─▶ Selected ─▶ baseline ─▶ Baselined ─▶ trace ─▶ TraceResult ─▶ search ─▶
    ReductionResult ─▶ validate ─▶ FinalRuns ─▶ export ─▶ Fingerprint ─▶ certify ─▶ holdout
    record ─▶ report ─▶ report dict

Every stage takes the :class:`Context` (the collaborators) and the records of earlier stages
and returns its own record (events, ``execution``: :mod:`repomin.app.execution`);
``app.execute`` strings the stages together; tests may call them one by one."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repomin.analysis.failingcall import Call, Frame, capture_calls
from repomin.analysis.semantic import no_provenance
from repomin.analysis.source_access import SourceAccess, forbidden_roots, source_visible
from repomin.analysis.trace import TraceResult, disabled, trace_opened_files
from repomin.app import execution as rx
from repomin.app.diagnose import (
    home_paths_present,
    home_reads,
    provisionally_reproduces,
    watched_baseline,
    your_shell_note,
)
from repomin.app.export import check_output_location, export_payload
from repomin.app.options import ReduceOptions
from repomin.app.pass_instances import pass_instances
from repomin.app.progress import Progress
from repomin.app.selection import Selection, SelectionOptions, select
from repomin.app.session import Session, StoredBaseline
from repomin.app.shell_first import compare
from repomin.app.user_shell import (
    SAMPLE_NAMES,
    ShellCheck,
    check_in_user_shell,
    plan,
    run_in_user_shell,
    user_environment,
)
from repomin.app.versions import probe_through, probe_versions
from repomin.errors import BaselineError, Interrupted, ReproMinError
from repomin.passes import STALL_ONLY
from repomin.report.build import ReportInputs, build_report
from repomin.report.excerpt import failure_excerpt
from repomin.report.fingerprint import Fingerprint
from repomin.runners.base import Outcome, Runner
from repomin.sampling.accounting import Ledger
from repomin.sampling.budget import StopOrTime
from repomin.sampling.holdout import not_requested, run_holdout
from repomin.sampling.oracle import Oracle, StopSearch
from repomin.sampling.rate_guard import CurrentPass, KeepRate, slippage_record
from repomin.sampling.timeouts import AdaptiveTimeoutRunner
from repomin.sampling.verdict import Baseline, Verdict
from repomin.search.incumbent import Mutation
from repomin.search.prefetch import FinalPrefetch
from repomin.search.reducer import Reduction, ReductionResult, run_passes
from repomin.tree import Tree


@dataclass(frozen=True, slots=True)
class Context:
    """The collaborators of one reduction (built once by ``app.execute``)."""

    options: ReduceOptions
    runner: Runner
    oracle: Oracle
    ledger: Ledger
    progress: Progress
    stop: threading.Event
    session_root: Path
    started: float
    #: The pass running now (samples drawn by hooks are counted in it).
    current_pass: CurrentPass = field(default_factory=lambda: CurrentPass())
    #: The adaptive candidate timeout (armed for the search, disarmed for final runs).
    timeouts: AdaptiveTimeoutRunner | None = None
    prefetch: FinalPrefetch | None = None  # final runs in idle slots (prefetch.py)


@dataclass(frozen=True, slots=True)
class Selected:
    selection: Selection
    source: Tree
    session_config: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Baselined:
    baseline: Baseline
    session: Session | None
    initial: Tree  # where the search starts (the journal's latest tree on resume)
    history: tuple[Tree, ...] = ()  # accepted trees, source first (the journal's on resume)
    backtrack: bool = False  # a payload gate failed: backtrack before searching (gate.py)
    #: Tool versions asked through the runner (Docker, a cluster); None on the host backend.
    tool_versions: dict[str, str] | None = None


# -- select -----------------------------------------------------------------------------------


def select_stage(options: ReduceOptions) -> Selected:
    check_output_location(options.src, options.output, force=options.force)
    selection = select(options.src, options.selection)
    return Selected(selection, selection.tree, options.session_config(selection.tree.digest))


def open_session(options: ReduceOptions, selected: Selected, root: Path) -> Session | None:
    """The session of this reduction; created before the baseline so that an interrupted
    baseline can be resumed (``app.execute`` removes a new session that never got a baseline
    when the reduction fails for any other reason)."""
    if not options.use_session:
        if options.resume:
            from repomin.errors import UsageError

            raise UsageError("--resume needs a session; drop --no-session")
        return None
    if options.resume:
        return Session.open(root, selected.session_config)
    return Session.create(root, selected.session_config)  # raises with the fix if one exists


# -- baseline ---------------------------------------------------------------------------------


def baseline_stage(ctx: Context, selected: Selected, session: Session | None) -> Baselined:
    """Run (or restore) the baseline, learn the policy, restore a resumed session's state."""
    oracle, source = ctx.oracle, selected.source
    stored = session.load_baseline() if session is not None else None
    ctx.progress.stage("baseline", None if stored is not None else oracle.config.baseline_runs)
    ctx.progress.update(files=source.file_count, bytes=source.byte_count, jobs=ctx.options.jobs)
    t0 = time.monotonic()
    if stored is not None:
        policy = session.current_policy(stored.policy) if session else stored.policy
        oracle.restore(policy, stored.signature, stored.identity)
        baseline = stored.baseline
    else:
        oracle.attach(replace(oracle.hooks, on_baseline_look=_baseline_goes_on(ctx)))
        baseline = _run_baseline(ctx, selected, session)
    ctx.progress.update(theta=oracle.policy.theta)
    rx.baseline_event(
        ctx.ledger, baseline, oracle.policy, source, time.monotonic() - t0, stored is not None
    )
    history: tuple[Tree, ...] = (source,)
    if session is not None and ctx.options.resume:
        oracle.cache.update(session.verdicts(oracle.policy.mode))
        history = tuple(session.history(source))
        ctx.ledger.mark_partial()
        rx.session_event(ctx.ledger, len(session.journal()), len(oracle.cache), history[-1])
    if session is not None:
        hooks = replace(oracle.hooks, on_verdict=_persisted(ctx, session))
        oracle.attach(replace(hooks, on_policy=session.save_policy))
    ctx.progress.message(
        f"baseline {baseline.passes}/{baseline.runs}, lower bound {baseline.lower:.3f}; "
        f"sampling policy {oracle.policy.mode.value}"
    )
    _show_identity(ctx)
    versions = _versions_through_runner(ctx)
    return Baselined(baseline, session, history[-1], history, tool_versions=versions)


def _versions_through_runner(ctx: Context) -> dict[str, str] | None:
    """Where the samples do not run on this machine, the versions of the tools they ran with:
    one run through the runner while it is up (``app.versions.probe_through``)."""
    options = ctx.options
    if (options.backend == "host" and options.cluster is None) or ctx.stop.is_set():
        return None
    ctx.progress.stage("tool versions", 1)
    return probe_through(ctx.runner, options.command, ctx.oracle.request.env)


def _baseline_goes_on(ctx: Context) -> Callable[[int, int, float, int], None]:
    """The adaptive baseline's notice when a look falls short and it runs on."""
    rate = ctx.oracle.config.min_baseline_rate

    def show(runs: int, passes: int, lower: float, next_look: int) -> None:
        ctx.progress.notice(
            f"baseline {passes}/{runs}: lower bound {lower:.3f} is below --min-baseline-rate "
            f"{rate}; running {next_look - runs} more (at most "
            f"{ctx.oracle.config.baseline_looks[-1]} in all)"
        )
        ctx.progress.stage("baseline", next_look - runs)

    return show


def _persisted(ctx: Context, session: Session) -> Callable[[str, Verdict], None]:
    """The session's verdict hook. A verdict decided once ReproMin is stopping is not kept:
    its last runs may be samples ReproMin killed itself (a resume decides that tree again)."""

    def record(digest: str, verdict: Verdict) -> None:
        if not ctx.stop.is_set():
            session.record_verdict(digest, verdict)

    return record


def _show_identity(ctx: Context) -> None:
    """The pinned identity, as the first thing said after the baseline (``--identity auto``)."""
    identity = ctx.oracle.contract.identity
    if identity is None:
        return
    lines = identity.describe()
    if not identity.facets:
        lines.insert(0, "nothing recognised: only the contract's options decide")
    ctx.progress.notice(
        "failure identity (pinned; --identity off drops it):\n  " + "\n  ".join(lines)
    )


def _run_baseline(ctx: Context, selected: Selected, session: Session | None) -> Baseline:
    interrupted = "interrupted during the baseline; nothing was written" + (
        " (the session is kept: rerun with --resume)" if session is not None else ""
    )
    try:
        baseline = watched_baseline(
            ctx.oracle,
            selected.source,
            selected.selection,
            ctx.options.src,
            ctx.progress,
            stopping=ctx.stop.is_set,
            in_your_shell=lambda: _your_shell_diagnosis(ctx, selected.source),
        )
    except StopSearch:
        raise Interrupted(interrupted) from None
    except BaselineError:
        if ctx.stop.is_set():
            raise Interrupted(interrupted) from None
        raise
    if ctx.stop.is_set():
        raise Interrupted(interrupted)
    _your_shell_first(ctx, selected.source, baseline)
    if ctx.stop.is_set():
        raise Interrupted(interrupted)
    if session is not None:
        contract = ctx.oracle.contract
        session.save_baseline(
            StoredBaseline(baseline, ctx.oracle.policy, contract.signature, contract.identity)
        )
    return baseline


def _user_shell_allowed(ctx: Context) -> bool:
    """May the command run in the user's own shell to compare? Not with ``--user-shell-runs
    0``, nor for Docker or a cluster (their samples never had the user's environment)."""
    if ctx.options.user_shell_runs == 0 or ctx.runner.backend != "host":
        return False
    return ctx.runner.describe().get("dispatch_engine") is None


#: Under ``--deadline``, the most of the time left (less what the stages after the search need)
#: that the run in your shell before the search may take; stopped then, it concludes nothing.
SHELL_FIRST_SHARE = 0.25


def _your_shell_first(ctx: Context, tree: Tree, baseline: Baseline) -> None:
    """After a baseline that reproduced, before any search: one run in the user's own shell on
    a fresh copy of ``tree``, compared with the baseline's runs (:mod:`repomin.app.shell_first`).
    A different failure there stops the reduction (exit 2) with what differs and the fix."""
    contract = ctx.oracle.contract
    if contract.spec.identity != "auto" or not _user_shell_allowed(ctx):
        return
    ctx.progress.stage("your shell (before the search)", 1)
    env = user_environment(ctx.options.env)
    deadline = ctx.options.budget.deadline
    stop: Callable[[], bool] = ctx.stop.is_set
    if deadline is not None:  # a share of the time the stages after the search leave
        share = max(0.0, deadline.left() - deadline.kept()) * SHELL_FIRST_SHARE
        stop = StopOrTime(ctx.stop, time.monotonic() + share).is_set
    outcome = run_in_user_shell(tree, ctx.options.command, env, ctx.options.timeout, stop=stop)
    if outcome is None:  # stopped: no conclusion
        return
    found = compare(contract, baseline.outcomes, outcome, baseline.passes == baseline.runs)
    if found.kind == "not_reproduced":
        ctx.progress.notice(found.text)
    elif found.kind == "different":
        raise BaselineError(f"{found.text}; {_what_differs(ctx, tree, env, True, head='')}")


def _your_shell_diagnosis(ctx: Context, tree: Tree) -> str:
    """After a baseline in which no run reproduced: one run of the command in the user's own
    shell on a fresh copy of ``tree`` (:func:`repomin.app.user_shell.run_in_user_shell`) and
    what differs (:func:`_what_differs`). "" when it may not run (:func:`_user_shell_allowed`)."""
    if not _user_shell_allowed(ctx):
        return ""
    ctx.progress.stage("your shell (diagnosis)", 1)
    env = user_environment(ctx.options.env)
    outcome = run_in_user_shell(
        tree, ctx.options.command, env, ctx.options.timeout, stop=ctx.stop.is_set
    )
    if outcome is None:
        return ""
    return _what_differs(ctx, tree, env, provisionally_reproduces(ctx.oracle.contract, outcome))


def _what_differs(
    ctx: Context, tree: Tree, env: dict[str, str], reproduced: bool, head: str | None = None
) -> str:
    """:func:`repomin.app.diagnose.your_shell_note` on a run in the user's shell: when the
    failure ``reproduced`` there and the samples' HOME is a fresh one, one traced sample for
    what they looked for under HOME. ``head``: the note's opening (``None``: its own; "" when
    the caller said what happened already)."""
    options, described = ctx.options, ctx.runner.describe()
    home = os.path.expanduser("~")
    mode = "inherit" if options.home == "inherit" or "HOME" in options.env else "fresh"
    reads: list[str] = []
    traced = False
    strace = shutil.which("strace", path=env.get("PATH")) is not None
    if reproduced and mode == "fresh" and "trace" in options.schedule and strace:
        ctx.progress.stage("traced run (diagnosis)", 1)
        trace = traced_run(ctx, tree, ("strace",), reproduces=lambda _outcome: False)
        traced = trace.method == "strace"
        reads = home_reads(trace.outside, home)
    return your_shell_note(
        reproduced,
        head=head,
        home=mode,
        traced=traced,
        read_only=described.get("sample_isolation") == "namespace" and "HOME" not in options.env,
        reads=reads,
        present=home_paths_present(home) if reproduced and not traced else [],
        variables=sorted(n for n in env if n not in SAMPLE_NAMES and n not in options.env),
    )


# -- trace ------------------------------------------------------------------------------------


def trace_stage(
    ctx: Context,
    tree: Tree,
    methods: tuple[str, ...] = ("strace", "atime"),
    running: Future[TraceResult] | None = None,
) -> TraceResult:
    """One traced run of the command for the trace-guided cut (see ``repomin.analysis.trace``); also
    the re-traced cut's callback (with the first run's method). An event, not a sample.
    ``running``: the run already started (:func:`traced_run` beside the baseline)."""
    if "trace" not in ctx.options.schedule:
        return disabled()
    if running is None:
        ctx.progress.stage("traced run", 1)
    result = running.result() if running is not None else traced_run(ctx, tree, methods)
    rx.trace_event(ctx.ledger, result, tree)
    if ctx.current_pass.name is not None:  # a re-trace inside a pass: show the pass again
        ctx.progress.stage(ctx.current_pass.name)
    return result


def traced_run(
    ctx: Context,
    tree: Tree,
    methods: tuple[str, ...] = ("strace", "atime"),
    reproduces: Callable[[Outcome], bool] | None = None,
) -> TraceResult:
    """The traced run itself, no event (``reproduces``: the failure contract by default)."""
    request = ctx.oracle.request
    return trace_opened_files(
        ctx.runner,
        tree,
        request.command,
        request.env,
        request.timeout,
        methods=methods,
        reproduces=reproduces or ctx.oracle.contract.reproduces,
        forbidden=forbidden_roots(ctx.options.src) if source_visible(ctx.runner) else (),
    )


# -- search -----------------------------------------------------------------------------------


def _failing_output(ctx: Context, baselined: Baselined) -> list[tuple[str, str]]:
    """The output and working directory of the baseline's first run that reproduced."""
    for outcome in baselined.baseline.outcomes:
        if ctx.oracle.contract.reproduces(outcome):
            return [(outcome.output, outcome.workdir)]
    return []


def _capture(ctx: Context, tree: Tree, frame: Frame) -> list[Call]:
    """The carve pass's capture run (:mod:`repomin.analysis.failingcall`): an event, not a
    sample."""
    request = ctx.oracle.request
    ctx.progress.stage("capture run", 1)
    calls = capture_calls(ctx.runner, tree, request.command, request.env, request.timeout, frame)
    if ctx.current_pass.name is not None:
        ctx.progress.stage(ctx.current_pass.name)
    return calls


def search_stage(
    ctx: Context, baselined: Baselined, trace: TraceResult, protected: Callable[[str], bool]
) -> ReductionResult:
    """Run the pass schedule to a fixpoint (or until the budget or an interrupt stops it)."""
    options, session = ctx.options, baselined.session
    reduction = Reduction(
        initial=baselined.initial,
        oracle=ctx.oracle,
        ledger=ctx.ledger,
        jobs=options.jobs,
        protected=protected,
        on_accept=lambda m: _on_accept(ctx, session, m),
        history=baselined.history,
        on_revert=session.record_revert if session is not None else None,
        ahead=ctx.prefetch,
    )
    for name in options.schedule:
        ctx.ledger.phase(name)
    durations = [o.duration for o in baselined.baseline.outcomes]
    if ctx.timeouts is not None and not options.fixed_timeout and durations:
        ctx.timeouts.arm(durations)
    result = run_passes(
        reduction,
        options.schedule,
        passes=pass_instances(
            options,
            trace,
            lambda tree: trace_stage(ctx, tree, (trace.method,)),
            failures=_failing_output(ctx, baselined),
            capture=lambda tree, frame: _capture(ctx, tree, frame),
        ),
        stall_only=STALL_ONLY,
        on_pass=lambda name: _on_pass(ctx, name),
        backtrack_first=baselined.backtrack,
    )
    ctx.current_pass.set(None)
    if result.stop_reason == "interrupted" and not options.export_on_interrupt:
        hint = f" --resume --session {ctx.session_root}" if session is not None else ""
        raise Interrupted(
            "interrupted; nothing was exported (the source tree is untouched); rerun "
            f"the same command with{hint or ' --export-on-interrupt next time'} to continue"
        )
    return result


def _on_pass(ctx: Context, name: str) -> None:
    ctx.current_pass.set(name)
    ctx.progress.stage(name)


def _on_accept(ctx: Context, session: Session | None, m: Mutation) -> None:
    if session is not None:
        session.record_mutation(m.phase, m.description, m.tree)
    ctx.progress.update(
        files=m.tree.file_count,
        bytes=m.tree.byte_count,
        accepted=ctx.ledger.accepted,
        rate=m.verdict.passes / m.verdict.runs,
        bound=m.verdict.evidence().get("lower_bound"),
    )
    ctx.progress.message(
        f"{m.phase}: {m.description} -> {m.tree.file_count} files, {m.tree.byte_count} B"
    )


# -- validate, export, certify ----------------------------------------------------------------


def validate_stage(
    ctx: Context, searched: ReductionResult, runs: int | None = None
) -> rx.FinalRuns:
    """The final test's runs of the accepted tree (none after an interrupt); ``runs``: the
    test's n when the caller sized it (a second test of the same tree, ``gate.py``), never
    taken from the prefetch."""
    best = searched.tree
    if ctx.timeouts is not None:
        ctx.timeouts.disarm()
    t0 = time.monotonic()
    interrupted = searched.stop_reason == "interrupted"
    planned = 0 if interrupted else (runs or ctx.oracle.planned_final_runs())
    ctx.progress.stage("final", planned)
    ctx.progress.update(files=best.file_count, bytes=best.byte_count)
    gate, alpha = ctx.oracle.take_gate() if planned else (None, ctx.oracle.policy.alpha)
    ahead = None
    if ctx.prefetch and runs is None:
        ahead = ctx.prefetch.take(best, planned)  # after the gate
    # up to ``planned`` runs: the test stops once its outcome is certain (statistics.md §2a)
    sample = ctx.oracle.final_validation(best, planned, outcomes=ahead, alpha=alpha)
    final = rx.FinalRuns(
        sample.passes,
        sample.runs,
        sample.exit_code,
        ctx.oracle.policy.final_passed(sample.passes, sample.runs, alpha),
        time.monotonic() - t0,
        alpha,
        gate,
        sample.planned,
        sample.stopped_early,
    )
    rx.final_event(ctx.ledger, final, best)
    return final


def user_shell_stage(
    ctx: Context, searched: ReductionResult, final: rx.FinalRuns, trace: TraceResult
) -> ShellCheck:
    """The payload's command in the user's own shell, after the final test, before export
    (:mod:`repomin.app.user_shell`); skipped where the samples' environment is not the
    user's shell (Docker, a cluster) or there is no passed final test to compare with."""
    options = ctx.options
    if options.user_shell_runs == 0:
        return ShellCheck("disabled", reason="--user-shell-runs 0")
    if searched.stop_reason == "interrupted":
        return ShellCheck("skipped", reason="the reduction was interrupted")
    if ctx.runner.backend != "host":
        why = "the samples ran in a Docker image: that is where the payload reproduces"
        return ShellCheck("skipped", reason=why)
    if ctx.runner.describe().get("dispatch_engine") is not None:
        return ShellCheck("skipped", reason="the samples ran on cluster workers")
    if not final.runs or not final.passed:
        return ShellCheck("skipped", reason="the final test did not pass")
    planned = plan(options.user_shell_runs, final.passes, final.runs, options.sampling.confidence)
    ctx.progress.stage("your shell", planned[0])
    check = check_in_user_shell(
        searched.tree,
        options.command,
        reproduces=ctx.oracle.contract.reproduces,
        planned=planned,
        env=user_environment(options.env),
        timeout=options.timeout,
        outside=trace.outside,
        stop=ctx.stop.is_set,
    )
    if check.failed:
        ctx.progress.notice(f"the payload does not reproduce in your shell: {check.reason}")
    return check


def export_stage(ctx: Context, tree: Tree) -> Fingerprint:
    fp = export_payload(tree, ctx.options.output)
    rx.export_event(ctx.ledger, fp.files, fp.bytes)
    return fp


def certify_stage(ctx: Context, searched: ReductionResult, fp: Fingerprint) -> dict[str, Any]:
    """Holdout on the payload as read back from disk (byte-identical to the accepted tree)."""
    options = ctx.options
    if options.holdout is None or searched.stop_reason == "interrupted":
        return not_requested()
    ctx.progress.stage("holdout", options.holdout.runs)
    exported = select(options.output, SelectionOptions(ignored_names=(), use_gitignore=False)).tree
    if exported.digest != searched.tree.digest:
        raise ReproMinError("internal error: the exported payload differs from the accepted tree")
    t0 = time.monotonic()
    oracle = ctx.oracle
    record = run_holdout(
        tree=exported,
        config=options.holdout.resolved(oracle.policy.theta),
        sample=lambda tree, label: oracle.sample(tree, label, phase=None, budgeted=False),
        contract=oracle.contract,
        artifact=fp,
        jobs=options.jobs,
        stop=ctx.stop,
    )
    rx.holdout_event(ctx.ledger, record, time.monotonic() - t0)
    return record


# -- report -----------------------------------------------------------------------------------


def report_stage(
    ctx: Context,
    selected: Selected,
    baselined: Baselined,
    trace: TraceResult,
    searched: ReductionResult,
    final: rx.FinalRuns,
    fp: Fingerprint,
    holdout: dict[str, Any],
    *,
    access: SourceAccess | None = None,
    keep: KeepRate | None = None,
    shell: ShellCheck | None = None,
) -> dict[str, Any]:
    options = ctx.options
    alpha = round(1 - options.sampling.confidence, 12)
    slippage = slippage_record(baselined.baseline, (final.passes, final.runs), holdout, alpha, keep)
    extra = {**(access or SourceAccess("unchecked")).to_json(), "keep_rate": options.keep_rate}
    execution = rx.execution_block(
        rx.ExecutionInputs(
            options=options,
            backend=ctx.runner.describe(),
            selection=selected.selection,
            baseline=baselined.baseline,
            policy=ctx.oracle.policy,
            ledger=ctx.ledger,
            stop_reason=searched.stop_reason,
            trace_method=trace.method,
            final=final,
            semantic=options.semantic.provenance() if options.semantic else no_provenance(),
            timeouts=ctx.timeouts,
            wall_time=time.monotonic() - ctx.started,
            search_samples=ctx.oracle.search_samples,
        )
    )
    execution.update(extra)
    return build_report(
        ReportInputs(
            command=options.command,
            contract=ctx.oracle.contract,
            baseline_exit_code=baselined.baseline.exit_code,
            final_exit_code=final.exit_code,
            source_files=selected.source.file_count,
            source_bytes=selected.source.byte_count,
            output=fp,
            ledger=ctx.ledger,
            execution=execution,
            holdout=holdout,
            slippage=slippage,
            user_shell=shell.to_json() if shell is not None else None,
            tool_versions=(
                probe_versions(options.command, options.env)
                if options.backend == "host" and options.cluster is None
                else baselined.tool_versions
            ),
            failure_excerpt=_excerpt(ctx, baselined),
        )
    )


def _excerpt(ctx: Context, baselined: Baselined) -> dict[str, Any] | None:
    """What the baseline's first reproducing run printed that identifies the failure (none on
    a resumed session: its baseline's outputs are not kept)."""
    for output, workdir in _failing_output(ctx, baselined):
        found = failure_excerpt(output, workdir, ctx.oracle.contract.spec.match)
        return found.to_json() if found is not None else None
    return None
