"""Replay: rerun a report's recorded command on fresh copies of its payload, as a new observation.

A report arrives with a bug report, so everything in it is its sender's to write. The plan
(:func:`plan_replay`) takes from a validated report what describes the failure: the command,
the recorded backend and Docker image ID, the timeout, the environment *names* and the failure
contract with its *pinned* signature -- replay never learns a signature anew, so a different
failure never counts. The boundary is never taken from it: the host runner is the one a
reduction uses (the payload hidden at its path as SRC is), and the Docker network, limits, user
and strategy are ReproMin's defaults unless the replay's own command line changes them
(:class:`~repomin.runners.docker_limits.ReplaySandbox`); the recorded concurrency is capped at
this machine's cores. An environment name gets a value only from ``--env`` (the caller's own
value with ``--env NAME``, another with ``--env NAME=VALUE``): a name the report lists and the
caller did not pass refuses the replay. HOME is the same: a host replay gives every run a
private empty HOME unless its own ``--home inherit`` gives the caller's, and a report that
recorded ``execution.home: inherit`` is refused until ``--home`` says which
(:func:`replay_home`). The payload is read once into an
in-memory tree whose content fingerprint must equal the one that was validated (so the bytes
that run are the bytes that were checked); every run gets its own fresh copy from the runner.
The original report is never written. The result (:class:`ReplayObservation`) is a count of
reproductions with exact one-sided bounds, and one holdout sample record per run (the format of
a report's holdout samples): evidence about this environment today. Written down with its exact
test, it is a certificate (:mod:`repomin.report.certificate`), a file of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.cluster import wiring
from repomin.cluster.wiring import ClusterConfig
from repomin.errors import InfrastructureError, ReportError, UsageError
from repomin.failure.contract import SIGNATURE_FLAGS, FailureContract, FailureSpec
from repomin.failure.facets import FACETS
from repomin.failure.identity import Identity
from repomin.report.build import environment_verifies
from repomin.report.fingerprint import CONTENT_POLICY
from repomin.runners.base import Outcome, Runner, RunRequest
from repomin.runners.docker_limits import RECORDED_SETTINGS, ReplaySandbox, replay_settings
from repomin.runners.extras import require
from repomin.sampling import stats
from repomin.sampling.holdout import sample_record
from repomin.sampling.parallel import map_samples
from repomin.tree import Tree

log = logging.getLogger(__name__)

#: Infrastructure errors (never a verdict) are retried this many times per run.
INFRA_RETRIES = 3
#: Fallback confidence for the observation's bounds when the report records none.
DEFAULT_CONFIDENCE = 0.95


#: The ``execution`` fields that say how ``environment_sha256`` was made.
_DIGEST_FIELDS = (
    "environment_sha256",
    "environment_digest_scheme",
    "environment_digest_salt",
    "environment_digest_parameters",
)


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    """What a replay runs: the report's command, contract and names; the replay's boundary."""

    command: str
    contract: FailureContract
    environment_names: tuple[str, ...]
    #: ``environment_sha256`` and the fields that say how it was made (as recorded).
    environment_digest: tuple[tuple[str, Any], ...]
    timeout: float
    runs: int
    jobs: int
    backend: str
    docker_image_id: str | None
    confidence: float
    #: The Docker boundary: ReproMin's defaults unless this replay's command line changed them.
    sandbox: ReplaySandbox = ReplaySandbox()
    #: What the report recorded for its Docker boundary: shown, never used.
    recorded_docker: tuple[tuple[str, Any], ...] = ()
    #: The report's ``jobs`` when it was capped at this machine's cores (else None).
    capped_jobs: int | None = None
    #: The replay's ``--home`` (None: not given, a private empty HOME per run).
    home: str | None = None
    #: What the report recorded as ``execution.home`` (None: not recorded, i.e. fresh).
    recorded_home: str | None = None

    @property
    def runs_home(self) -> str:
        """The HOME the runs get: ``fresh`` unless this replay's ``--home inherit``."""
        return self.home or "fresh"

    @property
    def oracle_mode(self) -> str:
        return self.contract.spec.oracle_mode

    @property
    def docker_settings(self) -> tuple[tuple[str, Any], ...]:
        """The replay's Docker boundary under the report's field names (``None``: ReproMin's
        default), for the cluster's runner spec."""
        box = self.sandbox
        return (
            ("docker_network", box.network or "none"),
            ("docker_memory", box.memory),
            ("docker_cpus", box.cpus),
            ("docker_pids_limit", box.pids_limit),
            ("docker_user", box.user),
            ("docker_tmp_size", box.tmp_size),
            ("docker_work_size", box.work_size),
            ("docker_strategy", "container-per-sample" if box.fresh_container else None),
        )


