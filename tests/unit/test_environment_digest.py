"""The report's digest of the explicit environment values: salted and slow, legacy still checked.

The attack: ``execution.environment_sha256`` was an unsalted SHA-256 of a documented record, so
anyone holding a shared report could test guesses offline, at millions a second; a four-digit
PIN passed with ``--env`` fell in 10^4 guesses. A report now records a per-report random salt
and scrypt parameters beside the digest (``environment_digest_scheme``); the published formula
no longer finds the value, each guess costs a deliberately slow scrypt evaluation, and two
reports of the same value do not share a digest. Replay still compares the caller's values with
the recorded digest, and a legacy report (no scheme fields) still verifies with v1.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report import build
from repomin.report.validate import validate_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
PIN = "4821"


def v1_guess(name: str, value: str) -> str:
    """The formula docs/report-schema.md published for ``environment_sha256`` (v1)."""
    h = hashlib.sha256(b"repomin-env-v1\n")
    h.update(name.encode() + b"\0" + value.encode() + b"\n")
    return h.hexdigest()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The execution block of a report the real writer wrote for ``--env PIN=4821``."""
    root = tmp_path_factory.mktemp("pin")
    src = root / "src"
    src.mkdir()
    (src / "run.sh").write_text("echo BUG\nexit 1\n")
    result = CliRunner().invoke(
        cli,
        [
            "reduce", str(src), "-o", str(root / "out"), "--command", "sh run.sh",
            "--match", "BUG", "--env", f"PIN={PIN}", "--baseline-runs", "2",
            "--final-runs", "2", "--passes", "files", "--user-shell-runs", "0",
            "--no-session", "--no-trace", "-j", "1", "-q",
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((root / "out.repomin" / "report.json").read_text())
    execution: dict[str, Any] = report["execution"]
    return execution


def test_the_published_formula_no_longer_recovers_a_pin(written: dict[str, Any]) -> None:
    recorded = written["environment_sha256"]
    found = [g for g in (f"{i:04d}" for i in range(10_000)) if v1_guess("PIN", g) == recorded]
    assert found == []


def test_the_report_records_a_salted_slow_scheme(written: dict[str, Any]) -> None:
    assert written["environment_digest_scheme"] == build.ENVIRONMENT_SCHEME
    assert len(bytes.fromhex(written["environment_digest_salt"])) == 16
    assert written["environment_digest_parameters"] == {"n": 1 << 17, "r": 8, "p": 1}
    assert build.environment_verifies(written, {"PIN": PIN}) is True
    assert build.environment_verifies(written, {"PIN": "4822"}) is False


def test_each_guess_costs_a_slow_kdf(written: dict[str, Any]) -> None:
    """What the salt and the KDF buy: a guess costs tens of milliseconds, not nanoseconds."""
    start = time.perf_counter()
    for guess in ("0000", "0001"):
        assert build.environment_verifies(written, {"PIN": guess}) is False
    per_guess = (time.perf_counter() - start) / 2
    assert per_guess > 0.02, per_guess  # about 0.4 s on the reference 2-core machine
    start = time.perf_counter()
    for i in range(1000):
        v1_guess("PIN", f"{i:04d}")
    assert (time.perf_counter() - start) / 1000 < per_guess / 100


def test_the_same_value_gets_another_digest_in_every_report() -> None:
    one, two = build.environment_fields({"PIN": PIN}), build.environment_fields({"PIN": PIN})
    assert one["environment_digest_salt"] != two["environment_digest_salt"]
    assert one["environment_sha256"] != two["environment_sha256"]
    assert build.environment_verifies(one, {"PIN": PIN})
    assert build.environment_verifies(two, {"PIN": PIN})


def test_a_legacy_report_still_verifies_with_v1() -> None:
    execution = json.loads((FIXTURES / "v1.json").read_text())["execution"]
    assert "environment_digest_scheme" not in execution
    token = {"REPOMIN_FIXTURE_TOKEN": "fixture-value"}
    assert execution["environment_sha256"] == build.environment_digest(token)
    assert build.environment_verifies(execution, token) is True
    assert build.environment_verifies(execution, {"REPOMIN_FIXTURE_TOKEN": "other"}) is False


def _with(fields: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "v1.json").read_text())
    data["execution"].update(fields)
    return data


@pytest.fixture(scope="module")
def fields() -> dict[str, Any]:
    made: dict[str, Any] = build.environment_fields({"REPOMIN_FIXTURE_TOKEN": "v"})
    return made


def test_a_written_digest_validates(fields: dict[str, Any]) -> None:
    assert validate_report(_with(fields)).valid


@pytest.mark.parametrize(
    "parameters",
    [
        {"n": 1 << 30, "r": 8, "p": 1},  # would make replay burn a terabyte
        {"n": 1 << 17, "r": 64, "p": 1},
        {"n": 1 << 17, "r": 8, "p": 1000},
        {"n": 1000, "r": 8, "p": 1},
        {"n": 1 << 17, "r": 8},
    ],
)
def test_the_cost_a_report_can_ask_replay_for_is_bounded(
    fields: dict[str, Any], parameters: dict[str, int]
) -> None:
    edited = {**fields, "environment_digest_parameters": parameters}
    assert validate_report(_with(edited)).rules() == {"schema"}


def test_the_scheme_fields_come_together(fields: dict[str, Any]) -> None:
    without_salt = {k: v for k, v in fields.items() if k != "environment_digest_salt"}
    assert validate_report(_with(without_salt)).rules() == {"schema"}
    salt_only = {"environment_digest_salt": "00" * 16}
    assert validate_report(_with(salt_only)).rules() == {"schema"}


def test_no_explicit_variable_needs_no_slow_digest() -> None:
    """Nothing to guess: the digest of no values is the fast v1 one, and it still verifies."""
    fields = build.environment_fields({})
    assert fields == {"environment_sha256": build.environment_digest({})}
    assert build.environment_verifies(fields, {}) is True
    assert build.environment_verifies(fields, {"X": "1"}) is False
