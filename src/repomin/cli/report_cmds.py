"""The ``repomin report`` group: ``validate`` and ``replay`` here, ``compare`` from its module.

Exit codes. validate: 0 valid, 2 invalid (one ``rule: message`` line per problem on stderr).
replay: 0 the pinned failure reproduced in at least one run, 1 it reproduced in none, 2 refused
(invalid report, modified payload without ``--allow-modified``, no ``--yes``, a recorded
environment name not passed with ``--env``, a recorded inherited HOME without ``--home``, a bad
boundary option), 3 backend failure, 130 interrupted. ``replay --min-rate P0 --certificate PATH``
also writes the runs and their exact test to ``PATH`` (:mod:`repomin.report.certificate`) once
every run completed, and ``validate --certificate PATH`` checks such a file against the report.

Replay prints the whole boundary before ``--yes`` is checked: the backend and the image, the
network, every limit, the user and the strategy with where each comes from (ReproMin's default
or this command line; what the report recorded is shown and never used), the runs' HOME (a
private empty one unless ``--home inherit``) beside the report's ``execution.home``, and every
environment name with where its value would come from and whether it is set.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from repomin.app.options import parse_env
from repomin.app.selection import read_payload
from repomin.cli.cluster_flags import cluster_options
from repomin.cli.common import errors_to_exit
from repomin.cli.compare_cmd import compare_cmd
from repomin.cluster import wiring
from repomin.errors import ReportError, UsageError
from repomin.report import certificate as cert
from repomin.report import replay as rp
from repomin.report.fingerprint import fingerprint
from repomin.report.summary import build_summary, render_markdown
from repomin.report.validate import Problem, ValidationResult, validate_file
from repomin.runners.docker_limits import (
    ReplaySandbox,
    describe_effective,
    describe_recorded,
    describe_replay_sandbox,
)
from repomin.runners.extras import require
from repomin.runners.host import IMPLICIT_ENVIRONMENT
from repomin.sampling.stats import holdout_test

if TYPE_CHECKING:
    from repomin.runners.base import Runner
    from repomin.tree import Tree

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
@click.option(
    "--certificate",
    "certificates",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A certificate written by replay --certificate: check it belongs to REPORT (and its "
    "payload) and its exact test recomputes. Repeatable.",
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
def validate_cmd(
    report: Path,
    payload: Path | None,
    certificates: tuple[Path, ...],
    as_json: bool,
    fmt: str | None,
) -> None:
    """Check REPORT (and its payload) without running anything; exit 2 when invalid."""
    if as_json and fmt not in (None, "json"):
        raise UsageError(f"--json conflicts with --format {fmt}; pass one of them")
    fmt = "json" if as_json else (fmt or "text")
    path = _report_file(report)
    data, result = validate_file(path, payload=payload)
    checked: list[Problem] = []
    valid_certificates: list[tuple[Path, dict[str, Any]]] = []
    for certificate in certificates:
        document, problems = cert.validate_certificate_file(certificate, data, result.report_sha256)
        checked += problems
        if not problems:
            valid_certificates.append((certificate, document))
    result = replace(result, problems=result.problems + tuple(checked))
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
        for certificate, document in valid_certificates:
            click.echo(_certificate_line(certificate, document))
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
@click.option(
    "--certificate",
    type=click.Path(path_type=Path),
    default=None,
    help="With --min-rate: write the runs and their exact test to this JSON file (a "
    "certificate that validate --certificate checks), once every run completed.",
)
@click.option(
    "--env",
    "env_items",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="Allow a recorded environment name (NAME passes your current value); every name the "
    "report records must be given.",
)
@click.option(
    "--network",
    type=click.Choice(["none", "bridge"]),
    default=None,
    help="Container network of a docker report [default: none].",
)
@click.option(
    "--memory",
    default=None,
    help="Container memory limit incl. swap, e.g. 512m [default: min(2g, RAM/(2*jobs))]; "
    "none lifts it.",
)
@click.option("--cpus", type=float, default=None, help="Container CPU limit.")
@click.option(
    "--pids-limit", default=None, help="Container process limit [default: 512]; none lifts it."
)
@click.option(
    "--tmp-size", default=None, help="Size of the container's /tmp [default: 512m]; or none."
)
@click.option(
    "--work-size", default=None, help="Size of the container's /work [default: 1g]; or none."
)
@click.option(
    "--user",
    default=None,
    help="Numeric UID[:GID] in the container (default 65534); neither may be 0.",
)
@click.option(
    "--fresh-container",
    is_flag=True,
    help="One container per sample (slower; for images without a shell).",
)
@click.option(
    "--home",
    type=click.Choice(["fresh", "inherit"]),
    default=None,
    help="HOME of a host report's runs: fresh (a private empty one per run) or inherit (yours; "
    "read-only where bwrap works). Required when the report recorded execution.home inherit.",
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
    certificate: Path | None,
    env_items: tuple[str, ...],
    network: str | None,
    memory: str | None,
    cpus: float | None,
    pids_limit: str | None,
    tmp_size: str | None,
    work_size: str | None,
    user: str | None,
    fresh_container: bool,
    home: str | None,
    cluster: str | None,
    cluster_tls_ca: Path | None,
    cluster_tls_cert: Path | None,
    cluster_tls_key: Path | None,
    allow_mixed_workers: bool,
) -> None:
    """Rerun REPORT's command on fresh copies of the payload: a new observation, not a proof.

    The boundary is ReproMin's (the host runner as a reduction uses it; Docker's defaults),
    never the report's: only the options above change it. Exit 0 when the pinned failure
    reproduced at least once, 1 when it never did.
    """
    if min_rate is not None and not 0 < min_rate < 1:
        raise UsageError(f"--min-rate {min_rate} must be in (0, 1), e.g. 0.3")
    path = _report_file(report)
    if certificate is not None:
        _certificate_allowed(certificate, min_rate, allow_modified, payload, path)
    config = wiring.config_from_flags(
        cluster, cluster_tls_ca, cluster_tls_cert, cluster_tls_key, allow_mixed_workers, True
    )
    allowed = parse_env(env_items)
    sandbox = ReplaySandbox(
        network, memory, cpus, pids_limit, user, tmp_size, work_size, fresh_container
    )
    data, drift, digest = _checked_for_replay(path, payload, allow_modified)
    if config is None and data["execution"]["backend"] == "docker":
        require("docker", "docker", "replaying a docker report")  # before the plan's checks
    # Samples on a cluster run on its workers: this machine's cores do not cap them there.
    cores = None if config is None else sys.maxsize
    plan = rp.plan_replay(
        data, runs=runs, timeout=timeout, jobs=jobs, sandbox=sandbox, cores=cores, home=home
    )
    _describe(plan, allowed, set(env_items) & set(allowed), cluster=config is not None)
    _require_yes(yes)
    env = rp.replay_environment(plan, allowed)
    rp.replay_home(plan)  # a report that recorded an inherited HOME needs --home
    matches = rp.environment_matches(plan, env)
    _say_digest(matches)
    tree = _read_checked_payload(data, payload, drift)
    runner = (
        rp.make_runner(plan, payload.absolute())
        if config is None
        else rp.cluster_runner(plan, config)
    )
    obs, described = _run_replay(plan, tree, runner, env)
    written = None
    if certificate is not None:
        assert min_rate is not None and digest is not None  # _certificate_allowed; a read report
        environment = cert.environment_record(
            plan, described, cluster=config is not None, environment_verified=matches
        )
        status = _write_certificate(
            certificate, obs, min_rate, plan, data, digest, payload, environment
        )
        written = (
            f"repomin: certificate written: {certificate} (holdout {status}); check it with: "
            f"repomin report validate {shlex.quote(str(path))} --payload "
            f"{shlex.quote(str(payload))} --certificate {shlex.quote(str(certificate))}"
        )
    _observed(obs, min_rate, written)


def _require_yes(yes: bool) -> None:
    """Exit 2 after the description unless ``--yes``: the command is arbitrary shell code."""
    if not yes:
        click.echo(
            "repomin: refusing to run an unsigned command without --yes; review the command, "
            "the boundary and the environment above, then rerun with --yes",
            err=True,
        )
        sys.exit(2)


def _run_replay(
    plan: rp.ReplayPlan, tree: Tree, runner: Runner, env: dict[str, str]
) -> tuple[rp.ReplayObservation, dict[str, Any]]:
    """The runs (the runner closed after them), the runner's description as it stood after
    them, and the first run explained when none reproduced."""
    try:
        described = runner.describe()
        if described.get("backend") == "docker" and "docker_network" in described:
            click.echo(f"repomin: boundary in force: {describe_effective(described)}")
        obs = rp.run_replay(plan, tree, runner, env)
        described = runner.describe()  # after the runs: e.g. a Docker strategy that fell back
    finally:
        runner.close()
    if not obs.reproduced and obs.first_miss is not None:
        from repomin.app.diagnose import describe_run

        for line in describe_run("replay run 1", plan.contract, obs.first_miss):
            click.echo(f"repomin: {line}", err=True)
    return obs, described


def _certificate_allowed(
    path: Path, min_rate: float | None, allow_modified: bool, payload: Path, report: Path
) -> None:
    """``--certificate`` needs the test it records and the payload the report describes; its
    path is checked before anything runs."""
    if min_rate is None:
        raise UsageError(
            "--certificate records the exact test of --min-rate P0: add --min-rate, e.g. "
            "--min-rate 0.3"
        )
    if allow_modified:
        raise UsageError(
            "--certificate certifies the payload the report describes; a modified one cannot "
            "be: drop --allow-modified (or --certificate)"
        )
    cert.check_destination(path, payload=payload, report=report)


def _write_certificate(
    path: Path,
    obs: rp.ReplayObservation,
    min_rate: float,
    plan: rp.ReplayPlan,
    data: dict[str, Any],
    digest: str,
    payload: Path,
    environment: dict[str, Any],
) -> str:
    """The certificate of these runs, written once every run completed (an interruption or a
    backend failure never gets here); returns its holdout status. The payload's fingerprints
    are taken again and must be the tree that ran."""
    artifact = fingerprint(payload)
    ran = data["output"].get("tree_content_sha256")
    if ran is None or artifact.tree_content_sha256 != ran:
        raise ReportError(
            "payload.fingerprint: the payload changed during the replay (or the report "
            "records no fingerprint for it); no certificate was written"
        )
    document = cert.build_certificate(
        samples=obs.samples,
        min_rate=min_rate,
        alpha=_alpha(obs.confidence),
        jobs=plan.jobs,
        artifact=artifact,
        report=data,
        report_sha256=digest,
        environment=environment,
    )
    cert.write_certificate(path, document)
    status: str = document["holdout_certification"]["status"]
    return status


def _alpha(confidence: float) -> float:
    """The exact test's level at the report's confidence (as ``--min-rate`` always used it)."""
    return round(1 - confidence, 12)


def _certificate_line(path: Path, data: dict[str, Any]) -> str:
    """One line about a certificate that validated (its values escaped: a certificate is its
    sender's to write)."""
    hold, env = data["holdout_certification"], data["environment"]
    return _printable(
        f"repomin: certificate valid: {path}: holdout {hold['status']}, "
        f"{hold['passes']}/{hold['planned_runs']} runs reproduced, p >= {hold['min_rate']:g} at "
        f"confidence {hold['confidence']:g} (exact lower bound {hold['lower_bound']:.3f}, "
        f"p-value {hold['p_value']:.4g}); payload {data['payload_fingerprint_mode']} match; "
        f"{env['backend']} backend ({env['sample_isolation']}), {data['created_utc']}, "
        f"ReproMin {data['repomin_version']}"
    )


def _say_digest(matches: bool | None) -> None:
    if matches is False:
        click.echo(
            "repomin: note: the values passed for the recorded environment names differ from "
            "the recorded ones (digest mismatch)"
        )
    elif matches:
        click.echo("repomin: the values passed agree with the recorded digest")


def _read_checked_payload(data: dict[str, Any], payload: Path, drift: bool) -> Tree:
    """The payload read once into memory; exit 2 when it is not the tree that was validated."""
    tree = read_payload(payload)
    hold = data.get("holdout_certification") or {}
    expected = data["output"].get("tree_content_sha256", hold.get("artifact_tree_content_sha256"))
    if not drift and expected is not None and rp.tree_content_sha256(tree) != expected:
        raise ReportError(
            "payload.fingerprint: the payload changed while it was being read; nothing was run"
        )
    return tree


def _checked_for_replay(
    path: Path, payload: Path, allow_modified: bool
) -> tuple[dict[str, Any], bool, str | None]:
    """The validated report, whether the payload drifted (exit 2 when it may not run) and the
    SHA-256 of the report's bytes that were validated."""
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
    return data, bool(drift), result.report_sha256


def _observed(obs: rp.ReplayObservation, min_rate: float | None, written: str | None) -> None:
    """Print the replay's observation (and ``written``: the certificate's line); exit with its
    code."""
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
        + (
            "the report (the certificate is a file of its own)"
            if written
            else "the report or certify anything"
        )
    )
    if min_rate is not None:
        test = holdout_test(obs.passes, obs.runs, min_rate, _alpha(obs.confidence))
        verdict = "supports" if test.certified else "does not support"
        click.echo(
            f"repomin: exact test: {obs.passes}/{obs.runs} {verdict} a rate >= {min_rate:g} "
            f"(p-value {test.p_value:.4g}, needs {test.k_crit} passes)"
        )
        if written is not None:
            click.echo(written)
        sys.exit(0 if test.certified else 1)
    sys.exit(0 if obs.reproduced else 1)