@dataclass(frozen=True, slots=True)
class ReplayObservation:
    """``passes`` of ``runs`` reproduced the pinned failure (timeouts never do)."""

    runs: int
    passes: int
    timeouts: int
    resource_exhausted: int
    confidence: float
    #: The first run that did not reproduce, explained when none did (``repomin.app.diagnose``).
    first_miss: Outcome | None = None
    #: One holdout sample record per run, in run order (``index`` 1..runs): what a certificate
    #: records (:func:`repomin.sampling.holdout.sample_record`).
    samples: tuple[dict[str, Any], ...] = ()

    @property
    def reproduced(self) -> bool:
        return self.passes > 0

    @property
    def rate(self) -> float:
        return self.passes / self.runs if self.runs else 0.0

    @property
    def lower_bound(self) -> float:
        return stats.lower_bound(self.passes, self.runs, self.confidence)

    @property
    def upper_bound(self) -> float:
        return stats.upper_bound(self.passes, self.runs, self.confidence)


def plan_replay(
    report: Mapping[str, Any],
    *,
    runs: int | None = None,
    timeout: float | None = None,
    jobs: int | None = None,
    sandbox: ReplaySandbox | None = None,
    cores: int | None = None,
    home: str | None = None,
) -> ReplayPlan:
    """The plan for a *validated* report. Defaults: the report's final-run count (at least 1),
    its recorded timeout, and its recorded concurrency (flake rates depend on load) capped at
    ``cores`` (this machine's, the default ``--jobs`` of a reduction). ``sandbox``: the
    replay's own Docker options (checked here: exit 2 before anything runs); ``home``: its
    ``--home`` (``inherit`` only for a host report)."""
    execution: Mapping[str, Any] = report["execution"]
    if runs is not None and runs < 1:
        raise UsageError(f"--runs {runs} must be at least 1")
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout {timeout} must be positive (seconds)")
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs} must be at least 1")
    backend = execution["backend"]
    sandbox = sandbox or ReplaySandbox()
    if backend == "docker":
        replay_settings(sandbox)  # bad values and root's uid or gid: exit 2 now
    elif sandbox.given():
        raise UsageError(
            f"{'/'.join(sandbox.given())} set the boundary of a docker report; this report's "
            f"backend is {backend}: drop them"
        )
    if home not in (None, "fresh", "inherit"):
        raise UsageError(f"--home {home!r} must be fresh or inherit")
    if home == "inherit" and backend != "host":
        raise UsageError(
            f"--home inherit is for a host report; this report's backend is {backend} (a "
            "container has its own HOME): drop --home"
        )
    recorded_home = execution.get("home")
    recorded = execution.get("final_planned_runs", execution.get("final_runs", 1))
    planned_runs = runs if runs is not None else max(1, int(recorded))
    recorded_jobs = int(execution.get("jobs", 1))
    limit = max(1, cores if cores is not None else (os.cpu_count() or 1))
    capped = jobs is None and min(recorded_jobs, planned_runs) > limit
    chosen = jobs if jobs is not None else min(recorded_jobs, limit)
    image = execution.get("docker_image_id")
    return ReplayPlan(
        command=report["command"],
        contract=pinned_contract(report),
        environment_names=tuple(execution["environment_names"]),
        environment_digest=tuple((k, execution[k]) for k in _DIGEST_FIELDS if k in execution),
        timeout=timeout if timeout is not None else float(execution["timeout_seconds"]),
        runs=planned_runs,
        jobs=max(1, min(chosen, planned_runs)),
        backend=backend,
        docker_image_id=image if isinstance(image, str) else None,
        confidence=float(execution.get("confidence", DEFAULT_CONFIDENCE)),
        sandbox=sandbox,
        recorded_docker=tuple(
            (key, value) for key, value in execution.items() if key in RECORDED_SETTINGS
        ),
        capped_jobs=recorded_jobs if capped else None,
        home=home,
        recorded_home=recorded_home if isinstance(recorded_home, str) else None,
    )


