"""``repomin report replay`` (and ``validate`` on a live report) end to end.

One real reduction per module (the same small shell repository and options as the stored
fixture corpus, see ``tests/fixtures/reports/regenerate.py``) feeds the slow tests: the live
report validates, every corpus edit breaks it the same way as the stored base, replay
reproduces, and a payload "fixed" by hand no longer does. The unit-level replay tests (plan,
pinned signature, runner selection) use fake runners and run fast.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner, Result

from repomin.app.selection import read_payload
from repomin.cli.main import cli
from repomin.errors import InfrastructureError, ReportError, UsageError
from repomin.failure import signatures
from repomin.failure.contract import FailureContract
from repomin.report import replay as rp
from repomin.report.fingerprint import fingerprint
from repomin.report.validate import validate_report
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.docker_limits import ReplaySandbox
from repomin.tree import Entry, Tree, materialise

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
TOKEN = "REPOMIN_FIXTURE_TOKEN"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"repomin_fixture_{name}", FIXTURES / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


corpus = _load("corpus")
regenerate = _load("regenerate")


class Reduced:
    def __init__(self, payload: Path, report: Path) -> None:
        self.payload = payload
        self.report = report
        self.data: dict[str, Any] = json.loads(report.read_text())


@pytest.fixture(scope="module")
def reduced(tmp_path_factory: pytest.TempPathFactory) -> Reduced:
    payload, report = regenerate.reduce_real(tmp_path_factory.mktemp("reduction"))
    return Reduced(payload, report)


def replay(reduced: Reduced, *args: str, payload: Path | None = None, **env: str) -> Result:
    """Replay with the recorded name passed from the environment (``--env TOKEN``)."""
    return CliRunner(env={TOKEN: "fixture-value", **env}).invoke(
        cli,
        [
            "report",
            "replay",
            str(reduced.report),
            "--payload",
            str(payload or reduced.payload),
            "--env",
            TOKEN,
            *args,
        ],
    )


def hand_fixed_copy(reduced: Reduced, dest: Path) -> Path:
    """A copy of the payload with the failure marker edited out of every file."""
    shutil.copytree(reduced.payload, dest, symlinks=True)
    edited = 0
    for path in dest.rglob("*"):
        if path.is_file() and not path.is_symlink() and b"FATAL" in path.read_bytes():
            path.write_bytes(path.read_bytes().replace(b"FATAL", b"fine"))
            edited += 1
    assert edited
    return dest


# -- slow: one real reduction ----------------------------------------------------------------


@pytest.mark.slow
def test_live_report_and_payload_validate(reduced: Reduced) -> None:
    result = validate_report(reduced.data, payload=reduced.payload, report_path=reduced.report)
    assert result.valid, result.lines()
    assert result.payload_fingerprint_mode == "exact"
    assert reduced.data["holdout_certification"]["status"] == "certified"


V1_CASES = [c for c in corpus.load_cases() if c.get("base") == "v1.json"]


@pytest.mark.slow
@pytest.mark.parametrize("case", V1_CASES, ids=[c["id"] for c in V1_CASES])
def test_corpus_edits_break_the_live_report_alike(
    case: dict[str, Any], reduced: Reduced, tmp_path: Path
) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(corpus.render(case, base=reduced.data))
    result = CliRunner().invoke(cli, ["report", "validate", str(path)])
    if case["rule"] is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 2
        assert f"repomin: error: {case['rule']}: " in result.stderr


@pytest.mark.slow
def test_replay_refuses_without_yes_and_shows_the_command(reduced: Reduced) -> None:
    result = replay(reduced)
    assert result.exit_code == 2
    assert "repomin: command: sh run.sh" in result.stdout
    assert "rerun with --yes" in result.stderr
    assert "reproduced in" not in result.output


@pytest.mark.slow
def test_replay_reproduces_and_changes_nothing(reduced: Reduced) -> None:
    before_report = reduced.report.read_bytes()
    before_payload = fingerprint(reduced.payload)
    result = replay(reduced, "--yes")
    assert result.exit_code == 0, result.output
    assert "payload fingerprint: exact match" in result.stdout
    runs = reduced.data["execution"]["final_runs"]
    assert f"the failure reproduced in {runs} of {runs} runs" in result.stdout
    assert "new observation" in result.stdout and "certify" in result.stdout
    assert reduced.report.read_bytes() == before_report
    assert fingerprint(reduced.payload) == before_payload


@pytest.mark.slow
def test_replay_on_a_hand_fixed_payload(reduced: Reduced, tmp_path: Path) -> None:
    fixed = hand_fixed_copy(reduced, tmp_path / "fixed")
    refused = replay(reduced, "--yes", payload=fixed)
    assert refused.exit_code == 2
    # "FATAL" -> "fine" changed the size: refused on the cheap facts, before any hashing
    assert "payload.counts: size drift" in refused.stderr
    assert "payload.fingerprint" not in refused.stderr
    assert "--allow-modified" in refused.stderr
    assert "reproduced in" not in refused.output
    result = replay(reduced, "--yes", "--allow-modified", "--runs", "3", payload=fixed)
    assert result.exit_code == 1, result.output
    assert "MODIFIED" in result.stdout
    assert "the failure reproduced in 0 of 3 runs" in result.stdout
    # a replay that never reproduces explains its first run (status, contract, output tail)
    assert "replay run 1 did not reproduce: exit code" in result.stderr


@pytest.mark.slow
def test_replay_of_a_metadata_only_copy_is_content_verified(
    reduced: Reduced, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(reduced.payload, copy, symlinks=True, copy_function=shutil.copyfile)
    for path in copy.rglob("*"):
        if path.is_file():
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    result = replay(reduced, "--yes", "--runs", "1", payload=copy)
    assert result.exit_code == 0, result.output
    assert "content-only match" in result.stdout


@pytest.mark.slow
def test_replay_needs_the_recorded_environment_names(reduced: Reduced) -> None:
    argv = ["report", "replay", str(reduced.report), "--payload", str(reduced.payload), "--yes"]
    not_passed = CliRunner(env={TOKEN: "fixture-value"}).invoke(cli, argv)
    assert not_passed.exit_code == 2
    assert f"environment variable(s) {TOKEN} to its command" in not_passed.stderr
    assert f"add --env {TOKEN}" in not_passed.stderr
    assert "reproduced in" not in not_passed.output
    not_set = CliRunner(env={TOKEN: None}).invoke(cli, [*argv, "--env", TOKEN])
    assert not_set.exit_code == 2
    assert f"--env {TOKEN}: not set in the current environment" in not_set.stderr
    assert "fixture-value" not in not_passed.output + not_set.output


@pytest.mark.slow
def test_replay_notes_a_different_environment_value(reduced: Reduced) -> None:
    result = replay(reduced, "--yes", "--runs", "1", **{TOKEN: "another-value"})
    assert result.exit_code == 0, result.output
    assert "digest mismatch" in result.stdout
    assert "another-value" not in result.output


@pytest.mark.slow
def test_replay_refuses_an_inconsistent_report(reduced: Reduced, tmp_path: Path) -> None:
    data = json.loads(reduced.report.read_text())
    data["accepted_mutations"] += 1
    side = tmp_path / "x.repomin"
    side.mkdir()
    (side / "report.json").write_text(json.dumps(data))
    result = CliRunner(env={TOKEN: "v"}).invoke(
        cli,
        ["report", "replay", str(side), "--payload", str(reduced.payload), "--yes"],
    )
    assert result.exit_code == 2
    assert "accounting.totals" in result.stderr
    assert "reproduced in" not in result.output


# -- fast: plan, contract, runners -----------------------------------------------------------


def v1() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "v1.json").read_text())
    return data


def test_plan_defaults_come_from_the_report() -> None:
    data = v1()
    ex = data["execution"]
    plan = rp.plan_replay(data, cores=ex["jobs"])
    assert plan.command == data["command"]
    assert plan.runs == ex["final_runs"]
    assert plan.jobs == min(ex["jobs"], ex["final_runs"])
    assert plan.capped_jobs is None
    capped = rp.plan_replay(data, runs=8, cores=1)  # never more at once than this machine's cores
    assert (capped.jobs, capped.capped_jobs) == (1, ex["jobs"])
    assert rp.plan_replay(data, runs=8, jobs=2, cores=1).jobs == 2  # unless --jobs says so
    assert plan.timeout == ex["timeout_seconds"]
    assert plan.environment_names == (TOKEN,)
    assert plan.contract.spec.match == data["failure_match"]
    assert plan.contract.signature is None
    overridden = rp.plan_replay(data, runs=7, timeout=2.5, jobs=1)
    assert (overridden.runs, overridden.timeout, overridden.jobs) == (7, 2.5, 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"runs": 0}, "--runs 0"), ({"timeout": 0.0}, "--timeout 0.0"), ({"jobs": 0}, "--jobs 0")],
)
def test_plan_rejects_bad_overrides(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        rp.plan_replay(v1(), **kwargs)


def test_replay_environment_takes_only_what_env_allowed() -> None:
    plan = rp.plan_replay(v1())
    assert rp.replay_environment(plan, {TOKEN: "x"}) == {TOKEN: "x"}
    with pytest.raises(UsageError) as info:
        rp.replay_environment(plan, {})
    assert f"--env {TOKEN}" in info.value.message
    with pytest.raises(UsageError, match="does not record"):
        rp.replay_environment(plan, {TOKEN: "x", "OTHER": "y"})


class FakeRunner:
    backend = "fake"

    def __init__(self, outcomes: list[Outcome]) -> None:
        self.outcomes = list(outcomes)
        self.requests: list[RunRequest] = []
        self.trees: list[Tree] = []

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        self.requests.append(request)
        self.trees.append(tree)
        return self.outcomes.pop(0)

    def describe(self) -> dict[str, Any]:
        return {"backend": "fake"}

    def close(self) -> None:
        pass


class EchoMode:
    """A signature mode whose identity is the first stdout line."""

    flag = "process_failure"
    report_field = "process_failure_signature"

    def extract(self, outcome: Outcome) -> dict[str, Any] | None:
        line = outcome.stdout.decode().splitlines()[0] if outcome.stdout else ""
        return {"kind": "exit_code", "exit_code": outcome.exit_code or 0, "line": line}

    def matches(self, pinned: dict[str, Any], observed: dict[str, Any]) -> bool:
        return pinned.get("line") == observed.get("line")


@pytest.fixture
def echo_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(signatures.SIGNATURE_MODES, "process_failure", EchoMode())

    def never(self: FailureContract, outcomes: list[Outcome]) -> FailureContract:
        raise AssertionError("replay must never learn a signature")

    monkeypatch.setattr(FailureContract, "learn", never)
    yield


def test_replay_pins_the_recorded_signature(echo_mode: None) -> None:
    data = v1()
    data["failure_spec"].update(process_failure=True, match=None)
    data["failure_match"] = None
    data["process_failure_signature"] = {"kind": "exit_code", "exit_code": 3, "line": "A"}
    plan = rp.plan_replay(data, runs=4, jobs=1)
    assert plan.contract.signature == data["process_failure_signature"]
    runner = FakeRunner(
        [
            Outcome(exit_code=3, stdout=b"A\n"),
            Outcome(exit_code=3, stdout=b"B\n"),  # a different failure never counts
            Outcome(exit_code=3, stdout=b"A\n", timed_out=True),  # nor does a timeout
            Outcome(exit_code=3, stdout=b"A\n"),
        ]
    )
    tree = Tree.of({"f": Entry("file", b"x")})
    obs = rp.run_replay(plan, tree, runner, {TOKEN: "v"})
    assert (obs.runs, obs.passes, obs.timeouts) == (4, 2, 1)
    assert obs.reproduced and obs.rate == 0.5
    assert 0 < obs.lower_bound < 0.5 < obs.upper_bound < 1
    assert [r.env for r in runner.requests] == [{TOKEN: "v"}] * 4
    assert {r.command for r in runner.requests} == {data["command"]}
    assert len({r.sample_id for r in runner.requests}) == 4


def test_missing_recorded_signature_is_refused(echo_mode: None) -> None:
    data = v1()
    data["failure_spec"]["process_failure"] = True
    with pytest.raises(ReportError, match="records no process_failure_signature"):
        rp.plan_replay(data)


def test_legacy_contract_and_a_report_without_one() -> None:
    data = json.loads((FIXTURES / "legacy.json").read_text())
    assert rp.pinned_contract(data).spec.oracle_mode == "match"
    data["failure_match"] = None
    with pytest.raises(ReportError, match="no failure contract"):
        rp.pinned_contract(data)


def test_infrastructure_errors_are_retried_then_raised() -> None:
    plan = rp.plan_replay(v1(), runs=1, jobs=1)
    flaky = FakeRunner(
        [Outcome(exit_code=None, infrastructure_error="daemon gone")] * 2
        + [Outcome(exit_code=1, stdout=b"FATAL: widget overflow")]
    )
    tree = Tree.of({"f": Entry("file", b"x")})
    assert rp.run_replay(plan, tree, flaky, {}).passes == 1
    dead = FakeRunner([Outcome(exit_code=None, infrastructure_error="daemon gone")] * 3)
    with pytest.raises(InfrastructureError, match="failed 3 times"):
        rp.run_replay(plan, tree, dead, {})


def test_tree_content_fingerprint_matches_the_disk(tmp_path: Path) -> None:
    tree = Tree.of(
        {
            "a.txt": Entry("file", b"alpha\n", 0o644),
            "d/e/f.sh": Entry("file", b"echo\n", 0o755),
            "d/link": Entry("symlink", b"e/f.sh", 0o777),
            "empty": Entry("dir", b"", 0o755),
            "z-\u00e9.txt": Entry("file", b"", 0o600),
        }
    )
    root = tmp_path / "p"
    root.mkdir()
    materialise(tree, root)
    assert rp.tree_content_sha256(tree) == fingerprint(root).tree_content_sha256
    assert rp.tree_content_sha256(read_payload(root)) == fingerprint(root).tree_content_sha256


class FakeDockerRunner:
    made: ClassVar[list[dict[str, Any]]] = []
    resolves_to: ClassVar[str | None] = None

    def __init__(self, **kwargs: Any) -> None:
        FakeDockerRunner.made.append(kwargs)
        self.image_id = FakeDockerRunner.resolves_to or kwargs["image"]
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_docker_replay_uses_the_recorded_image_and_its_own_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The image is the report's (its immutable ID); the boundary never is: ReproMin's
    defaults, or the replay's own options. (The real engine: tests/docker/test_replay_boundary.)"""
    module = ModuleType("repomin.runners.docker")
    module.DockerRunner = FakeDockerRunner  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "repomin.runners.docker", module)
    FakeDockerRunner.made = []
    data = v1()
    image = "sha256:" + "ab" * 32
    data["execution"].update(
        backend="docker",
        docker_image="repomin-test/busybox:1",
        docker_image_id=image,
        docker_network="bridge",
        docker_memory=None,
        docker_cpus=1.5,
        docker_pids_limit=None,
        docker_user="65534:0",
        docker_strategy="container-per-sample",
    )
    assert validate_report(data).valid
    plan = rp.plan_replay(data, jobs=1)
    rp.make_runner(plan)
    (kwargs,) = FakeDockerRunner.made
    assert kwargs["image"] == image  # the immutable ID, never the mutable reference
    assert kwargs["pull"] is False
    assert (kwargs["network"], kwargs["memory"], kwargs["cpus"]) == ("none", None, None)
    assert (kwargs["pids_limit"], kwargs["user"]) == (None, None)  # None: ReproMin's default
    assert kwargs["fresh_container"] is False
    FakeDockerRunner.made = []
    box = ReplaySandbox(network="bridge", pids_limit="none", fresh_container=True)
    rp.make_runner(rp.plan_replay(data, jobs=1, sandbox=box))
    (kwargs,) = FakeDockerRunner.made
    assert (kwargs["network"], kwargs["pids_limit"], kwargs["fresh_container"]) == (
        "bridge",
        "none",
        True,
    )
    FakeDockerRunner.resolves_to = "sha256:" + "cd" * 32
    try:
        with pytest.raises(ReportError, match="refusing to replay on a different image"):
            rp.make_runner(plan)
    finally:
        FakeDockerRunner.resolves_to = None


