"""``repomin`` command line: parse into typed options, build collaborators, execute.

Only this module prints. Every :class:`~repomin.errors.ReproMinError` becomes one line on
stderr and its exit code (2 for bad input or an invalid report); no traceback reaches the user.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from repomin import __version__
from repomin.errors import ReproMinError, UsageError

F = TypeVar("F", bound=Callable[..., Any])


def _errors_to_exit(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ReproMinError as exc:
            click.echo(f"repomin: error: {exc.message}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("repomin: interrupted", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repomin")
def cli() -> None:
    """Shrink a repository to the smallest tree in which a failure still reproduces."""


@cli.command("reduce")
@click.argument("src", type=click.Path(path_type=Path, file_okay=True, dir_okay=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    required=True,
    help="Where to write the payload (OUTPUT.repomin/ gets the report).",
)
@click.option(
    "--command",
    "command",
    required=True,
    help="Shell command that fails; runs with the tree copy as working directory.",
)
@click.option("--match", "match", default=None, help="Regex over stdout+stderr (Python re).")
@click.option(
    "--exit-code",
    "exit_code",
    type=int,
    default=None,
    help="Exit status the failing command must return.",
)
@click.option("--python-exception", is_flag=True, help="Pin the Python exception signature.")
@click.option("--java-exception", is_flag=True, help="Pin the Java exception signature.")
@click.option(
    "--process-failure",
    is_flag=True,
    help="Pin the process failure (signal / exit status / Windows status).",
)
@click.option(
    "--timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds per run; the whole process group is killed after it.",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Explicit environment for the command (NAME passes the current value).",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="NAME",
    help="Also ignore entries with this name or glob (repeatable).",
)
@click.option(
    "--ignore-path",
    "ignore_path",
    multiple=True,
    metavar="PATH",
    help="Ignore this path relative to SRC (repeatable).",
)
@click.option("--no-gitignore", is_flag=True, help="Do not honour .gitignore files.")
@click.option(
    "--no-default-ignores",
    is_flag=True,
    help="Do not ignore .git, node_modules, __pycache__, .venv, ...",
)
@click.option(
    "--keep",
    "keep",
    multiple=True,
    metavar="PATH",
    help="Never remove or edit this path relative to SRC (repeatable).",
)
@click.option("--confidence", type=float, default=0.95, show_default=True)
@click.option("--min-baseline-rate", type=float, default=0.1, show_default=True)
@click.option(
    "--min-candidate-rate",
    type=float,
    default=None,
    help="Candidate threshold theta (default: half the baseline lower bound).",
)
@click.option("--baseline-runs", type=int, default=20, show_default=True)
@click.option(
    "--candidate-runs",
    type=int,
    default=60,
    show_default=True,
    help="Cap on runs per candidate (sequential test).",
)
@click.option(
    "--final-runs",
    type=int,
    default=None,
    help="Final validation runs (default: 10 deterministic, 50 flaky).",
)
@click.option(
    "--sampling",
    type=click.Choice(["auto", "single", "fast", "strict"]),
    default="auto",
    show_default=True,
    help="auto: single-run for deterministic baselines, strict otherwise.",
)
@click.option(
    "--jobs",
    "-j",
    type=int,
    default=None,
    help="Parallel candidates/samples (default: number of cores).",
)
@click.option("--no-cache", is_flag=True, help="Disable the content cache.")
@click.option("--max-runs", type=int, default=None, help="Budget: oracle runs.")
@click.option("--max-time", type=float, default=None, help="Budget: seconds.")
@click.option(
    "--passes",
    "passes",
    default=None,
    help="Comma-separated pass schedule (default: trace,refs,files,normalise,python,blocks,"
    "brackets,lines,tokens).",
)
@click.option(
    "--no-trace", is_flag=True, help="Skip the traced run and the trace-guided first cut."
)
@click.option(
    "--semantic-endpoint",
    default=None,
    metavar="URL",
    help="Opt-in: OpenAI-compatible chat-completions endpoint proposing smaller files "
    "(API key from $REPOMIN_SEMANTIC_API_KEY).",
)
@click.option(
    "--semantic-model", default=None, metavar="NAME", help="Model for --semantic-endpoint."
)
@click.option(
    "--semantic-timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds per semantic request.",
)
@click.option(
    "--holdout-runs",
    type=int,
    default=None,
    help="Certify the exported payload with N fresh runs (exact binomial test).",
)
@click.option("--holdout-confidence", type=float, default=0.95, show_default=True)
@click.option(
    "--holdout-min-rate",
    type=float,
    default=None,
    help="Rate p0 to certify (default: the candidate threshold).",
)
@click.option(
    "--session",
    "session_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Session directory (default: OUTPUT.repomin-session beside OUTPUT).",
)
@click.option("--resume", is_flag=True, help="Continue an interrupted session.")
@click.option("--no-session", is_flag=True, help="Do not keep a resumable session.")
@click.option(
    "--export-on-interrupt",
    is_flag=True,
    help="On Ctrl-C/SIGTERM, export the best tree so far (no final runs).",
)
@click.option("--force", is_flag=True, help="Replace an existing OUTPUT.")
@click.option("--backend", type=click.Choice(["host", "docker"]), default="host", show_default=True)
@click.option("--image", default=None, help="Docker image reference or ID (--backend docker).")
@click.option(
    "--network",
    type=click.Choice(["none", "bridge"]),
    default="none",
    show_default=True,
    help="Container network (--backend docker).",
)
@click.option("--memory", default=None, help="Container memory limit, e.g. 512m (swap included).")
@click.option("--cpus", type=float, default=None, help="Container CPU limit.")
@click.option("--pids-limit", type=int, default=None, help="Container process limit.")
@click.option("--user", default=None, help="Numeric UID[:GID] in the container (default 65534).")
@click.option(
    "--fresh-container",
    is_flag=True,
    help="One container per sample (slower; for images without a shell).",
)
@click.option("--pull", is_flag=True, help="Pull the image if missing (never implicit).")
@click.option(
    "--docker-transport",
    type=click.Choice(["auto", "bind", "stream"]),
    default="auto",
    show_default=True,
    help="How trees reach the container (auto: bind when the engine is local).",
)
@click.option("--quiet", "-q", is_flag=True)
@click.option("--verbose", "-v", is_flag=True)
@_errors_to_exit
def reduce_cmd(**kw: Any) -> None:
    """Reduce SRC to the smallest tree in which COMMAND still fails the same way."""
    from repomin.app import ReduceOptions, execute, parse_env, plan_schedule
    from repomin.failure.contract import FailureSpec
    from repomin.oracle import Budget, SamplingConfig
    from repomin.passes import DEFAULT_SCHEDULE
    from repomin.progress import make_progress
    from repomin.selection import DEFAULT_IGNORED_NAMES, SelectionOptions, normalise_relative

    spec = FailureSpec(
        match=kw["match"],
        exit_code=kw["exit_code"],
        java_exception=kw["java_exception"],
        python_exception=kw["python_exception"],
        process_failure=kw["process_failure"],
    )
    defaults = () if kw["no_default_ignores"] else DEFAULT_IGNORED_NAMES
    selection = SelectionOptions(
        ignored_names=tuple(dict.fromkeys((*defaults, *kw["ignore"]))),
        ignored_paths=tuple(
            normalise_relative(p, option="--ignore-path") for p in kw["ignore_path"]
        ),
        use_gitignore=not kw["no_gitignore"],
        keep_paths=tuple(normalise_relative(p, option="--keep") for p in kw["keep"]),
    )
    sampling = SamplingConfig(
        confidence=kw["confidence"],
        baseline_runs=kw["baseline_runs"],
        candidate_runs=kw["candidate_runs"],
        final_runs=kw["final_runs"],
        min_baseline_rate=kw["min_baseline_rate"],
        min_candidate_rate=kw["min_candidate_rate"],
        mode=kw["sampling"],
    )
    if kw["max_runs"] is not None and kw["max_runs"] < 1:
        raise UsageError("--max-runs must be at least 1")
    if kw["max_time"] is not None and kw["max_time"] <= 0:
        raise UsageError("--max-time must be positive (seconds)")
    schedule = (
        tuple(p.strip() for p in kw["passes"].split(",") if p.strip())
        if kw["passes"]
        else DEFAULT_SCHEDULE
    )
    semantic = None
    if kw["semantic_endpoint"] is not None or kw["semantic_model"] is not None:
        from repomin.semantic import SemanticConfig

        if kw["semantic_endpoint"] is None or kw["semantic_model"] is None:
            raise UsageError("--semantic-endpoint and --semantic-model go together; pass both")
        semantic = SemanticConfig(
            kw["semantic_endpoint"], kw["semantic_model"], kw["semantic_timeout"]
        )
    schedule = plan_schedule(schedule, trace=not kw["no_trace"], semantic=semantic is not None)
    holdout = None
    if kw["holdout_runs"] is not None:
        from repomin.holdout import HoldoutConfig

        if kw["holdout_runs"] < 1:
            raise UsageError("--holdout-runs must be at least 1")
        if not 0 < kw["holdout_confidence"] < 1:
            raise UsageError("--holdout-confidence must be in (0, 1), e.g. 0.95")
        p0 = kw["holdout_min_rate"]
        if p0 is None:
            p0 = kw["min_candidate_rate"] or 0.5
        if not 0 < p0 < 1:
            raise UsageError("--holdout-min-rate must be in (0, 1)")
        holdout = HoldoutConfig(kw["holdout_runs"], p0, round(1 - kw["holdout_confidence"], 12))
    docker_flags = ("image", "memory", "cpus", "pids_limit", "user")
    backend_options: dict[str, Any] = {}
    if kw["backend"] == "docker":
        backend_options = {
            "image": kw["image"],
            "network": kw["network"],
            "memory": kw["memory"],
            "cpus": kw["cpus"],
            "pids_limit": kw["pids_limit"],
            "user": kw["user"],
            "fresh_container": kw["fresh_container"],
            "pull": kw["pull"],
            "transport": None if kw["docker_transport"] == "auto" else kw["docker_transport"],
        }
    elif any(kw[f] is not None for f in docker_flags) or kw["fresh_container"] or kw["pull"]:
        raise UsageError(
            "--image/--memory/--cpus/--pids-limit/--user/--fresh-container/--pull need "
            "--backend docker"
        )
    options = ReduceOptions(
        src=kw["src"],
        output=kw["output"],
        command=kw["command"],
        spec=spec,
        env=parse_env(kw["env"]),
        timeout=kw["timeout"],
        selection=selection,
        sampling=sampling,
        jobs=kw["jobs"] if kw["jobs"] is not None else (os.cpu_count() or 1),
        use_cache=not kw["no_cache"],
        budget=Budget(kw["max_runs"], kw["max_time"]),
        force=kw["force"],
        schedule=schedule,
        backend=kw["backend"],
        backend_options=backend_options,
        holdout=holdout,
        session_dir=kw["session_dir"],
        resume=kw["resume"],
        use_session=not kw["no_session"],
        export_on_interrupt=kw["export_on_interrupt"],
        semantic=semantic,
    )
    progress = make_progress(quiet=kw["quiet"], verbose=kw["verbose"])
    result = execute(options, progress)
    rep = result.report
    if not kw["quiet"]:
        src, out = rep["source"], rep["output"]
        ex = rep["execution"]
        click.echo(
            f"repomin: {src['files']} files / {src['bytes']} B -> {out['files']} files / "
            f"{out['bytes']} B in {ex['oracle_samples']} runs "
            f"({rep['accepted_mutations']} accepted mutations, {rep['cache_hits']} cache hits)"
        )
        click.echo(f"repomin: payload: {options.output}")
        click.echo(f"repomin: report:  {result.report_path}")
        hold = rep["holdout_certification"]
        if hold["status"] != "not_requested":
            click.echo(
                f"repomin: holdout {hold['status']}: {hold['passes']}/{hold['planned_runs']} runs "
                f"reproduced (p0={hold['min_rate']}, lower bound "
                f"{hold.get('lower_bound', float('nan')):.3f})"
            )
        elif ex["baseline_passes"] < ex["baseline_runs"]:
            from repomin.stats import suggest_holdout_runs

            rate = ex["baseline_passes"] / ex["baseline_runs"]
            p0 = ex["min_candidate_rate"]
            try:
                n = suggest_holdout_runs(rate, p0, 0.05)
                click.echo(
                    f"repomin: to certify the payload at rate {p0:.3f}, rerun with "
                    f"--holdout-runs {n} --holdout-min-rate {p0:.3f}"
                )
            except ValueError:
                pass
        if result.exit_code == 130:
            click.echo("repomin: interrupted; the best tree so far was exported", err=True)
        elif result.exit_code != 0 and not ex["final_validation_passed"]:
            click.echo(
                f"repomin: warning: final validation reproduced only {ex['final_passes']}/"
                f"{ex['final_runs']} runs; the payload may not reproduce reliably",
                err=True,
            )
    sys.exit(result.exit_code)


@cli.group("report")
def report_group() -> None:
    """Validate, replay and compare reports."""


# Subcommands of ``repomin report`` live in their own modules and register on import.
from repomin.cli import compare_cmd, report_cmds  # noqa: E402, F401


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point; ``main([...])`` is callable from tests."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="repomin")


if __name__ == "__main__":  # pragma: no cover
    # Delegate to the imported module so report subcommands (registered on it) are present.
    from repomin.cli import main as _imported

    _imported.main()
