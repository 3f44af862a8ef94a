"""The ``repomin report`` group: ``validate`` and ``replay`` here, ``compare`` from its module.

Exit codes. validate: 0 valid, 2 invalid (one ``rule: message`` line per problem on stderr).
replay: 0 the pinned failure reproduced in at least one run, 1 it reproduced in none, 2 refused
(invalid report, modified payload without ``--allow-modified``, no ``--yes``, missing
environment names), 3 backend failure, 130 interrupted.
"""

from __future__ import annotations

import json
import os
import sys
import unicodedata
from pathlib import Path
from typing import Any

import click

from repomin.cli.cluster_flags import cluster_options
from repomin.cli.common import errors_to_exit
from repomin.cli.compare_cmd import compare_cmd
from repomin.cluster import wiring
from repomin.errors import ReportError, UsageError
from repomin.report import replay as rp
from repomin.report.summary import build_summary, render_markdown
from repomin.report.validate import ValidationResult, validate_file
from repomin.sampling.stats import holdout_test

#: Problems that only say "this payload is not the exported one"; ``--allow-modified`` waives them.
DRIFT_RULES = frozenset({"payload.counts", "payload.fingerprint"})

_MODE_TEXT = {
    "exact": "exact match (tree-sha256-v1: contents, paths, links, modes and mtimes)",
    "content": "content-only match (tree-content-sha256-v1): paths, contents and links match; "
    "modes or mtimes changed, e.g. in transport",
    "unavailable": "unavailable: legacy report without fingerprints; files and bytes counted only",
}


def _report_file(path: Path) -> Path:
    """Accept ``OUTPUT.repomin/`` for ``OUTPUT.repomin/report.json``."""
    if path.is_dir() and (path / "report.json").is_file():
        return path / "report.json"
    return path