def test_docker_report_without_an_image_id_is_invalid() -> None:
    data = v1()
    data["execution"]["backend"] = "docker"
    assert validate_report(data).rules() == {"execution.docker"}


PYTEST_FAILURE = (
    b"=================================== FAILURES ===================================\n"
    b"__________________________________ test_total __________________________________\n"
    b"\n"
    b">   assert total == 1.26, 'invoice total mismatch'\n"
    b"E   AssertionError: invoice total mismatch\n"
    b"E   assert 1.25 == 1.26\n"
    b"\n"
    b"tests/test_a.py:3: AssertionError\n"
    b"=========================== short test summary info ============================\n"
    b"FAILED tests/test_a.py::test_total - AssertionError: invoice total mismatch\n"
)


def test_replay_checks_the_recorded_identity_and_never_relearns_it(echo_mode: None) -> None:
    data = v1()
    data["failure_match"] = "invoice total mismatch"
    data["failure_spec"].update(
        match="invoice total mismatch", identity="auto", match_scope="no_echoed_source"
    )
    value = {
        "runner": "pytest",
        "test": "tests/test_a.py::test_total",
        "exception_class": "AssertionError",
        "message": "invoice total mismatch / assert 1.25 == 1.26",
        "file": "tests/test_a.py",
    }
    data["failure_identity"] = {"facets": {"python": [value]}, "notes": []}
    assert validate_report(data).problems == ()
    plan = rp.plan_replay(data, runs=3, jobs=1)
    assert plan.contract.identity is not None
    other_values = PYTEST_FAILURE.replace(b"assert 1.25 == 1.26", b"assert None == 1.26")
    name_error = (
        PYTEST_FAILURE.replace(b"AssertionError: invoice total mismatch", b"NameError: name 'x'")
        .replace(b"E   assert 1.25 == 1.26\n", b"")
        .replace(b"AssertionError\n", b"NameError\n")
    )
    runner = FakeRunner(
        [
            Outcome(exit_code=1, stdout=PYTEST_FAILURE),
            Outcome(exit_code=1, stdout=other_values),  # the bug's values are gone
            Outcome(exit_code=1, stdout=name_error),  # the message only in echoed source
        ]
    )
    obs = rp.run_replay(plan, Tree.of({"f": Entry("file", b"x")}), runner, {TOKEN: "v"})
    assert (obs.runs, obs.passes) == (3, 1)


def test_replay_refuses_an_identity_it_cannot_check() -> None:
    data = v1()
    data["failure_spec"]["identity"] = "auto"
    with pytest.raises(ReportError, match="records no failure_identity"):
        rp.pinned_contract(data)
    data["failure_identity"] = {"facets": {"cobol": [{"abend": "S0C7"}]}, "notes": []}
    with pytest.raises(ReportError, match="does not know"):
        rp.pinned_contract(data)