def _describe(
    plan: rp.ReplayPlan, allowed: dict[str, str], passed: set[str], *, cluster: bool
) -> None:
    """Everything the replay would run with, before ``--yes`` is looked at. Text from the report
    is escaped; environment values are never printed."""
    backend = plan.backend
    if plan.docker_image_id is not None:
        backend += f" (image {plan.docker_image_id})"
    click.echo(f"repomin: command: {_printable(plan.command)}")
    capped = (
        f" (the report recorded {plan.capped_jobs}; capped at this machine's cores, pass "
        f"--jobs {plan.capped_jobs} to use it)"
        if plan.capped_jobs is not None
        else ""
    )
    click.echo(
        f"repomin: backend {_printable(backend)}; {plan.runs} run(s), {plan.jobs} at a time"
        f"{capped}, timeout {plan.timeout:g} s; oracle {plan.oracle_mode}"
        + (" with the recorded signature pinned" if plan.contract.signature is not None else "")
    )
    _describe_boundary(plan, cluster=cluster)
    _describe_environment(plan, allowed, passed)
    identity = plan.contract.identity
    if identity is not None:
        for line in identity.describe() or ["none recognised in the original runs"]:
            click.echo(f"repomin: recorded identity: {_printable(line)}")
    else:
        click.echo("repomin: recorded identity: off (only the contract's options decide)")
    spec = plan.contract.spec
    if spec.match is not None and spec.match_scope == "whole_output":
        click.echo("repomin: --match searches the whole output, echoed source included")


