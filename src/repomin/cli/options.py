"""``repomin reduce``'s flags as one frozen, typed record, and its translation to options.

Owns the flag table: every field of :class:`ReduceArgs` *is* a click parameter (declared with
:mod:`repomin.cli.typed`'s ``opt`` / ``flag`` / ``arg``; ``typed_command`` turns the record into
the command's parameters, so the command receives a ``ReduceArgs`` and never a ``**kw``; the
``--cluster`` flags come from ``ClusterArgs``). All checks that combine flags live in
:func:`to_options`; checks of one value live in the ``__post_init__`` of the library record it
becomes (``SamplingConfig``, ``Budget``, ``HoldoutConfig``, ``ReduceOptions``). To add a flag:
add a field here and map it in :func:`to_options`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from repomin.app.selection import DEFAULT_IGNORED_NAMES, SelectionOptions, normalise_relative
from repomin.cli.cluster_flags import ClusterArgs
from repomin.cli.typed import arg, flag, opt
from repomin.errors import UsageError
from repomin.failure.contract import FailureSpec
from repomin.runners.extras import require

if TYPE_CHECKING:  # the statistics modules (scipy) load only in to_options: the live display
    from repomin.analysis.semantic import SemanticConfig
    from repomin.app.options import ReduceOptions
    from repomin.sampling.budget import Deadline
    from repomin.sampling.holdout import HoldoutConfig  # starts before them (cli.main.reduce_cmd)

#: ``repomin.sampling.policy.SAMPLING_MODES`` (equal by a test; importing policy loads scipy).
SAMPLING_MODES = ("auto", "single", "fast", "strict")

T = TypeVar("T")


_PATH = click.Path(path_type=Path)
_KEEP_RATE = (
    "Reject candidates whose failure rate is significantly above the baseline's (a flaky "
    "failure stays flaky; costs --baseline-runs fresh runs per accepted candidate)."
)
_ALLOW_SRC = "Proceed when a visible SRC was reached by its absolute path (recorded)."


@dataclass(frozen=True, slots=True)
class ReduceArgs(ClusterArgs):
    """The parsed flags of ``repomin reduce`` (names and defaults are the CLI's)."""

    src: Path = arg(type=click.Path(path_type=Path, file_okay=True, dir_okay=True))
    output: Path = opt(
        "-o",
        "--output",
        type=_PATH,
        required=True,
        help="Where to write the payload (OUTPUT.repomin/ gets the report).",
    )
    command: str = opt(
        "--command",
        required=True,
        help="Shell command that fails; runs with the tree copy as working directory.",
    )
    match: str | None = opt("--match", default=None, help="Regex over stdout+stderr (Python re).")
    exit_code: int | None = opt(
        "--exit-code", type=int, default=None, help="Exit status the failing command must return."
    )
    python_exception: bool = flag("--python-exception", help="Pin the Python exception signature.")
    java_exception: bool = flag("--java-exception", help="Pin the Java exception signature.")
    process_failure: bool = flag(
        "--process-failure", help="Pin the process failure (signal / exit status / Windows status)."
    )
    identity: str = opt(
        "--identity",
        type=click.Choice(("auto", "off")),
        default="auto",
        show_default=True,
        help="Pin the failure's identity read from the baseline (exception, failing test, "
        "error code, signal); off: only --match/--exit-code decide.",
    )
    timeout: float = opt(
        "--timeout",
        type=float,
        default=60.0,
        show_default=True,
        help="Seconds per run (candidates: adaptive, see --fixed-timeout); the group is killed.",
    )
    fixed_timeout: bool = flag("--fixed-timeout", help="Candidate runs too get --timeout.")
    env: tuple[str, ...] = opt(
        "--env",
        default=(),
        multiple=True,
        metavar="NAME[=VALUE]",
        help="Explicit environment for the command (NAME passes the current value).",
    )
    ignore: tuple[str, ...] = opt(
        "--ignore",
        default=(),
        multiple=True,
        metavar="NAME",
        help="Also ignore entries with this name or glob (repeatable).",
    )
    ignore_path: tuple[str, ...] = opt(
        "--ignore-path",
        default=(),
        multiple=True,
        metavar="PATH",
        help="Ignore this path relative to SRC (repeatable).",
    )
    no_gitignore: bool = flag("--no-gitignore", help="Do not honour .gitignore files.")
    no_default_ignores: bool = flag(
        "--no-default-ignores", help="Do not ignore .git, node_modules, __pycache__, .venv, ..."
    )
    keep: tuple[str, ...] = opt(
        "--keep",
        default=(),
        multiple=True,
        metavar="PATH",
        help="Never remove or edit this path relative to SRC (repeatable).",
    )
    confidence: float = opt(
        "--confidence",
        type=float,
        default=0.95,
        show_default=True,
        help="Confidence of every bound and test (baseline bound, candidate tests, final test).",
    )
    min_baseline_rate: float = opt(
        "--min-baseline-rate",
        type=float,
        default=0.1,
        show_default=True,
        help=(
            "The baseline's lower bound on the failure rate must reach this: below it the "
            "baseline runs 20 more at a time, up to 160 runs, then stops (exit 2)."
        ),
    )
    min_candidate_rate: float | None = opt(
        "--min-candidate-rate",
        type=float,
        default=None,
        help="Candidate threshold theta (default: half the baseline lower bound).",
    )
    baseline_runs: int = opt(
        "--baseline-runs",
        type=int,
        default=20,
        show_default=True,
        help=(
            "Runs of the unreduced tree before the baseline's first look at the failure rate "
            "(more follow while its lower bound is below --min-baseline-rate)."
        ),
    )
    candidate_runs: int = opt(
        "--candidate-runs",
        type=int,
        default=60,
        show_default=True,
        help="Cap on runs per candidate (sequential test).",
    )
    final_runs: int | None = opt(
        "--final-runs",
        type=int,
        default=None,
        help=(
            "Exactly this many final validation runs (default: 10 for a deterministic failure; "
            "for a flaky one at most the fewest with power 0.95, stopped once certain)."
        ),
    )
    sampling: str = opt(
        "--sampling",
        type=click.Choice(SAMPLING_MODES),
        default="auto",
        show_default=True,
        help="auto: single-run (deterministic baseline) or fast search, exported payload tested "
        "at a spent level (backtracks on failure); single: unsound by design.",
    )
    jobs: int | None = opt(
        "--jobs",
        "-j",
        type=int,
        default=None,
        help="Parallel candidates/samples (default: number of cores).",
    )
    no_cache: bool = flag("--no-cache", help="Disable the content cache.")
    max_runs: int | None = opt("--max-runs", type=int, default=None, help="Budget: oracle runs.")
    max_time: float | None = opt(
        "--max-time",
        type=float,
        default=None,
        help="Search budget in seconds from the start; the final test, the runs in your shell, "
        "export and holdout come after it (a bound on the total: --deadline).",
    )
    deadline: float | None = opt(
        "--deadline",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Total wall-clock bound (baseline, search, final test, your-shell runs, export): "
        "the search stops early enough for what follows; what the time cut is reported.",
    )
    passes: str | None = opt(
        "--passes",
        default=None,
        help="Comma-separated pass schedule (default: trace,refs,files,normalise,python,blocks,"
        "brackets,lines,pyexpr,tokens).",
    )
    no_trace: bool = flag("--no-trace", help="Skip the traced run and the trace-guided first cut.")
    semantic_endpoint: str | None = opt(
        "--semantic-endpoint",
        default=None,
        metavar="URL",
        help="Opt-in: OpenAI-compatible chat-completions endpoint proposing smaller files "
        "(API key from $REPOMIN_SEMANTIC_API_KEY).",
    )
    semantic_model: str | None = opt(
        "--semantic-model", default=None, metavar="NAME", help="Model for --semantic-endpoint."
    )
    semantic_timeout: float = opt(
        "--semantic-timeout",
        type=float,
        default=60.0,
        show_default=True,
        help="Seconds per semantic request.",
    )
    holdout_runs: int | None = opt(
        "--holdout-runs",
        type=int,
        default=None,
        help="Certify the exported payload with N fresh runs (exact binomial test).",
    )
    holdout_confidence: float = opt(
        "--holdout-confidence", type=float, default=0.95, show_default=True
    )
    holdout_min_rate: float | None = opt(
        "--holdout-min-rate",
        type=float,
        default=None,
        help="Rate p0 to certify (default: the candidate threshold theta).",
    )
    session_dir: Path | None = opt(
        "--session",
        type=_PATH,
        default=None,
        help="Session directory (default: OUTPUT.repomin-session beside OUTPUT).",
    )
    resume: bool = flag("--resume", help="Continue an interrupted session.")
    no_session: bool = flag("--no-session", help="Do not keep a resumable session.")
    export_on_interrupt: bool = flag(
        "--export-on-interrupt",
        help="On Ctrl-C/SIGTERM, export the best tree so far (no final runs).",
    )
    force: bool = flag("--force", help="Replace an existing OUTPUT.")
    backend: str = opt(
        "--backend", type=click.Choice(["host", "docker"]), default="host", show_default=True
    )
    isolation: str = opt(
        "--isolation",
        type=click.Choice(["auto", "namespace", "supervisor"]),
        default="auto",
        show_default=True,
        help="Host samples' boundary: namespace (bwrap: SRC and other samples hidden, no "
        "capabilities; exit 2 when it cannot be made), supervisor (dies with ReproMin; contains "
        "accidents, not attacks) or auto (namespace when bwrap works).",
    )
    home: str = opt(
        "--home",
        type=click.Choice(["fresh", "inherit"]),
        default="fresh",
        show_default=True,
        help="Host samples' HOME: fresh (a private empty one per sample) or inherit (yours, "
        "for toolchains under ~: read-only in the namespace, writable under the supervisor).",
    )
    image: str | None = opt(
        "--image", default=None, help="Docker image reference or ID (--backend docker)."
    )
    network: str = opt(
        "--network",
        type=click.Choice(["none", "bridge"]),
        default="none",
        show_default=True,
        help="Container network (--backend docker).",
    )
    memory: str | None = opt(
        "--memory",
        default=None,
        help="Container memory limit incl. swap, e.g. 512m [default: min(2g, RAM/(2*jobs))]; "
        "none lifts it.",
    )
    cpus: float | None = opt("--cpus", type=float, default=None, help="Container CPU limit.")
    pids_limit: str | None = opt(
        "--pids-limit", default=None, help="Container process limit [default: 512]; none lifts it."
    )
    tmp_size: str | None = opt(
        "--tmp-size", default=None, help="Size of the container's /tmp [default: 512m]; or none."
    )
    work_size: str | None = opt(
        "--work-size", default=None, help="Size of the container's /work [default: 1g]; or none."
    )
    user: str | None = opt(
        "--user", default=None, help="Numeric UID[:GID] in the container (default 65534)."
    )
    fresh_container: bool = flag(
        "--fresh-container", help="One container per sample (slower; for images without a shell)."
    )
    pull: bool = flag("--pull", help="Pull the image if missing (never implicit).")
    docker_transport: str = opt(
        "--docker-transport",
        type=click.Choice(["auto", "bind", "stream"]),
        default="auto",
        show_default=True,
        help="How trees reach the container (auto: bind when the engine is local).",
    )
    keep_rate: bool = flag("--keep-rate", help=_KEEP_RATE)
    user_shell_runs: int = opt(
        "--user-shell-runs",
        type=int,
        default=3,
        show_default=True,
        help="Before export, run the payload's command N times in your own shell (your HOME "
        "and environment); exit 1 if it does not reproduce there. 0: skip (your environment "
        "is not safe to run in).",
    )
    allow_src_access: bool = flag("--allow-src-access", help=_ALLOW_SRC)
    quiet: bool = flag("--quiet", "-q", help="Print only errors (no live line or summary).")
    verbose: bool = flag("--verbose", "-v", help="Also print every accepted mutation.")


# -- translation ------------------------------------------------------------------------------


def to_options(a: ReduceArgs) -> ReduceOptions:
    """The library options for these flags (every cross-flag check is here)."""
    from repomin.app.options import ReduceOptions, parse_env, plan_schedule
    from repomin.passes import DEFAULT_SCHEDULE
    from repomin.sampling.oracle import Budget
    from repomin.sampling.policy import SamplingConfig

    semantic = _semantic(a)
    cluster = a.cluster_config(jobs_given=a.jobs is not None)
    schedule = (
        tuple(p.strip() for p in a.passes.split(",") if p.strip()) if a.passes else DEFAULT_SCHEDULE
    )
    return ReduceOptions(
        src=a.src,
        output=a.output,
        command=a.command,
        spec=FailureSpec(
            match=a.match,
            exit_code=a.exit_code,
            java_exception=a.java_exception,
            python_exception=a.python_exception,
            process_failure=a.process_failure,
            identity=a.identity,
        ),
        env=parse_env(a.env),
        timeout=a.timeout,
        fixed_timeout=a.fixed_timeout,
        selection=_selection(a),
        sampling=SamplingConfig(
            confidence=a.confidence,
            baseline_runs=a.baseline_runs,
            candidate_runs=a.candidate_runs,
            final_runs=a.final_runs,
            min_baseline_rate=a.min_baseline_rate,
            min_candidate_rate=a.min_candidate_rate,
            mode=a.sampling,  # type: ignore[arg-type]  # coerced to Sampling
        ),
        jobs=a.jobs if a.jobs is not None else (1 if cluster else os.cpu_count() or 1),
        use_cache=not a.no_cache,
        budget=Budget(a.max_runs, a.max_time, _deadline(a.deadline)),
        force=a.force,
        schedule=plan_schedule(schedule, trace=not a.no_trace, semantic=semantic is not None),
        backend=a.backend,
        backend_options=_backend_options(a),
        isolation=_isolation(a),
        home=a.home,
        holdout=_holdout(a),
        session_dir=a.session_dir,
        resume=a.resume,
        use_session=not a.no_session,
        export_on_interrupt=a.export_on_interrupt,
        semantic=semantic,
        keep_rate=a.keep_rate,
        user_shell_runs=a.user_shell_runs,
        allow_src_access=a.allow_src_access,
        cluster=cluster,
    )


def _deadline(seconds: float | None) -> Deadline | None:
    """``--deadline``: counted from this process's start (the interpreter's start-up counts)."""
    from repomin.sampling.budget import Deadline, process_started

    return None if seconds is None else Deadline(seconds, started=process_started())


def _selection(a: ReduceArgs) -> SelectionOptions:
    defaults = () if a.no_default_ignores else DEFAULT_IGNORED_NAMES
    return SelectionOptions(
        ignored_names=tuple(dict.fromkeys((*defaults, *a.ignore))),
        ignored_paths=tuple(normalise_relative(p, option="--ignore-path") for p in a.ignore_path),
        use_gitignore=not a.no_gitignore,
        keep_paths=tuple(normalise_relative(p, option="--keep") for p in a.keep),
    )


def _semantic(a: ReduceArgs) -> SemanticConfig | None:
    from repomin.analysis.semantic import SemanticConfig

    if a.semantic_endpoint is None and a.semantic_model is None:
        return None
    if a.semantic_endpoint is None or a.semantic_model is None:
        raise UsageError("--semantic-endpoint and --semantic-model go together; pass both")
    return SemanticConfig(a.semantic_endpoint, a.semantic_model, a.semantic_timeout)


def _holdout(a: ReduceArgs) -> HoldoutConfig | None:
    from repomin.sampling.holdout import HoldoutConfig

    if a.holdout_runs is None:
        return None
    # None: the candidate threshold θ (resolved after the baseline), as the help says.
    return HoldoutConfig(a.holdout_runs, a.holdout_min_rate, round(1 - a.holdout_confidence, 12))


def _isolation(a: ReduceArgs) -> str:
    if a.isolation != "auto" and a.backend != "host":
        raise UsageError(
            f"--isolation {a.isolation} is for the host runner; Docker samples always run in "
            "their own container (drop --isolation or use --backend host)"
        )
    return str(a.isolation)


def _backend_options(a: ReduceArgs) -> dict[str, Any]:
    if a.backend == "docker":
        if not a.cluster:  # with --cluster the workers run the Docker runner (and need the SDK)
            require("docker", "docker", "--backend docker")
        return {
            "image": a.image,
            "network": a.network,
            "memory": a.memory,
            "cpus": a.cpus,
            "pids_limit": a.pids_limit,
            "user": a.user,
            "fresh_container": a.fresh_container,
            "pull": a.pull,
            "transport": None if a.docker_transport == "auto" else a.docker_transport,
            "tmp_size": a.tmp_size,
            "work_size": a.work_size,
        }
    docker_only = (a.image, a.memory, a.cpus, a.pids_limit, a.user, a.tmp_size, a.work_size)
    if any(v is not None for v in docker_only) or a.fresh_container or a.pull:
        raise UsageError(
            "--image/--memory/--cpus/--pids-limit/--user/--tmp-size/--work-size/"
            "--fresh-container/--pull need --backend docker"
        )
    return {}
