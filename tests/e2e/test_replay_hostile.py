"""A hostile report replayed on the host runner: what ``repomin report replay`` takes from it.

The report comes with the bug report, so everything in it is the attacker's: the command, the
environment names, the recorded concurrency. One real host reduction per module gives a report
and its payload; each test edits a copy of the report the way an attacker would and replays it
with the real CLI and the real host runner. Replay must rebuild the boundary a reduction uses
(the payload hidden at its path like SRC in a reduction), pass only the environment names the
caller allowed with ``--env``, cap the recorded concurrency, and print all of it before
``--yes``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repomin.cli.main import cli
from repomin.report.fingerprint import fingerprint
from repomin.runners import sandbox

pytestmark = pytest.mark.slow

SECRET_NAME = "REPOMIN_HOSTILE_SECRET"
SECRET = "s3cret-from-the-callers-shell"
PIN_NAME = "REPOMIN_TEST_PIN"
PIN = "4821"
#: Never prints the failure's marker, so replay explains its first run with the output's tail.
PROBE = f'echo "LEAK=${{{SECRET_NAME}-unset}}"; exit 0'


class Reduced:
    def __init__(self, payload: Path, report: Path) -> None:
        self.payload = payload
        self.report = report
        self.data: dict[str, Any] = json.loads(report.read_text())


@pytest.fixture(scope="module")
def reduced(tmp_path_factory: pytest.TempPathFactory) -> Reduced:
    root = tmp_path_factory.mktemp("hostile")
    src, out = root / "src", root / "out"
    src.mkdir()
    (src / "run.sh").write_text('echo "BUG: $REPOMIN_TEST_PIN"\nexit 1\n')
    for i in range(3):
        (src / f"other{i}.txt").write_text(f"other {i}\n")
    result = CliRunner().invoke(
        cli,
        [
            "reduce", str(src), "-o", str(out), "--command", "sh run.sh", "--match", "BUG",
            "--env", f"{PIN_NAME}={PIN}", "--baseline-runs", "2", "--final-runs", "2",
            "--passes", "files", "--user-shell-runs", "0", "--no-session", "-j", "1", "-q",
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return Reduced(out, root / "out.repomin" / "report.json")


def tampered(reduced: Reduced, tmp_path: Path, **execution: Any) -> Path:
    """A copy of the report with ``execution`` fields (and ``command``) replaced."""
    data = json.loads(json.dumps(reduced.data))
    command = execution.pop("command", None)
    if command is not None:
        data["command"] = command
    data["execution"].update(execution)
    path = tmp_path / "evil.repomin" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    return path


def replay(report: Path, payload: Path, *args: str, **env: str | None) -> Result:
    return CliRunner(env={SECRET_NAME: SECRET, **env}).invoke(
        cli, ["report", "replay", str(report), "--payload", str(payload), *args]
    )


def test_validate_accepts_the_tampered_report(reduced: Reduced, tmp_path: Path) -> None:
    """The edits below are all schema-valid: validate cannot be what stops them."""
    report = tampered(
        reduced, tmp_path, command=PROBE, environment_names=[PIN_NAME, SECRET_NAME], jobs=64
    )
    result = CliRunner().invoke(
        cli, ["report", "validate", str(report), "--payload", str(reduced.payload)]
    )
    assert result.exit_code == 0, result.output


def test_a_name_from_the_report_takes_no_value_from_your_shell_without_env(
    reduced: Reduced, tmp_path: Path
) -> None:
    report = tampered(reduced, tmp_path, command=PROBE, environment_names=[SECRET_NAME])
    result = replay(report, reduced.payload, "--yes", "--runs", "1")
    assert SECRET not in result.output
    assert result.exit_code == 2, result.output
    assert "reproduced in" not in result.output
    # shown before anything runs: the name, where its value would come from, that it is set
    assert f"{SECRET_NAME}: from your environment (set)" in result.stdout
    assert f"--env {SECRET_NAME}" in result.stderr


def test_only_env_decides_what_reaches_the_sample(reduced: Reduced, tmp_path: Path) -> None:
    report = tampered(reduced, tmp_path, command=PROBE, environment_names=[PIN_NAME, SECRET_NAME])
    given = replay(
        report, reduced.payload, "--yes", "--runs", "1",
        "--env", f"{PIN_NAME}={PIN}", "--env", f"{SECRET_NAME}=placeholder",
    )  # fmt: skip
    assert given.exit_code == 1, given.output  # the probe never reproduces: its tail is shown
    assert "LEAK=placeholder" in given.stderr
    assert SECRET not in given.output
    assert f"{SECRET_NAME}: from --env (value given)" in given.stdout
    passed = replay(
        report, reduced.payload, "--yes", "--runs", "1",
        "--env", f"{PIN_NAME}={PIN}", "--env", SECRET_NAME,
    )  # fmt: skip
    assert passed.exit_code == 1, passed.output
    assert f"{SECRET_NAME}: from your environment (set), passed by --env" in passed.stdout
    assert f"LEAK={SECRET}" in passed.stderr  # explicitly allowed: the caller's choice


def test_env_names_the_report_does_not_record_are_refused(reduced: Reduced, tmp_path: Path) -> None:
    result = replay(
        reduced.report, reduced.payload, "--yes", "--env", f"{PIN_NAME}={PIN}",
        "--env", "REPOMIN_NOT_RECORDED=1",
    )  # fmt: skip
    assert result.exit_code == 2
    assert "REPOMIN_NOT_RECORDED" in result.stderr and "does not record" in result.stderr
    assert "reproduced in" not in result.output


def test_replay_with_the_recorded_value_reproduces_and_the_digest_agrees(
    reduced: Reduced,
) -> None:
    ok = replay(reduced.report, reduced.payload, "--yes", "--runs", "1", "--env", PIN_NAME,
                **{PIN_NAME: PIN})  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "digest mismatch" not in ok.output
    assert "agree with the recorded digest" in ok.stdout
    other = replay(reduced.report, reduced.payload, "--yes", "--runs", "1",
                   "--env", f"{PIN_NAME}=1234")  # fmt: skip
    assert other.exit_code == 0, other.output
    assert "digest mismatch" in other.stdout
    assert "1234" not in other.stdout.replace("--env", "")  # values are never printed


@pytest.mark.skipif(sandbox.bwrap_problem() is not None, reason="no sample namespace here")
def test_a_sample_cannot_write_the_payload_at_its_path(reduced: Reduced, tmp_path: Path) -> None:
    """As SRC in a reduction, the payload is hidden from the samples at its own path."""
    payload = tmp_path / "payload"
    shutil.copytree(reduced.payload, payload, symlinks=True)  # copy2: mtimes kept
    target = payload / "run.sh"
    command = f"echo 'echo pwned' > {target}; cat {target}; exit 0"
    report = tampered(reduced, tmp_path, command=command, environment_names=[])
    before = fingerprint(payload)
    result = replay(report, payload, "--yes", "--runs", "1")
    assert result.exit_code == 1, result.output
    assert fingerprint(payload) == before
    assert "pwned" not in target.read_text()
    assert "boundary: host runner, namespace" in result.stdout


def test_recorded_concurrency_is_capped_at_this_machines_cores(
    reduced: Reduced, tmp_path: Path
) -> None:
    report = tampered(reduced, tmp_path, jobs=64)
    cores = os.cpu_count() or 1
    result = replay(report, reduced.payload, "--runs", "64")  # no --yes: only the plan is shown
    assert result.exit_code == 2
    assert f"64 run(s), {min(cores, 64)} at a time" in result.stdout
    if cores < 64:
        assert "the report recorded 64" in result.stdout
    explicit = replay(report, reduced.payload, "--runs", "64", "--jobs", "64")
    assert "64 run(s), 64 at a time" in explicit.stdout


def test_the_host_boundary_is_printed_before_yes(reduced: Reduced) -> None:
    result = replay(reduced.report, reduced.payload)
    assert result.exit_code == 2
    out = result.stdout
    assert "boundary: host runner" in out and "not a sandbox" in out
    assert f"{PIN_NAME}: " in out


def test_docker_settings_need_a_docker_report(reduced: Reduced) -> None:
    result = replay(reduced.report, reduced.payload, "--network", "bridge")
    assert result.exit_code == 2
    assert "docker report" in result.stderr