def _describe_boundary(plan: rp.ReplayPlan, *, cluster: bool) -> None:
    where = " on every cluster worker" if cluster else ""
    if plan.backend == "host":
        from repomin.runners import sandbox

        problem = sandbox.bwrap_problem()
        if cluster:
            mode = "on every cluster worker: namespace where bwrap works there, else supervisor"
        elif problem is None:
            mode = (
                "namespace (bwrap: private mount and PID namespace; the payload and its sidecar "
                "are hidden at their paths)"
            )
        else:
            mode = f"supervisor (no namespace here: {problem}; the payload stays visible)"
        click.echo(
            f"repomin: boundary: host runner, {mode}, as in a reduction: private TMPDIR, "
            "only the environment below; your user, your files and your network: not a sandbox"
        )
        click.echo(f"repomin: boundary: {_home_text(plan, problem, cluster=cluster)}")
        return
    click.echo(
        f"repomin: boundary: docker image {_printable(str(plan.docker_image_id))} (the recorded "
        f"ID; never pulled){where}"
    )
    for line in describe_replay_sandbox(plan.sandbox):
        click.echo(f"repomin: boundary: {line}")
    recorded = describe_recorded(dict(plan.recorded_docker))
    if recorded:
        click.echo(
            f"repomin: boundary: the report recorded {_printable(recorded)}; not used: only "
            "this command line changes ReproMin's defaults"
        )