def pinned_contract(report: Mapping[str, Any]) -> FailureContract:
    """The recorded failure contract with its recorded signature pinned (never relearnt)."""
    raw = report.get("failure_spec")
    if isinstance(raw, Mapping):
        spec = FailureSpec.from_json(dict(raw))
    else:  # legacy: the match and at most one recorded signature are all there is
        flags = [flag for flag in SIGNATURE_FLAGS if f"{flag}_signature" in report]
        if report.get("failure_match") is None and not flags:
            raise ReportError(
                "the report records no failure contract (no failure_spec, failure_match or "
                "signature); there is nothing to replay against"
            )
        spec = FailureSpec(
            match=report.get("failure_match"),
            java_exception="java_exception" in flags,
            python_exception="python_exception" in flags,
            process_failure="process_failure" in flags,
            identity="off",
            match_scope="whole_output",
        )
    identity = _pinned_identity(report, spec)
    contract = FailureContract(spec, None, identity)
    mode = contract.mode  # UsageError when this build lacks the signature mode
    if mode is None:
        return contract
    signature = report.get(mode.report_field)
    if not isinstance(signature, dict):
        raise ReportError(f"the report selects {mode.flag} but records no {mode.report_field}")
    return FailureContract(spec, dict(signature), identity)


def _pinned_identity(report: Mapping[str, Any], spec: FailureSpec) -> Identity | None:
    """The recorded identity (``--identity auto``), never relearnt from this replay's output."""
    if spec.identity == "off":
        return None
    recorded = report.get("failure_identity")
    if not isinstance(recorded, Mapping):
        raise ReportError(
            "the report's failure_spec pins an identity but records no failure_identity"
        )
    identity = Identity.from_json(recorded)
    unknown = sorted(set(identity.facets) - set(FACETS))
    if unknown:
        raise ReportError(
            f"the report pins identity facets this build does not know ({', '.join(unknown)}); "
            "replay it with the ReproMin version that wrote it"
        )
    return identity


def replay_home(plan: ReplayPlan) -> str:
    """The HOME the runs get. A report whose samples read the user's HOME (``execution.home:
    inherit``) is refused without ``--home``: replay never hands over the caller's HOME on a
    report's say-so, and a fresh one would not reproduce what the report describes."""
    if plan.recorded_home == "inherit" and plan.home is None:
        raise UsageError(
            "the report's samples read their user's HOME (execution.home: inherit); pass --home "
            "inherit to give the runs yours (read-only where bwrap works), or --home fresh for a "
            "private empty one"
        )
    return plan.runs_home


def replay_environment(plan: ReplayPlan, allowed: Mapping[str, str]) -> dict[str, str]:
    """The recorded names with the values ``--env`` gave (``allowed``, parsed as ``reduce``
    parses it). A recorded name not passed is refused -- its value would leave the caller's
    shell on the report's say-so -- and so is a name the report does not record."""
    extra = sorted(set(allowed) - set(plan.environment_names))
    if extra:
        raise UsageError(
            f"--env {', '.join(extra)}: the report does not record "
            f"{'this name' if len(extra) == 1 else 'these names'}; replay passes only the "
            "names it recorded"
        )
    missing = [name for name in plan.environment_names if name not in allowed]
    if missing:
        flags = " ".join(f"--env {name}" for name in missing)
        raise UsageError(
            f"the report passes environment variable(s) {', '.join(missing)} to its command; "
            f"nothing leaves your environment unless you allow it: add {flags} (your value) "
            "or --env NAME=VALUE (another value), then rerun"
        )
    return {name: allowed[name] for name in plan.environment_names}


def environment_matches(plan: ReplayPlan, env: Mapping[str, str]) -> bool | None:
    """Whether ``env`` hashes to the recorded digest by the report's scheme (None when there is
    nothing to compare)."""
    return environment_verifies(dict(plan.environment_digest), env)


def tree_content_sha256(tree: Tree) -> str:
    """``tree-content-sha256-v1`` of an in-memory tree, equal to :func:`fingerprint` on disk."""
    records: list[tuple[bytes, bytes]] = []
    for path in sorted(tree.directories() | set(tree.entries)):
        entry = tree.entries.get(path)
        if entry is None or entry.kind == "dir":
            kind, digest = "dir", ""
        elif entry.kind == "symlink":
            kind, digest = "symlink", os.fsdecode(entry.data)
        else:
            kind, digest = "file", hashlib.sha256(entry.data).hexdigest()
        line = (json.dumps([path, kind, digest]) + "\n").encode()
        records.append((os.fsencode(path), line))
    h = hashlib.sha256(CONTENT_POLICY.encode() + b"\n")
    for _key, line in sorted(records):
        h.update(line)
    return h.hexdigest()


