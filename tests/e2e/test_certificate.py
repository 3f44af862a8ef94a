"""A holdout after the reduction: ``report replay --min-rate P0 --certificate PATH`` writes a
certificate that ``report validate --certificate PATH`` checks, and every tampering is caught.

One real reduction of a small flaky tree per module (a command that reproduces in 60 % of its
runs, by the counter of ``tests.conftest.flaky_gate``: deterministic, no luck involved), then a
real replay that certifies it. The reduction's summary states the final runs' rate with its
exact two-sided interval, recomputed here from the beta quantiles.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repomin.cli.main import cli
from repomin.report.human import final_interval, final_rate_text
from tests.conftest import flaky_gate
from tests.e2e._reduce import reduce_ok, write_tree

RUN_SH = "{gate}\ngrep -q NEEDED core/a.txt && echo 'BUG: flaky' && exit 1\n"
V1 = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "v1.json"


@dataclass(frozen=True)
class Certified:
    payload: Path
    report: Path
    certificate: Path
    summary: str
    replay: Result

    def validate(self, *extra: str, certificate: Path | None = None) -> Result:
        cert = certificate or self.certificate
        args = ["report", "validate", str(self.report), "--payload", str(self.payload)]
        return CliRunner().invoke(cli, [*args, "--certificate", str(cert), *extra])


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> Certified:
    root = tmp_path_factory.mktemp("certificate")
    files = {"core/a.txt": "x\nNEEDED\ny\n"}
    files.update({f"core/noise{i}.txt": f"noise {i}\n" for i in range(6)})
    files.update({f"doc{i}.md": f"doc {i}\n" for i in range(6)})
    files["run.sh"] = RUN_SH.format(gate=flaky_gate(root / "counter", 600))
    src = write_tree(root / "repo", files)
    out = root / "out"
    reduced = CliRunner().invoke(
        cli,
        [
            "reduce", str(src), "-o", str(out), "--command", "sh run.sh", "--match",
            "BUG: flaky", "--keep", "run.sh", "--passes", "files", "--jobs", "2",
            "--user-shell-runs", "0", "--no-session",
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert reduced.exit_code == 0, reduced.stderr
    report = root / "out.repomin" / "report.json"
    certificate = root / "cert.json"
    replay = CliRunner().invoke(
        cli,
        [
            "report", "replay", str(report), "--payload", str(out), "--yes", "--runs", "30",
            "--min-rate", "0.3", "--certificate", str(certificate),
        ],
    )  # fmt: skip
    return Certified(out, report, certificate, reduced.stdout, replay)


def _beta_interval(passes: int, runs: int, confidence: float) -> tuple[float, float]:
    """The exact two-sided Clopper--Pearson interval: beta quantiles at (1 - c) / 2 and
    (1 + c) / 2 (``beta.ppf(q, a, b)`` is ``betaincinv(a, b, q)``)."""
    from scipy.special import betaincinv

    tail = (1 - confidence) / 2
    low = 0.0 if passes == 0 else float(betaincinv(passes, runs - passes + 1, tail))
    high = 1.0 if passes == runs else float(betaincinv(passes + 1, runs - passes, 1 - tail))
    return low, high


# -- the summary: the final runs' rate interval -----------------------------------------------


@pytest.mark.slow
def test_the_summary_states_the_final_runs_interval(certified: Certified) -> None:
    report = json.loads(certified.report.read_text())
    ex = report["execution"]
    k, n = ex["final_passes"], ex["final_runs"]
    assert 0 < k < n  # a flaky failure
    low, high = _beta_interval(k, n, ex["confidence"])
    line = next(x for x in certified.summary.splitlines() if x.startswith("repomin: final runs:"))
    assert line.startswith(
        f"repomin: final runs: {k}/{n} reproduced (rate {k / n:.3f}); exact two-sided "
        f"Clopper–Pearson interval at confidence 0.95: [{low:.3f}, {high:.3f}]"
    )
    assert ("stopped once its outcome was certain" in line) == ex["final_stopped_early"]
    md = (certified.report.parent / "REPOMIN.md").read_text()
    assert f"The payload's final runs: {line.removeprefix('repomin: final runs: ')}." in md


def test_the_interval_is_exact_and_only_for_a_flaky_failure() -> None:
    report = json.loads(V1.read_text())
    assert report["execution"]["final_passes"] == report["execution"]["final_runs"] == 3
    assert final_rate_text(report) is None  # 5/5, 3/3, 6/6: nothing flaky to describe
    ex = report["execution"]
    ex["final_passes"], ex["final_runs"], ex["final_stopped_early"] = 7, 10, False
    expected = _beta_interval(7, 10, 0.95)
    assert final_interval(report) == pytest.approx(expected, rel=1e-9)
    assert final_rate_text(report) == (
        "7/10 reproduced (rate 0.700); exact two-sided Clopper–Pearson interval at confidence "
        f"0.95: [{expected[0]:.3f}, {expected[1]:.3f}]"
    )
    ex["final_stopped_early"] = True
    assert str(final_rate_text(report)).endswith("so it describes the runs made")


# -- replay writes a certificate that validates -----------------------------------------------


@pytest.mark.slow
def test_replay_writes_a_certificate_that_validates(certified: Certified) -> None:
    replay = certified.replay
    assert replay.exit_code == 0, replay.output
    assert f"repomin: certificate written: {certified.certificate} (holdout certified)" in (
        replay.stdout
    )
    cert = json.loads(certified.certificate.read_text())
    hold = cert["holdout_certification"]
    assert (hold["status"], hold["planned_runs"], hold["completed_runs"]) == ("certified", 30, 30)
    assert [s["index"] for s in hold["samples"]] == list(range(1, 31))
    assert re.search(rf"exact test: {hold['passes']}/30 supports a rate >= 0.3", replay.stdout)
    report_bytes = certified.report.read_bytes()
    assert cert["report_sha256"] == hashlib.sha256(report_bytes).hexdigest()
    output = json.loads(report_bytes)["output"]
    assert hold["artifact_tree_sha256"] == output["tree_sha256"]
    assert cert["payload_fingerprint_mode"] == "exact"
    env = cert["environment"]
    assert (env["backend"], env["home"], env["dispatch_engine"]) == ("host", "fresh", "local")
    assert env["sample_isolation"] in ("namespace", "supervisor")
    result = certified.validate()
    assert result.exit_code == 0, result.output
    assert (
        f"repomin: certificate valid: {certified.certificate}: holdout certified, "
        f"{hold['passes']}/30 runs reproduced, p >= 0.3 at confidence 0.95"
    ) in result.stdout


def _tampered(certified: Certified, tmp_path: Path, edit: str) -> Path:
    cert: dict[str, Any] = json.loads(certified.certificate.read_text())
    hold = cert["holdout_certification"]
    path = tmp_path / "tampered.json"
    if edit == "digest":
        cert["report_sha256"] = hashlib.sha256(b"another report").hexdigest()
    elif edit == "passes":  # one more pass, the statistics left as they were
        failed = next(s for s in hold["samples"] if s["outcome"] == "failed")
        failed.update(outcome="passed", accepted=True)
        hold["passes"] += 1
        hold["ordinary_failures"] -= 1
        hold["observed_rate"] = hold["passes"] / hold["planned_runs"]
    elif edit == "lower_bound":
        hold["lower_bound"] = round(hold["lower_bound"] + 0.05, 3)
    elif edit == "indexes":
        hold["samples"][7]["index"] = 31
    elif edit == "payload":
        hold["artifact_tree_content_sha256"] = hashlib.sha256(b"another tree").hexdigest()
    if edit == "huge":
        shutil.copyfile(certified.certificate, path)
        with path.open("r+b") as fh:
            fh.truncate((64 << 20) + 1)
    elif edit == "not-json":
        path.write_bytes(certified.certificate.read_bytes()[:-40])
    else:
        path.write_text(json.dumps(cert))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "rule", "expect"),
    [
        ("digest", "certificate.report", "is not this report's SHA-256"),
        ("passes", "certificate.holdout.recomputed", "p_value"),
        ("lower_bound", "certificate.holdout.recomputed", "lower_bound"),
        ("indexes", "certificate.holdout.indexes", "not 1..30 in order"),
        ("payload", "certificate.artifact", "the certified payload is not the report's"),
        ("huge", "certificate.json", "is larger than 64 MiB"),
        ("not-json", "certificate.json", "malformed JSON"),
    ],
)
def test_a_tampered_certificate_is_refused(
    certified: Certified, tmp_path: Path, edit: str, rule: str, expect: str
) -> None:
    path = _tampered(certified, tmp_path, edit)
    result = certified.validate(certificate=path)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert all(line.startswith("repomin: error: certificate.") for line in lines), lines
    assert any(line.startswith(f"repomin: error: {rule}: {path}: ") for line in lines), lines
    assert any(expect in line for line in lines if line.startswith(f"repomin: error: {rule}"))


@pytest.mark.slow
def test_a_certificate_does_not_follow_its_report_after_an_edit(
    certified: Certified, tmp_path: Path
) -> None:
    """The report edited by a byte (still a valid report): its certificate is another's."""
    sidecar = tmp_path / "out.repomin"
    sidecar.mkdir()
    edited = sidecar / "report.json"
    edited.write_bytes(certified.report.read_bytes() + b"\n")
    args = ["report", "validate", str(edited), "--payload", str(certified.payload)]
    alone = CliRunner().invoke(cli, args)
    assert alone.exit_code == 0, alone.output
    result = CliRunner().invoke(cli, [*args, "--certificate", str(certified.certificate)])
    assert result.exit_code == 2
    assert result.stderr.startswith("repomin: error: certificate.report: ")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.slow