def _home_text(plan: rp.ReplayPlan, problem: str | None, *, cluster: bool) -> str:
    """The boundary's HOME line: what the runs get, and what the report recorded."""
    recorded = plan.recorded_home or "fresh"
    if plan.home == "inherit":
        if cluster:
            access = "each worker's own HOME, read-only where bwrap works there"
        elif problem is None:
            access = "read-only (bound in the namespace)"
        else:
            access = "writable (supervisor mode cannot make it read-only)"
        text = f"HOME: yours (--home inherit), {access}"
    elif plan.home == "fresh":
        text = "HOME: a private empty one per run (--home fresh)"
    else:
        text = "HOME: a private empty one per run (default)"
    if recorded == "inherit" and plan.home is None:
        return (
            f"{text}; the report recorded execution.home: inherit (its samples read their "
            "user's HOME): pass --home inherit to give the runs yours, or --home fresh"
        )
    return f"{text}; the report recorded execution.home: {_printable(recorded)}"


def _describe_environment(plan: rp.ReplayPlan, allowed: dict[str, str], passed: set[str]) -> None:
    if not plan.environment_names:
        click.echo("repomin: environment: none recorded (the command gets only the implicit one)")
        return
    click.echo("repomin: environment (values are never printed; only --env lets one through):")
    for name in plan.environment_names:
        state = "set" if name in os.environ else "not set"
        if name in passed:
            where = f"from your environment ({state}), passed by --env {name}"
        elif name in allowed:
            where = "from --env (value given)"
        else:
            where = f"from your environment ({state}); not passed without --env {name}"
        if name in IMPLICIT_ENVIRONMENT:
            where += f"; replaces the run's own {name}"
        click.echo(f"repomin:   {name}: {where}")
