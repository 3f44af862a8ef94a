"""``repomin reduce`` as a library call: typed options in, payload + report out.

The CLI parses into :class:`ReduceOptions`, builds a progress display, and calls
:func:`execute`. Nothing is written to OUTPUT until the reduction has finished; errors before
that leave the filesystem untouched.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repomin.accounting import Ledger
from repomin.errors import Interrupted, UsageError
from repomin.export import check_output_location, export_payload, sidecar_dir
from repomin.failure.contract import FailureContract, FailureSpec
from repomin.oracle import Budget, Oracle, SamplingConfig
from repomin.passes import DEFAULT_SCHEDULE, REGISTRY
from repomin.progress import NullProgress, Progress
from repomin.reducer import Mutation, Reduction, run_passes
from repomin.report.build import ReportInputs, build_report, environment_digest, render_markdown
from repomin.report.io import write_json_atomic, write_text_atomic
from repomin.runners.base import Runner
from repomin.runners.host import IMPLICIT_ENVIRONMENT, HostRunner
from repomin.selection import SelectionOptions, select

STRATEGY_VERSION = "repomin-hdd-v1"


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

    @property
    def reduction_strategy(self) -> str:
        return f"{STRATEGY_VERSION}:{','.join(self.schedule)}"


@dataclass(frozen=True, slots=True)
class ReduceResult:
    report: dict[str, Any]
    report_path: Path
    exit_code: int


RunnerFactory = Callable[[ReduceOptions], Runner]


def default_runner_factory(options: ReduceOptions) -> Runner:
    if options.backend == "host":
        return HostRunner()
    if options.backend == "docker":
        from repomin.runners.docker import DockerRunner  # type: ignore[import-not-found,unused-ignore]

        runner: Runner = DockerRunner(jobs=options.jobs, **dict(options.backend_options))
        return runner
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
            oracle.on_sample = lambda outcome, ok: progress.update(runs=oracle.samples + 1)
            progress.start()
            progress.update(
                phase="baseline",
                files=source.file_count,
                bytes=source.byte_count,
                jobs=options.jobs,
            )
            t0 = time.monotonic()
            try:
                baseline = oracle.run_baseline(source, options.jobs)
            except Exception:
                progress.stop()
                raise
            if stop.is_set():
                raise Interrupted("interrupted during the baseline; nothing was written")
            ledger.event(
                "baseline",
                f"baseline: {baseline.passes}/{baseline.runs} runs reproduced; policy "
                f"{oracle.policy}, candidate threshold {oracle.theta:.4f}",
                decision="passed",
                duration_seconds=round(time.monotonic() - t0, 6),
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
            progress.message(
                f"baseline {baseline.passes}/{baseline.runs}, lower bound {baseline.lower:.3f}; "
                f"sampling policy {oracle.policy}"
            )

            def on_accept(m: Mutation) -> None:
                progress.update(
                    phase=m.phase,
                    files=m.tree.file_count,
                    bytes=m.tree.byte_count,
                    accepted=ledger.accepted,
                    rate=m.verdict.passes / m.verdict.runs,
                )
                progress.message(
                    f"{m.phase}: {m.description} -> {m.tree.file_count} files, "
                    f"{m.tree.byte_count} B"
                )

            reduction = Reduction(
                initial=source,
                oracle=oracle,
                ledger=ledger,
                jobs=options.jobs,
                protected=selection.is_kept,
                on_accept=on_accept,
            )
            for name in options.schedule:
                ledger.phase(name)
            result = run_passes(reduction, options.schedule)
            if result.stop_reason == "interrupted":
                progress.stop()
                raise Interrupted(
                    "interrupted; nothing was exported (the source tree is untouched)"
                )
            best = result.tree
            progress.update(phase="final validation", files=best.file_count, bytes=best.byte_count)
            t0 = time.monotonic()
            final_passes, final_runs, final_exit = oracle.final_validation(
                best, options.sampling.final_runs, options.jobs
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
            progress.stop()
    finally:
        runner.close()

    fp = export_payload(best, options.output)
    ledger.event(
        "export",
        "payload exported",
        decision="info",
        duration_seconds=0.0,
        files=fp.files,
        bytes=fp.bytes,
    )
    budget_exhausted = result.stop_reason in ("max_runs", "max_time")
    execution: dict[str, Any] = {
        **runner.describe(),
        "jobs": options.jobs,
        "cache_enabled": options.use_cache,
        "resumed": False,
        "baseline_runs": baseline.runs,
        "baseline_passes": baseline.passes,
        "candidate_runs": oracle.candidate_runs,
        "candidate_passes": oracle.candidate_passes,
        "candidate_runs_cap": options.sampling.candidate_runs,
        "final_runs": final_runs,
        "final_passes": final_passes,
        "final_validation_passed": final_ok,
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
        "budget_exhausted": budget_exhausted,
        "max_runs": options.budget.max_runs,
        "max_time_seconds": options.budget.max_seconds,
        "stop_reason": result.stop_reason,
        "oracle_samples": oracle.samples,
        "wall_time_seconds": round(time.monotonic() - started, 6),
    }
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
        )
    )
    side = sidecar_dir(options.output.absolute())
    report_path = side / "report.json"
    write_json_atomic(report_path, report)
    write_text_atomic(side / "REPOMIN.md", render_markdown(report, options.output.name))
    return ReduceResult(report, report_path, 0 if final_ok else 1)


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
