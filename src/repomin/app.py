"""``repomin reduce`` as a library call: typed options in, payload + report out.

The CLI parses into :class:`ReduceOptions`, builds a progress display, and calls
:func:`execute`. Nothing is written to OUTPUT until the reduction has finished; errors before
that leave the filesystem untouched.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from repomin.accounting import Ledger
from repomin.errors import Interrupted, ReproMinError, UsageError
from repomin.export import check_output_location, export_payload, sidecar_dir
from repomin.failure.contract import FailureContract, FailureSpec
from repomin.fingerprint import Fingerprint
from repomin.holdout import HoldoutConfig, not_requested, run_holdout
from repomin.oracle import Baseline, Budget, Oracle, SamplingConfig
from repomin.passes import DEFAULT_SCHEDULE, REGISTRY, Pass
from repomin.passes.refs import RefsCut
from repomin.passes.semantic import SemanticReduce
from repomin.passes.trace import TraceCut
from repomin.progress import NullProgress, Progress
from repomin.reducer import Mutation, Reduction, run_passes
from repomin.report.build import ReportInputs, build_report, environment_digest, render_markdown
from repomin.report.io import write_json_atomic, write_text_atomic
from repomin.runners.base import Runner
from repomin.runners.host import IMPLICIT_ENVIRONMENT, HostRunner
from repomin.selection import Selection, SelectionOptions, select
from repomin.semantic import (
    SemanticClient,
    SemanticConfig,
    describe_spec,
    failure_context,
    no_provenance,
)
from repomin.session import Session, default_session_dir
from repomin.trace import TraceResult, disabled, trace_opened_files
from repomin.tree import Tree

STRATEGY_VERSION = "repomin-hdd-v2"


@dataclass(frozen=True, slots=True)
class ReduceOptions:
    src: Path
    output: Path
    command: str
    spec: FailureSpec
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    selection: SelectionOptions = SelectionOptions()
    sampling: SamplingConfig = SamplingConfig()
    jobs: int = 1
    use_cache: bool = True
    budget: Budget = Budget()
    force: bool = False
    schedule: tuple[str, ...] = DEFAULT_SCHEDULE
    backend: str = "host"
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    holdout: HoldoutConfig | None = None
    session_dir: Path | None = None
    resume: bool = False
    use_session: bool = True
    export_on_interrupt: bool = False
    semantic: SemanticConfig | None = None

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise UsageError(f"--timeout {self.timeout} must be positive (seconds)")
        if self.jobs < 1:
            raise UsageError(f"--jobs {self.jobs} must be at least 1")
        unknown = [p for p in self.schedule if p not in REGISTRY]
        if unknown:
            raise UsageError(
                f"unknown pass {unknown[0]!r}; available passes: {', '.join(sorted(REGISTRY))}"
            )
        if "semantic" in self.schedule and self.semantic is None:
            raise UsageError(
                "the semantic pass needs --semantic-endpoint URL and --semantic-model NAME"
            )

    @property
    def reduction_strategy(self) -> str:
        return f"{STRATEGY_VERSION}:{','.join(self.schedule)}"

    def session_config(self, source_digest: str) -> dict[str, Any]:
        """Everything that must be equal for ``--resume`` to continue a session."""
        return {
            "source_tree": source_digest,
            "command": self.command,
            "failure_spec": self.spec.to_json(),
            "environment_sha256": environment_digest(self.env),
            "environment_names": sorted(self.env),
            "timeout": self.timeout,
            "sampling": asdict(self.sampling),
            "backend": self.backend,
            "backend_options": {k: str(v) for k, v in sorted(self.backend_options.items())},
            "jobs": self.jobs,
            "cache": self.use_cache,
            "reduction_strategy": self.reduction_strategy,
        }


def plan_schedule(
    schedule: tuple[str, ...], *, trace: bool = True, semantic: bool = False
) -> tuple[str, ...]:
    """``--no-trace`` drops the trace cut; ``--semantic-endpoint`` adds the semantic pass right
    after ``files`` (first if there is no ``files``) unless the schedule names it already."""
    planned = [p for p in schedule if trace or p != "trace"]
    if semantic and "semantic" not in planned:
        at = planned.index("files") + 1 if "files" in planned else 0
        planned.insert(at, "semantic")
    return tuple(planned)


@dataclass(frozen=True, slots=True)
class ReduceResult:
    report: dict[str, Any]
    report_path: Path
    exit_code: int


RunnerFactory = Callable[[ReduceOptions], Runner]


def default_runner_factory(options: ReduceOptions) -> Runner:
    if options.backend == "host":
        # Samples must not reach SRC, OUTPUT or the session at their paths (issue 18).
        session = options.session_dir or default_session_dir(options.output)
        hide = (options.output, sidecar_dir(options.output), session)
        return HostRunner(source=options.src, hide=hide)
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
        kill = getattr(runner, "kill_all", None)
        if callable(kill):
            kill()

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
    progress = progress or NullProgress()
    started = time.monotonic()
    check_output_location(options.src, options.output, force=options.force)
    selection = select(options.src, options.selection)
    source = selection.tree
    session_config = options.session_config(source.digest)
    session_root = options.session_dir or default_session_dir(options.output)
    session: Session | None = None
    if options.use_session:
        if options.resume:
            session = Session.open(session_root, session_config)
        elif (session_root / "config.json").exists():
            Session.create(session_root, session_config)  # raises with the fix
    elif options.resume:
        raise UsageError("--resume needs a session; drop --no-session")
    ledger = Ledger()
    stop = threading.Event()
    runner = runner_factory(options)
    try:
        with _signals_stop(stop, runner):
            oracle = Oracle(
                runner=runner,
                contract=FailureContract(options.spec),
                command=options.command,
                env=options.env,
                timeout=options.timeout,
                config=options.sampling,
                ledger=ledger,
                budget=options.budget,
                use_cache=options.use_cache,
                stop=stop,
            )
            oracle.on_sample = lambda outcome: progress.update(
                runs=oracle.samples + 1, inflight=oracle.inflight
            )
            progress.start()
            progress.update(
                phase="baseline",
                files=source.file_count,
                bytes=source.byte_count,
                jobs=options.jobs,
            )
            t0 = time.monotonic()
            stored = session.load_baseline() if session is not None else None
            try:
                if stored is not None:
                    baseline = oracle.restore_baseline(stored)
                else:
                    baseline = oracle.run_baseline(source, options.jobs)
            except Exception:
                progress.stop()
                raise
            if stop.is_set():
                progress.stop()
                raise Interrupted("interrupted during the baseline; nothing was written")
            if options.use_session and session is None:
                session = Session.create(session_root, session_config)
            if session is not None and stored is None:
                session.save_baseline(oracle.baseline_state(baseline))
            _log_baseline(ledger, oracle, baseline, source, options, time.monotonic() - t0, stored)
            initial = source
            if session is not None and options.resume:
                if options.use_cache:
                    oracle.cache.update(session.verdicts())
                initial = session.latest_tree(source)
                ledger.coverage = "partial"
                ledger.event(
                    "session",
                    f"resumed session: {len(session.journal())} accepted mutations and "
                    f"{len(oracle.cache)} decided trees restored",
                    decision="info",
                    files=initial.file_count,
                    bytes=initial.byte_count,
                )
            if session is not None:
                oracle.on_verdict = session.record_verdict
            progress.message(
                f"baseline {baseline.passes}/{baseline.runs}, lower bound {baseline.lower:.3f}; "
                f"sampling policy {oracle.policy}"
            )

            def on_accept(m: Mutation) -> None:
                if session is not None:
                    session.record_mutation(m.phase, m.description, m.tree)
                bound = m.verdict.evidence(options.sampling.confidence).get("lower_bound")
                progress.update(
                    phase=m.phase,
                    files=m.tree.file_count,
                    bytes=m.tree.byte_count,
                    accepted=ledger.accepted,
                    rate=m.verdict.passes / m.verdict.runs,
                    bound=bound,
                )
                progress.message(
                    f"{m.phase}: {m.description} -> {m.tree.file_count} files, "
                    f"{m.tree.byte_count} B"
                )

            reduction = Reduction(
                initial=initial,
                oracle=oracle,
                ledger=ledger,
                jobs=options.jobs,
                protected=selection.is_kept,
                on_accept=on_accept,
            )
            for name in options.schedule:
                ledger.phase(name)
            trace = _trace(options, runner, oracle, initial, ledger, progress)
            result = run_passes(reduction, options.schedule, passes=_passes(options, trace))
            best = result.tree
            interrupted = result.stop_reason == "interrupted"
            if interrupted and not options.export_on_interrupt:
                progress.stop()
                hint = f" --resume --session {session_root}" if session is not None else ""
                raise Interrupted(
                    "interrupted; nothing was exported (the source tree is untouched); rerun "
                    f"the same command with{hint or ' --export-on-interrupt next time'} to continue"
                )
            progress.update(phase="final validation", files=best.file_count, bytes=best.byte_count)
            t0 = time.monotonic()
            final_runs_planned = 0 if interrupted else oracle.planned_final_runs()
            final_passes, final_runs, final_exit = oracle.final_validation(
                best, final_runs_planned, options.jobs
            )
            final_ok = oracle.final_passes_test(final_passes, final_runs)
            ledger.event(
                "final",
                f"final validation: {final_passes}/{final_runs} runs reproduced",
                decision="passed" if final_ok else "failed",
                duration_seconds=round(time.monotonic() - t0, 6),
                files=best.file_count,
                bytes=best.byte_count,
                oracle_passes=final_passes,
                oracle_runs=final_runs,
                oracle_rate=final_passes / final_runs if final_runs else None,
                sampling_policy="fixed",
            )
            fp = export_payload(best, options.output)
            ledger.event(
                "export", "payload exported", decision="info", files=fp.files, bytes=fp.bytes
            )
            holdout = not_requested()
            if options.holdout is not None and not interrupted:
                progress.update(phase="holdout")
                holdout = _certify(options, oracle, best, fp, stop, ledger)
            progress.stop()
    finally:
        runner.close()

    execution = _execution(options, runner, oracle, selection, baseline, result.stop_reason)
    execution.update(options.semantic.provenance() if options.semantic else no_provenance())
    execution.update(
        trace=trace.method,
        final_runs=final_runs,
        final_passes=final_passes,
        final_validation_passed=final_ok,
        wall_time_seconds=round(time.monotonic() - started, 6),
    )
    report = build_report(
        ReportInputs(
            command=options.command,
            contract=oracle.contract,
            baseline_exit_code=baseline.exit_code,
            final_exit_code=final_exit,
            source_files=source.file_count,
            source_bytes=source.byte_count,
            output=fp,
            ledger=ledger,
            execution=execution,
            holdout=holdout,
        )
    )
    side = sidecar_dir(options.output.absolute())
    report_path = side / "report.json"
    write_json_atomic(report_path, report)
    write_text_atomic(side / "REPOMIN.md", render_markdown(report, options.output.name))
    if interrupted:
        return ReduceResult(report, report_path, 130)
    if session is not None:
        shutil.rmtree(session.root, ignore_errors=True)
    ok = final_ok and holdout["status"] in ("not_requested", "certified")
    return ReduceResult(report, report_path, 0 if ok else 1)


def _trace(
    options: ReduceOptions,
    runner: Runner,
    oracle: Oracle,
    tree: Tree,
    ledger: Ledger,
    progress: Progress,
) -> TraceResult:
    """One traced run of the command for the trace-guided cut (see ``repomin.trace``)."""
    if "trace" not in options.schedule:
        return disabled()
    progress.update(phase="trace")
    result = trace_opened_files(
        runner,
        tree,
        options.command,
        options.env,
        options.timeout,
        reproduces=oracle.contract.reproduces,
    )
    verdict = ""
    if result.usable and result.reproduced is not None:
        verdict = "; it " + ("reproduced" if result.reproduced else "did not reproduce")
        verdict += " the failure"
    ledger.event(
        "trace",
        f"traced run: {result.reason}{verdict}",
        decision="info",
        duration_seconds=round(result.duration, 6),
        files=tree.file_count,
        bytes=tree.byte_count,
    )
    return result


def _passes(options: ReduceOptions, trace: TraceResult) -> dict[str, Pass]:
    """Pass instances; the trace cut and the semantic pass get their inputs here."""
    instances: dict[str, Pass] = {name: REGISTRY[name]() for name in options.schedule}
    if "trace" in instances:
        instances["trace"] = TraceCut(trace)
    if "refs" in instances:
        instances["refs"] = RefsCut(options.command)
    if "semantic" in instances and options.semantic is not None:
        context = failure_context(options.command, describe_spec(options.spec))
        instances["semantic"] = SemanticReduce(SemanticClient(options.semantic), context)
    return instances


def _log_baseline(
    ledger: Ledger,
    oracle: Oracle,
    baseline: Baseline,
    source: Tree,
    options: ReduceOptions,
    duration: float,
    stored: dict[str, Any] | None,
) -> None:
    restored = " (restored from the session)" if stored is not None else ""
    ledger.event(
        "baseline",
        f"baseline{restored}: {baseline.passes}/{baseline.runs} runs reproduced; policy "
        f"{oracle.policy}, candidate threshold {oracle.theta:.4f}",
        decision="passed",
        duration_seconds=round(duration, 6),
        files=source.file_count,
        bytes=source.byte_count,
        oracle_passes=baseline.passes,
        oracle_runs=baseline.runs,
        oracle_rate=baseline.rate,
        lower_bound=baseline.lower,
        upper_bound=baseline.upper,
        bound_confidence=options.sampling.confidence,
        sampling_policy="fixed",
    )


def _certify(
    options: ReduceOptions,
    oracle: Oracle,
    best: Tree,
    fp: Fingerprint,
    stop: threading.Event,
    ledger: Ledger,
) -> dict[str, Any]:
    """Holdout on the payload as read back from disk (byte-identical to the accepted tree)."""
    assert options.holdout is not None
    exported = select(options.output, SelectionOptions(ignored_names=(), use_gitignore=False)).tree
    if exported.digest != best.digest:
        raise ReproMinError("internal error: the exported payload differs from the accepted tree")
    t0 = time.monotonic()
    record = run_holdout(
        tree=exported,
        config=options.holdout,
        sample=lambda tree, label: oracle.sample(tree, label, phase=None, budgeted=False),
        contract=oracle.contract,
        artifact=fp,
        jobs=options.jobs,
        stop=stop,
    )
    ledger.event(
        "holdout",
        f"holdout: {record['passes']}/{record['completed_runs']} of {record['planned_runs']} "
        f"planned runs reproduced; status {record['status']}",
        decision={"certified": "certified", "rejected": "failed"}.get(record["status"], "aborted"),
        duration_seconds=round(time.monotonic() - t0, 6),
        oracle_passes=record["passes"],
        oracle_runs=record["completed_runs"],
        oracle_rate=record["passes"] / record["completed_runs"]
        if record["completed_runs"]
        else None,
        sampling_policy="fixed",
    )
    return record


def _execution(
    options: ReduceOptions,
    runner: Runner,
    oracle: Oracle,
    selection: Selection,
    baseline: Baseline,
    stop_reason: str,
) -> dict[str, Any]:
    return {
        **runner.describe(),
        "jobs": options.jobs,
        "cache_enabled": options.use_cache,
        "resumed": options.resume,
        "baseline_runs": baseline.runs,
        "baseline_passes": baseline.passes,
        "candidate_runs": oracle.candidate_runs,
        "candidate_passes": oracle.candidate_passes,
        "candidate_runs_cap": options.sampling.candidate_runs,
        "confidence": options.sampling.confidence,
        "min_baseline_rate": options.sampling.min_baseline_rate,
        "min_candidate_rate": oracle.theta,
        "sampling_policy": oracle.policy,
        "sampling_policy_requested": options.sampling.mode,
        "sampling_policy_switches": oracle.inconsistencies,
        "family_spending": options.sampling.spending,
        "failure_budget": oracle.failure_budget,
        "baseline_policy": "fixed-n-clopper-pearson-v1",
        "final_policy": "fixed-n-exact-binomial-v1",
        "reduction_strategy": options.reduction_strategy,
        "ignored_names": list(options.selection.ignored_names),
        "ignored_paths": list(options.selection.ignored_paths),
        "gitignore_enabled": options.selection.use_gitignore,
        "gitignore_files": list(selection.gitignore_files),
        "keep_paths": list(options.selection.keep_paths),
        "text_files": selection.text_files,
        "environment_names": sorted(options.env),
        "environment_sha256": environment_digest(options.env),
        "inherited_environment_names": list(IMPLICIT_ENVIRONMENT),
        "timeout_seconds": options.timeout,
        "working_directory": "tree_root",
        "semantic_reducer": None,
        "semantic_model": None,
        "semantic_endpoint": None,
        "semantic_timeout": None,
        "budget_exhausted": stop_reason in ("max_runs", "max_time"),
        "max_runs": options.budget.max_runs,
        "max_time_seconds": options.budget.max_seconds,
        "stop_reason": stop_reason,
        "oracle_samples": oracle.samples,
        "holdout_requested_runs": options.holdout.runs if options.holdout else None,
    }


def parse_env(items: tuple[str, ...], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``NAME=VALUE`` sets, ``NAME`` passes the current value through."""
    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if (
            not name
            or not (name[0].isalpha() or name[0] == "_")
            or not all(c.isalnum() or c == "_" for c in name)
        ):
            raise UsageError(f"--env {item!r}: expected NAME=VALUE or NAME (a valid variable name)")
        if not sep:
            if name not in environ:
                raise UsageError(
                    f"--env {name}: not set in the current environment; use --env {name}=VALUE"
                )
            value = environ[name]
        env[name] = value
    return env