def test_a_rejected_test_is_written_and_validates_as_rejected(
    certified: Certified, tmp_path: Path
) -> None:
    path = tmp_path / "rejected.json"
    args = ["report", "replay", str(certified.report), "--payload", str(certified.payload)]
    replay = CliRunner().invoke(
        cli, [*args, "--yes", "--runs", "10", "--min-rate", "0.95", "--certificate", str(path)]
    )
    assert replay.exit_code == 1, replay.output
    assert "(holdout rejected)" in replay.stdout
    result = certified.validate(certificate=path)
    assert result.exit_code == 0, result.output
    assert f"repomin: certificate valid: {path}: holdout rejected, " in result.stdout


@pytest.mark.slow
def test_refusals_before_anything_runs(certified: Certified, tmp_path: Path) -> None:
    base = ["report", "replay", str(certified.report), "--payload", str(certified.payload), "--yes"]
    inside = certified.payload / "cert.json"
    cases = {
        ("--certificate", str(tmp_path / "c.json")): "add --min-rate",
        ("--min-rate", "0.3", "--certificate", str(inside)): "inside the payload",
        ("--min-rate", "0.3", "--allow-modified", "--certificate", str(tmp_path / "c.json")): (
            "drop --allow-modified"
        ),
        ("--min-rate", "0.3", "--certificate", str(certified.report)): "is the report",
    }
    for extra, expect in cases.items():
        result = CliRunner().invoke(cli, [*base, *extra])
        assert result.exit_code == 2, result.output
        assert result.stdout == "" and expect in result.stderr, result.stderr
    assert not inside.exists() and not (tmp_path / "c.json").exists()