def _printable(text: str) -> str:
    """``text`` with control and format characters shown as escapes (never interpreted)."""
    return "".join(
        ch
        if ch.isprintable() and unicodedata.category(ch) not in ("Cf", "Cs")
        else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def _fail(result: ValidationResult, problems: list[str] | None = None) -> None:
    for line in problems if problems is not None else result.lines():
        click.echo(f"repomin: error: {line}", err=True)


@click.group("report")
def report_group() -> None:
    """Validate, replay and compare reports."""


report_group.add_command(compare_cmd)


@report_group.command("validate")
@click.argument("report", type=click.Path(path_type=Path))
@click.option(
    "--payload",
    type=click.Path(path_type=Path),
    default=None,
    help="The exported payload directory: check safety, counts and fingerprint.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the compact JSON summary.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default=None,
    help="text (default), json (= --json) or markdown (shareable, path-free table).",
)
@errors_to_exit
def validate_cmd(report: Path, payload: Path | None, as_json: bool, fmt: str | None) -> None:
    """Check REPORT (and its payload) without running anything; exit 2 when invalid."""
    if as_json and fmt not in (None, "json"):
        raise UsageError(f"--json conflicts with --format {fmt}; pass one of them")
    fmt = "json" if as_json else (fmt or "text")
    path = _report_file(report)
    data, result = validate_file(path, payload=payload)
    if fmt == "json":
        summary = build_summary(data, result, report_path=path)
        click.echo(json.dumps(summary, allow_nan=False))
    elif result.valid and fmt == "markdown":
        click.echo(render_markdown(build_summary(data, result, report_path=path)), nl=False)
    elif result.valid:
        status = data.get("holdout_certification", {}).get("status", "absent")
        runs = data["execution"].get("oracle_samples")
        click.echo(
            f"repomin: report valid: schema_version {data['schema_version']}, "
            + (f"{runs} runs, " if isinstance(runs, int) else "")
            + f"{len(data['events'])} events, holdout {status}"
        )
        if payload is not None and result.payload_fingerprint_mode is not None:
            click.echo(
                f"repomin: payload fingerprint: {_MODE_TEXT[result.payload_fingerprint_mode]}"
            )
    if not result.valid:
        _fail(result)
        sys.exit(2)


@report_group.command("replay")
@click.argument("report", type=click.Path(path_type=Path))
@click.option(
    "--payload",
    type=click.Path(path_type=Path),
    required=True,
    help="The exported payload directory (copied afresh for every run, never modified).",
)
@click.option("--yes", is_flag=True, help="Run the recorded command (review it first).")
@click.option(
    "--runs",
    type=int,
    default=None,
    help="Runs to make (default: the report's final_runs, at least 1).",
)
@click.option(
    "--timeout",
    type=float,
    default=None,
    help="Seconds per run (default: the recorded timeout_seconds).",
)
@click.option(
    "--jobs",
    "-j",
    type=int,
    default=None,
    help="Concurrent runs (default: the recorded jobs; load changes flake rates).",
)
@click.option(
    "--allow-modified",
    is_flag=True,
    help="Replay a payload that no longer matches the report (e.g. to test a fix).",
)
@click.option(
    "--min-rate",
    type=float,
    default=None,
    help="Also run the holdout's exact test of 'reproduces with probability >= P0' on these "
    "runs; exit 0 only when it passes.",
)
@cluster_options
@errors_to_exit
def replay_cmd(
    report: Path,
    payload: Path,
    yes: bool,
    runs: int | None,
    timeout: float | None,
    jobs: int | None,
    allow_modified: bool,
    min_rate: float | None,
    cluster: str | None,
    cluster_tls_ca: Path | None,
    cluster_tls_cert: Path | None,
    cluster_tls_key: Path | None,
    allow_mixed_workers: bool,
) -> None:
    """Rerun REPORT's command on fresh copies of the payload: a new observation, not a proof.

    Exit 0 when the pinned failure reproduced at least once, 1 when it never did.
    """
    if min_rate is not None and not 0 < min_rate < 1:
        raise UsageError(f"--min-rate {min_rate} must be in (0, 1), e.g. 0.3")
    config = wiring.config_from_flags(
        cluster, cluster_tls_ca, cluster_tls_cert, cluster_tls_key, allow_mixed_workers, True
    )
    data, drift = _checked_for_replay(_report_file(report), payload, allow_modified)
    plan = rp.plan_replay(data, runs=runs, timeout=timeout, jobs=jobs)
    _describe(plan)
    if not yes:
        click.echo(
            "repomin: refusing to run an unsigned command without --yes; review the command "
            "above, then rerun with --yes",
            err=True,
        )
        sys.exit(2)
    env = rp.replay_environment(plan, os.environ)
    if rp.environment_matches(plan, env) is False:
        click.echo(
            "repomin: note: the current values of the recorded environment names differ from "
            "the recorded ones (digest mismatch)"
        )
    tree = rp.read_payload(payload)
    hold = data.get("holdout_certification") or {}
    expected = data["output"].get("tree_content_sha256", hold.get("artifact_tree_content_sha256"))
    if not drift and expected is not None and rp.tree_content_sha256(tree) != expected:
        raise ReportError(
            "payload.fingerprint: the payload changed while it was being read; nothing was run"
        )
    runner = rp.make_runner(plan) if config is None else wiring.replay_runner(plan, config)
    try:
        obs = rp.run_replay(plan, tree, runner, env)
    finally:
        runner.close()
    if not obs.reproduced and obs.first_miss is not None:
        from repomin.app.diagnose import describe_run

        for line in describe_run("replay run 1", plan.contract, obs.first_miss):
            click.echo(f"repomin: {line}", err=True)
    _observed(obs, min_rate)


def _checked_for_replay(
    path: Path, payload: Path, allow_modified: bool
) -> tuple[dict[str, Any], bool]:
    """The validated report and whether the payload drifted (exit 2 when it may not run)."""
    data, result = validate_file(path, payload=payload)
    blocking = [p for p in result.problems if p.rule not in DRIFT_RULES]
    drift = [p for p in result.problems if p.rule in DRIFT_RULES]
    if blocking or (drift and not allow_modified):
        _fail(result)
        if drift and not blocking:
            click.echo(
                "repomin: the payload is not the one the report describes; pass "
                "--allow-modified to replay it anyway (e.g. to test a fix)",
                err=True,
            )
        sys.exit(2)
    if drift:
        click.echo(
            "repomin: payload: MODIFIED since the reduction (--allow-modified); the result "
            "describes this modified tree, not the reported payload"
        )
    else:
        mode = result.payload_fingerprint_mode
        click.echo(f"repomin: payload fingerprint: {_MODE_TEXT[mode] if mode else 'not checked'}")
    return data, bool(drift)


def _observed(obs: rp.ReplayObservation, min_rate: float | None) -> None:
    """Print the replay's observation; exit with its code."""
    extra = ", ".join(
        f"{n} {label}"
        for n, label in ((obs.timeouts, "timed out"), (obs.resource_exhausted, "exhausted"))
        if n
    )
    click.echo(
        f"repomin: replay: the failure reproduced in {obs.passes} of {obs.runs} runs "
        f"(rate {obs.rate:.3f}; one-sided {obs.confidence:g} bounds "
        f"[{obs.lower_bound:.3f}, {obs.upper_bound:.3f}])" + (f"; {extra}" if extra else "")
    )
    click.echo(
        "repomin: replay is a new observation in the current environment; it does not change "
        "the report or certify anything"
    )
    if min_rate is not None:
        test = holdout_test(obs.passes, obs.runs, min_rate, round(1 - obs.confidence, 12))
        verdict = "supports" if test.certified else "does not support"
        click.echo(
            f"repomin: exact test: {obs.passes}/{obs.runs} {verdict} a rate >= {min_rate:g} "
            f"(p-value {test.p_value:.4g}, needs {test.k_crit} passes)"
        )
        sys.exit(0 if test.certified else 1)
    sys.exit(0 if obs.reproduced else 1)


def _describe(plan: rp.ReplayPlan) -> None:
    backend = plan.backend
    if plan.docker_image_id is not None:
        backend += f" (image {plan.docker_image_id})"
    click.echo(f"repomin: command: {_printable(plan.command)}")
    click.echo(
        f"repomin: backend {backend}; {plan.runs} run(s), {plan.jobs} at a time, "
        f"timeout {plan.timeout:g} s; oracle {plan.oracle_mode}"
        + (" with the recorded signature pinned" if plan.contract.signature is not None else "")
    )
    identity = plan.contract.identity
    if identity is not None:
        for line in identity.describe() or ["none recognised in the original runs"]:
            click.echo(f"repomin: recorded identity: {_printable(line)}")
    else:
        click.echo("repomin: recorded identity: off (only the contract's options decide)")
    spec = plan.contract.spec
    if spec.match is not None and spec.match_scope == "whole_output":
        click.echo("repomin: --match searches the whole output, echoed source included")
    names = ", ".join(plan.environment_names) or "none"
    click.echo(f"repomin: environment names taken from the current environment: {names}")
