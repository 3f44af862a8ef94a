"""``repomin reduce`` as a library call: typed options in, payload + report out.

Owns :func:`execute` -- the pipeline of named stages in :mod:`repomin.app.pipeline` strung
together -- the runner factory and the SIGINT/SIGTERM handling. The CLI parses into
:class:`~repomin.app.options.ReduceOptions`, builds a progress display, and calls :func:`execute`.
Nothing is written to OUTPUT until the reduction has finished; errors before that leave the
filesystem untouched.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from repomin.analysis.source_access import SourceAccess, judge, source_visible
from repomin.analysis.trace import TraceResult
from repomin.app import pipeline as stage
from repomin.app.execution import FinalRuns
from repomin.app.export import sidecar_dir, write_sidecar
from repomin.app.gate import mean_run_seconds, search_and_validate, stopped_before_export
from repomin.app.options import STRATEGY_VERSION, ReduceOptions, parse_env, plan_schedule
from repomin.app.progress import NullProgress, ObservedRunner, Progress
from repomin.app.session import Session, default_session_dir
from repomin.app.user_shell import (
    ShellCheck,
    differences,
    plan,
    stopped_at_deadline,
    user_environment,
)
from repomin.cluster.wiring import cluster_threads
from repomin.errors import Interrupted, UsageError
from repomin.failure.contract import FailureContract
from repomin.report.human import files_of_tree, render_repomin_md
from repomin.report.picture import render_pictures
from repomin.runners.base import Outcome, Runner
from repomin.runners.host import HostRunner
from repomin.sampling.accounting import Ledger
from repomin.sampling.budget import ESTIMATE_MARGIN, StopOrTime, after_search_seconds
from repomin.sampling.oracle import Oracle, OracleHooks
from repomin.sampling.parallel import in_background
from repomin.sampling.rate_guard import KeepRate, attach_keep_rate
from repomin.sampling.stats.lazy import warm
from repomin.sampling.timeouts import AdaptiveTimeoutRunner
from repomin.sampling.verdict import Baseline
from repomin.search.prefetch import FinalPrefetch
from repomin.search.reducer import ReductionResult
from repomin.tree import Tree

__all__ = [
    "STRATEGY_VERSION",
    "ReduceOptions",
    "ReduceResult",
    "RunnerFactory",
    "build_context",
    "default_runner_factory",
    "execute",
    "parse_env",
    "plan_schedule",
]


@dataclass(frozen=True, slots=True)
class ReduceResult:
    report: dict[str, Any]
    report_path: Path
    exit_code: int


RunnerFactory = Callable[[ReduceOptions], Runner]


def default_runner_factory(options: ReduceOptions) -> Runner:
    if options.cluster is not None:
        from repomin.cluster import wiring

        session = options.session_dir or default_session_dir(options.output)
        hide = (options.output, sidecar_dir(options.output), session)
        inner = (
            wiring.host_spec(hide, options.src, options.isolation, options.home)
            if options.backend == "host"
            else wiring.docker_spec(options.backend_options)
        )
        return wiring.make_runner(options.cluster, inner)
    if options.backend == "host":
        # Samples must not reach SRC, OUTPUT or the session at their paths.
        session = options.session_dir or default_session_dir(options.output)
        hide = (options.output, sidecar_dir(options.output), session)
        return HostRunner(
            source=options.src, hide=hide, isolation=options.isolation, home=options.home
        )
    if options.backend == "docker":
        from repomin.runners.docker import DockerRunner

        # The session label is per process, so it stays out of ``backend_options`` (which are
        # part of the resumable configuration).
        opts = dict(options.backend_options)
        label = opts.pop("session_label", None) or f"repomin-{os.getpid()}-{secrets.token_hex(4)}"
        if not opts.get("image"):
            raise UsageError("--backend docker needs --image REF (a local image or ID)")
        return DockerRunner(jobs=options.jobs, session_label=label, **opts)
    raise UsageError(f"--backend {options.backend!r} must be host or docker")


@contextmanager
def _signals_stop(stop: threading.Event, runner: Runner) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` and kill running samples (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        stop.set()
        runner.kill_all()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def execute(
    options: ReduceOptions,
    progress: Progress | None = None,
    runner_factory: RunnerFactory = default_runner_factory,
) -> ReduceResult:
    """select → baseline → trace → search → validate → export → certify → report."""
    progress = progress or NullProgress()
    started = time.monotonic()
    progress.stage("selection")
    selected, runner = _select_and_start(options, runner_factory)
    session_root = options.session_dir or default_session_dir(options.output)
    stop = threading.Event()
    if reason := runner.describe().get("docker_strategy_reason"):
        strategy = runner.describe()["docker_strategy"]
        progress.notice(f"Docker runs {strategy} (slower than the sample agent): {reason}")
    if options.cluster is not None and options.cluster.jobs_from_cluster:
        # No --jobs with --cluster: one sample per worker thread.
        options = replace(options, jobs=cluster_threads(runner) or options.jobs)
    try:
        session = stage.open_session(options, selected, session_root)
    except BaseException:
        runner.close()
        raise
    try:
        with _signals_stop(stop, runner), _drop_unstarted(session, options):
            ctx = build_context(options, runner, progress, stop, session_root, started)
            progress.start()
            baselined, trace = _baseline_and_trace(ctx, selected, session)
            access = _source_access(ctx, trace, session)
            keep = _keep_rate(ctx, baselined.baseline)
            searched, final = search_and_validate(ctx, baselined, trace, selected.selection.is_kept)
            shell = _user_shell(ctx, searched, final, trace)
            searched = stopped_before_export(ctx, session, searched)
            progress.stage("export")
            fp = stage.export_stage(ctx, searched.tree)
            holdout = stage.certify_stage(ctx, searched, fp)
    except BaseException:
        progress.stop()
        runner.close()
        raise
    progress.stop()
    # Closing waits on the engine (a cluster unregisters its worker plugin: ~0.3 s with 16
    # workers); the report, which reads only the runner's own counters, is written meanwhile.
    closing = threading.Thread(target=runner.close, name="repomin-close", daemon=True)
    closing.start()
    try:
        report = stage.report_stage(
            ctx,
            selected,
            baselined,
            trace,
            searched,
            final,
            fp,
            holdout,
            access=access,
            keep=keep,
            shell=shell,
        )
        report_path = _write_sidecar(options, report, searched.tree)
    finally:
        closing.join()
    if searched.stop_reason == "interrupted" or holdout.get("status") == "interrupted":
        # the holdout runs after the export: its interruption leaves the payload and the report
        return ReduceResult(report, report_path, 130)
    if session is not None and searched.stop_reason not in BUDGET_STOPS:
        # a search a budget stopped can go on: ``--resume`` with a larger one (the warning)
        shutil.rmtree(session.root, ignore_errors=True)
    ok = (final.passed or not final.runs) and holdout["status"] in ("not_requested", "certified")
    ok = ok and not shell.failed  # the payload must reproduce where the user runs it
    deadline = options.budget.deadline
    ok = ok and (deadline is None or "final_test" not in deadline.cuts)  # exported untested
    return ReduceResult(report, report_path, 0 if ok else 1)


#: Why a search may stop before its fixpoint and go on with ``--resume`` (its session kept).
BUDGET_STOPS = frozenset(("max_runs", "max_time"))


def _user_shell(
    ctx: stage.Context, searched: ReductionResult, final: FinalRuns, trace: TraceResult
) -> ShellCheck:
    """The runs in your shell; under ``--deadline`` as many as fit in the time left (after the
    holdout's estimate), and stopped when that time is over (``deadline_cuts``: user_shell)."""
    options, deadline = ctx.options, ctx.options.budget.deadline
    if deadline is None or not options.user_shell_runs or searched.stop_reason == "interrupted":
        return stage.user_shell_stage(ctx, searched, final, trace)
    if not final.runs and "final_test" in deadline.cuts:
        return ShellCheck("skipped", reason="--deadline: no time for the final test")
    per_run = mean_run_seconds(ctx)
    holdout = options.holdout.runs if options.holdout is not None else 0
    after = after_search_seconds(per_run, jobs=options.jobs, final_runs=0, shell_runs=0,
                                 holdout_runs=holdout)  # fmt: skip
    until = deadline.at() - after
    full = plan(options.user_shell_runs, final.passes, final.runs, options.sampling.confidence)[0]
    fit = int((until - time.monotonic()) // (per_run * (1 + ESTIMATE_MARGIN))) if per_run else full
    limited = replace(options, user_shell_runs=max(1, min(options.user_shell_runs, fit)))
    timed = replace(ctx, options=limited, stop=StopOrTime(ctx.stop, until))
    check = stage.user_shell_stage(timed, searched, final, trace)
    # skipped after planning runs: stopped before them all (by the time, unless by the user)
    stopped = check.status == "skipped" and check.planned_runs > 0 and not ctx.stop.is_set()
    if stopped:
        deadline.cut("user_shell")
        found = partial(differences, trace.outside, user_environment(options.env))
        check = stopped_at_deadline(check, full, final.passes >= final.runs, found)
        ctx.progress.notice(f"deadline: the runs in your shell: {check.reason}")
    elif check.status in ("reproduced", "not_reproduced") and check.planned_runs < full:
        deadline.cut("user_shell")
        check = replace(check, reason=f"--deadline: {check.planned_runs} of {full} runs fit")
        ctx.progress.notice(f"deadline: the runs in your shell: {check.reason}")
    return check


def _select_and_start(
    options: ReduceOptions, runner_factory: RunnerFactory
) -> tuple[stage.Selected, Runner]:
    """The selection and the runner's start-up (a cluster connection and its probe, a Docker
    agent, the sandbox probe) overlap: both mostly wait, on files and on the engine. A failed
    selection is reported first; a runner that started anyway is closed."""
    with ThreadPoolExecutor(1, thread_name_prefix="repomin-start") as pool:
        starting = pool.submit(runner_factory, options)
        try:
            selected = stage.select_stage(options)
        except BaseException:
            with contextlib.suppress(Exception):
                starting.result().close()
            raise
        return selected, starting.result()


def _baseline_and_trace(
    ctx: stage.Context, selected: stage.Selected, session: Session | None
) -> tuple[stage.Baselined, TraceResult]:
    """The baseline, then the first traced run. With several slots on a fresh start the
    traced run (an event, several samples long) starts beside the baseline's samples instead
    of after them, on the same tree; only its verdict on the failure waits for the baseline
    (which may pin the signature it is judged by)."""
    options = ctx.options
    if options.jobs <= 1 or options.resume or "trace" not in options.schedule:
        baselined = stage.baseline_stage(ctx, selected, session)
        return baselined, stage.trace_stage(ctx, baselined.initial)
    judged = threading.Event()

    def reproduces(outcome: Outcome) -> bool:
        judged.wait()
        return ctx.oracle.contract.reproduces(outcome)

    running = in_background(lambda: stage.traced_run(ctx, selected.source, reproduces=reproduces))
    try:
        baselined = stage.baseline_stage(ctx, selected, session)
    except BaseException:
        judged.set()
        ctx.runner.kill_all()  # the traced run does not outlive a failed baseline
        with contextlib.suppress(Exception):
            running.result()
        raise
    judged.set()
    return baselined, stage.trace_stage(ctx, baselined.initial, running=running)


def _write_sidecar(options: ReduceOptions, report: dict[str, Any], tree: Tree) -> Path:
    """``OUTPUT.repomin/``: never through a symlink (exit 2 if one was planted meanwhile)."""
    notes = render_repomin_md(report, options.output.name, files_of_tree(tree))
    pictures = {name: svg.encode("utf-8") for name, svg in render_pictures(report).items()}
    return write_sidecar(options.output, report, notes, pictures)


def _keep_rate(ctx: stage.Context, baseline: Baseline) -> KeepRate | None:
    """``--keep-rate``: the oracle's ``accept`` hook vetoes candidates whose fresh runs'
    rate is significantly above the baseline's (``rate_guard.KeepRate``)."""
    options = ctx.options
    if not options.keep_rate:
        return None
    confidence = options.sampling.confidence
    return attach_keep_rate(ctx.oracle, baseline, confidence, options.jobs, ctx.current_pass.get)


def _source_access(ctx: stage.Context, trace: TraceResult, session: Session | None) -> SourceAccess:
    """Stop (exit 2, nothing kept) when a visible SRC was reached by its absolute path."""
    options = ctx.options
    try:
        return judge(
            source_visible(ctx.runner),
            trace,
            options.src,
            allow=options.allow_src_access,
            notice=ctx.progress.notice,
        )
    except UsageError:
        if session is not None and not options.resume:
            shutil.rmtree(session.root, ignore_errors=True)
        raise


@contextmanager
def _drop_unstarted(session: Session | None, options: ReduceOptions) -> Iterator[None]:
    """A session created here that never got its baseline is removed on failure, unless the
    user interrupted (then ``--resume`` reruns the baseline)."""
    try:
        yield
    except Interrupted:
        raise
    except BaseException:
        if session is not None and not options.resume and session.load_baseline() is None:
            shutil.rmtree(session.root, ignore_errors=True)
        raise


def build_context(
    options: ReduceOptions,
    runner: Runner,
    progress: Progress,
    stop: threading.Event,
    session_root: Path,
    started: float,
) -> stage.Context:
    """The collaborators of one reduction: ledger, oracle (with progress hooks), and the runner
    wrapped so that the display sees every run start and finish."""
    ledger = Ledger()
    timeouts = AdaptiveTimeoutRunner(runner, options.timeout)
    # scipy.special (the first verdict's) and jsonschema (the report's structural check) load
    # in a thread once the first run has started: before, selection and the runner's start-up
    # hold the GIL (repomin.sampling.stats.lazy).
    first_run = threading.Event()
    warm("scipy.special", "jsonschema", after=first_run)
    runner = ObservedRunner(timeouts, progress, first_run)
    oracle = Oracle(
        runner=runner,
        contract=FailureContract(options.spec),
        command=options.command,
        env=dict(options.env),
        timeout=options.timeout,
        config=options.sampling,
        ledger=ledger,
        budget=options.budget,
        use_cache=options.use_cache,
        stop=stop,
        jobs=options.jobs,
    )

    def on_sample(_: object) -> None:
        # θ halves when the policy escalates; the display shows the one the report records.
        with contextlib.suppress(RuntimeError):  # no policy before the baseline has finished
            progress.update(theta=oracle.policy.theta)

    oracle.attach(OracleHooks(on_sample=on_sample))
    # Final runs in a settled round's idle slots (prefetch.py); never under --max-runs.
    ahead = None
    if options.jobs > 1 and options.budget.max_runs is None:
        ahead = FinalPrefetch(oracle, ledger, oracle.planned_final_runs)
    return stage.Context(
        options,
        runner,
        oracle,
        ledger,
        progress,
        stop,
        session_root,
        started,
        timeouts=timeouts,
        prefetch=ahead,
    )