def _default_sigint() -> None:
    # A suite started in the background (``cmd &``) ignores SIGINT, and an ignored SIGINT is
    # inherited across exec: Python then never raises KeyboardInterrupt. The replay gets the
    # default disposition, as from an interactive shell.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_an_interrupted_replay_writes_no_certificate(tmp_path: Path) -> None:
    block, started = tmp_path / "block", tmp_path / "started"
    src = write_tree(tmp_path / "repo", {"keep/a.txt": "NEEDED\n", "junk/b.txt": "x\n"})
    command = (
        f"if [ -f {block} ]; then touch {started}; sleep 3; exit 0; fi; "
        "grep -q NEEDED keep/a.txt && { echo BUG; exit 1; }; exit 0"
    )
    out = tmp_path / "out"
    reduce_ok(src, out, command, "BUG", "--passes", "files", "--user-shell-runs", "0")
    md = (tmp_path / "out.repomin" / "REPOMIN.md").read_text()
    assert "final runs:" not in md  # a deterministic failure: no interval line
    certificate = tmp_path / "cert.json"
    certificate.write_text("an earlier certificate\n")
    block.touch()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "repomin", "report", "replay",
            str(tmp_path / "out.repomin" / "report.json"), "--payload", str(out), "--yes",
            "--runs", "4", "--jobs", "1", "--min-rate", "0.3", "--certificate", str(certificate),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not started.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the replay never started a run"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "repomin: interrupted"
    assert certificate.read_text() == "an earlier certificate\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".cert")) == []