def make_runner(plan: ReplayPlan, payload: Path | None = None) -> Runner:
    """The recorded backend with ReproMin's boundary: the host runner as a reduction makes it
    (``payload`` and its sidecar hidden at their paths, as SRC and OUTPUT are), or the Docker
    runner on the recorded image ID (nothing is pulled or substituted) with the replay's
    sandbox -- the defaults unless its command line changed them."""
    if plan.backend == "host":
        from repomin.runners.host import HostRunner

        home = replay_home(plan)
        if payload is None:
            return HostRunner(home=home)
        sidecar = payload.with_name(payload.name + ".repomin")
        return HostRunner(source=payload, hide=(sidecar,), home=home)
    if plan.backend != "docker":
        raise ReportError(f"unknown backend {plan.backend!r}; cannot replay")
    if plan.docker_image_id is None:
        raise ReportError("the docker report records no docker_image_id; cannot replay it")
    require("docker", "docker", "replaying a docker report")
    from repomin.runners.docker import DockerRunner

    runner = DockerRunner(
        image=plan.docker_image_id,
        **replay_settings(plan.sandbox),
        pull=False,
        jobs=plan.jobs,
        session_label=f"replay-{secrets.token_hex(6)}",
    )
    if runner.image_id != plan.docker_image_id:
        runner.close()
        raise ReportError(
            f"the engine resolved {plan.docker_image_id} to {runner.image_id}; refusing to "
            "replay on a different image"
        )
    return runner


def cluster_runner(plan: ReplayPlan, config: ClusterConfig) -> Runner:
    """``replay --cluster``: the recorded backend on every worker (Docker: the recorded image
    ID, never pulled; refused when the workers resolve it to another image)."""
    if plan.backend == "host":
        return wiring.make_runner(config, wiring.host_spec((), home=plan.runs_home))
    if plan.backend != "docker" or plan.docker_image_id is None:
        raise ReportError(f"cannot replay backend {plan.backend!r} without an image ID")
    settings = dict(plan.docker_settings)
    options = {
        "image": plan.docker_image_id,
        "network": str(settings.get("docker_network", "none")),
        "memory": settings.get("docker_memory"),
        "cpus": settings.get("docker_cpus"),
        "pids_limit": settings.get("docker_pids_limit"),
        "tmp_size": settings.get("docker_tmp_size"),
        "work_size": settings.get("docker_work_size"),
        "user": settings.get("docker_user"),
        "fresh_container": settings.get("docker_strategy") == "container-per-sample",
        "pull": False,
    }
    runner = wiring.make_runner(config, wiring.docker_spec(options))
    if runner.describe().get("docker_image_id") != plan.docker_image_id:
        runner.close()
        raise ReportError(
            f"the workers resolved {plan.docker_image_id} to another image; refusing to replay"
        )
    return runner


def run_replay(
    plan: ReplayPlan, tree: Tree, runner: Runner, env: Mapping[str, str]
) -> ReplayObservation:
    """``plan.runs`` runs of the command, each on a fresh copy of ``tree`` made by ``runner``."""

    def one(i: int) -> Outcome:
        request = RunRequest(plan.command, dict(env), plan.timeout, f"replay-{i + 1}")
        for attempt in range(1, INFRA_RETRIES + 1):
            outcome = runner.run(tree, request)
            if outcome.infrastructure_error is None:
                return outcome
            log.warning("replay run %d: backend error (%s)", i + 1, outcome.infrastructure_error)
            if attempt == INFRA_RETRIES:
                raise InfrastructureError(
                    f"the {plan.backend} backend failed {INFRA_RETRIES} times in a row "
                    f"({outcome.infrastructure_error}); nothing was concluded"
                )
        raise AssertionError("unreachable")  # pragma: no cover

    outcomes = map_samples(one, plan.runs, plan.jobs)
    reproduced = [plan.contract.reproduces(o) for o in outcomes]
    return ReplayObservation(
        runs=plan.runs,
        passes=sum(reproduced),
        timeouts=sum(1 for o in outcomes if o.timed_out),
        resource_exhausted=sum(1 for o in outcomes if o.resource_exhausted),
        confidence=plan.confidence,
        first_miss=next((o for o, hit in zip(outcomes, reproduced, strict=True) if not hit), None),
        samples=tuple(
            sample_record(i + 1, o, hit)
            for i, (o, hit) in enumerate(zip(outcomes, reproduced, strict=True))
        ),
    )
