"""A tampered Docker report replayed on the real engine: the boundary is ReproMin's, not the
report's.

One real ``reduce --backend docker`` per module gives a report and its payload. The attacker's
copy of the report asks for a bridge network, no memory, process or scratch limits, the root
group and the caller's ``GITHUB_TOKEN``, and its command prints what the sample got (it never
prints the failure's marker, so replay shows the first run's output tail). Replay must run it
with no network interface but ``lo``, the default limits, a non-root user and group, and only
the environment values the caller passed with ``--env``; and it must print that whole boundary
before ``--yes``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repomin.cli.main import cli
from repomin.runners.docker_engine import host_memory
from repomin.runners.docker_limits import default_memory
from tests.conftest import reduce_argv
from tests.docker._support import BUSYBOX

pytestmark = pytest.mark.docker

SECRET = "ghp_caller_secret_token_value"
#: What the sample sees, one fact a line (the output tail replay prints is 12 lines).
PROBE = (
    'echo "NET=$(ls /sys/class/net | tr "\\n" ,)"; echo "ID=$(id -u):$(id -g)"; '
    'echo "MEM=$(cat /sys/fs/cgroup/memory.max 2>/dev/null '
    '|| cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"; '
    'echo "PIDS=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max)"; '
    'echo "TOK=${GITHUB_TOKEN-unset}"; '
    "echo \"TMP=$(df -k /tmp | tail -n 1 | awk '{print $2}')\"; exit 0"
)
LOOSE = {
    "docker_network": "bridge",
    "docker_memory": None,
    "docker_memory_bytes": None,
    "docker_pids_limit": None,
    "docker_tmp_size": None,
    "docker_work_size": None,
    "docker_limit_defaults": [],
    "docker_user": "65534:0",
    "environment_names": ["GITHUB_TOKEN"],
}


class Reduced:
    def __init__(self, payload: Path, report: Path) -> None:
        self.payload = payload
        self.report = report
        self.data: dict[str, Any] = json.loads(report.read_text())


@pytest.fixture(scope="module")
def reduced(client: Any, tmp_path_factory: pytest.TempPathFactory) -> Reduced:
    root = tmp_path_factory.mktemp("docker-replay")
    src, out = root / "src", root / "out"
    src.mkdir()
    (src / "run.sh").write_text("echo BUG\nexit 1\n")
    (src / "other.txt").write_text("other\n")
    argv = reduce_argv(
        src, out, "sh run.sh", "BUG",
        "--backend", "docker", "--image", BUSYBOX, "--jobs", "1", "--baseline-runs", "2",
        "--final-runs", "2", "--passes", "files", "--no-session", "-q",
    )  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return Reduced(out, root / "out.repomin" / "report.json")


def tampered(reduced: Reduced, tmp_path: Path, **execution: Any) -> Path:
    data = json.loads(json.dumps(reduced.data))
    data["command"] = PROBE
    data["execution"].update(execution)
    path = tmp_path / "evil.repomin" / "report.json"
    path.parent.mkdir()
    path.write_text(json.dumps(data))
    return path


def replay(report: Path, payload: Path, *args: str) -> Result:
    return CliRunner(env={"GITHUB_TOKEN": SECRET}).invoke(
        cli, ["report", "replay", str(report), "--payload", str(payload), *args]
    )


FACTS = {"NET", "ID", "MEM", "PIDS", "TOK", "TMP"}


def seen(result: Result) -> dict[str, str]:
    """The probe's facts from the output tail replay printed for its first run."""
    facts: dict[str, str] = {}
    for line in result.stderr.splitlines():
        _, bar, fact = line.partition("| ")
        key, eq, value = fact.partition("=")
        if bar and eq and key in FACTS:
            facts[key] = value
    assert set(facts) == FACTS, result.output
    return facts


def replay_containers(client: Any) -> list[str]:
    found = client.api.containers(all=True, filters={"label": f"io.repomin.pid={os.getpid()}"})
    return [
        c["Id"][:12]
        for c in found
        if (c.get("Labels") or {}).get("io.repomin.session", "").startswith("replay-")
    ]


def test_validate_does_not_stop_the_tampered_report(reduced: Reduced, tmp_path: Path) -> None:
    report = tampered(reduced, tmp_path, **LOOSE)
    result = CliRunner().invoke(
        cli, ["report", "validate", str(report), "--payload", str(reduced.payload)]
    )
    assert result.exit_code == 0, result.output


def test_a_tampered_report_replays_inside_the_default_boundary(
    client: Any, reduced: Reduced, tmp_path: Path
) -> None:
    report = tampered(reduced, tmp_path, **{**LOOSE, "environment_names": []})
    result = replay(report, reduced.payload, "--yes", "--runs", "1")
    assert result.exit_code == 1, result.output  # the probe never reproduces
    facts = seen(result)
    assert facts["NET"].strip(",").split(",") == ["lo"]  # no network interface beyond lo
    memory = default_memory(host_memory(client), 1)
    assert int(facts["MEM"]) == memory  # the default limit, not the report's "none"
    assert facts["PIDS"] == "512"
    uid, gid = facts["ID"].split(":")
    assert uid != "0" and gid != "0"
    assert facts["TOK"] == "unset"
    assert SECRET not in result.output
    # the whole boundary was printed before the run, and what the report asked for is named
    out = result.stdout
    for line in (
        f"boundary: docker image {reduced.data['execution']['docker_image_id']}",
        "boundary: network none (default)",
        "boundary: memory min(2 GiB",
        "boundary: processes 512 (default)",
        "boundary: /tmp 512m tmpfs (default)",
        "boundary: /work 1g tmpfs (default)",
        "boundary: user 65534:65534 (default)",
        "environment: none recorded",
        "the report recorded network bridge",
        "user 65534:0",
    ):
        assert line in out, line
    assert out.index("boundary: network") < out.index("replay: the failure reproduced")
    assert f"boundary in force: network none, memory {memory // (1024 * 1024)}m" in out
    assert replay_containers(client) == []


def test_a_recorded_name_gets_only_the_value_env_gives(
    client: Any, reduced: Reduced, tmp_path: Path
) -> None:
    report = tampered(reduced, tmp_path, **LOOSE)
    result = replay(
        report, reduced.payload, "--yes", "--runs", "1", "--env", "GITHUB_TOKEN=placeholder"
    )
    assert result.exit_code == 1, result.output
    assert seen(result)["TOK"] == "placeholder"
    assert SECRET not in result.output
    assert "GITHUB_TOKEN: from --env (value given)" in result.stdout
    assert replay_containers(client) == []


def test_a_recorded_name_not_allowed_never_reaches_the_container(
    client: Any, reduced: Reduced, tmp_path: Path
) -> None:
    report = tampered(reduced, tmp_path, **LOOSE)
    result = replay(report, reduced.payload, "--yes", "--runs", "1")
    assert SECRET not in result.output
    assert result.exit_code == 2, result.output
    assert "reproduced in" not in result.output
    assert "GITHUB_TOKEN: from your environment (set)" in result.stdout
    assert "--env GITHUB_TOKEN" in result.stderr
    assert replay_containers(client) == []


def test_the_boundary_is_printed_without_yes(reduced: Reduced, tmp_path: Path) -> None:
    report = tampered(reduced, tmp_path, **LOOSE)
    result = replay(report, reduced.payload)
    assert result.exit_code == 2
    for line in ("boundary: network none", "boundary: processes 512", "boundary: user 65534"):
        assert line in result.stdout, line
    assert "GITHUB_TOKEN: from your environment (set)" in result.stdout
    assert "rerun with --yes" in result.stderr


def test_loosening_takes_the_replays_own_flags(
    client: Any, reduced: Reduced, tmp_path: Path
) -> None:
    report = tampered(reduced, tmp_path, environment_names=[])
    result = replay(
        report, reduced.payload, "--yes", "--runs", "1",
        "--pids-limit", "none", "--memory", "512m", "--user", "4242:4343",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    facts = seen(result)
    assert facts["PIDS"] == "max"
    assert int(facts["MEM"]) == 512 * 1024 * 1024
    assert facts["ID"] == "4242:4343"
    assert facts["TOK"] == "unset"
    assert "boundary: processes no limit (--pids-limit)" in result.stdout
    assert "boundary: user 4242:4343 (--user)" in result.stdout


@pytest.mark.parametrize(("user", "what"), [("65534:0", "group 0"), ("0", "root")])
def test_root_user_or_group_is_refused(reduced: Reduced, user: str, what: str) -> None:
    result = replay(reduced.report, reduced.payload, "--yes", "--user", user)
    assert result.exit_code == 2
    assert what in result.stderr
    assert "reproduced in" not in result.output


def test_a_report_naming_root_is_invalid(reduced: Reduced, tmp_path: Path) -> None:
    report = tampered(reduced, tmp_path, docker_user="0:0")
    result = CliRunner().invoke(cli, ["report", "validate", str(report)])
    assert result.exit_code == 2
    assert "execution.docker_user" in result.stderr


@pytest.mark.cluster
def test_a_cluster_replay_gets_the_same_boundary(
    client: Any, reduced: Reduced, tmp_path: Path
) -> None:
    """``replay --cluster``: each worker builds the Docker runner from the replay's boundary."""
    from tests.cluster._support import LocalCluster

    cluster = LocalCluster(tmp_path / "cluster", workers=1)
    try:
        report = tampered(reduced, tmp_path, **{**LOOSE, "environment_names": []})
        result = replay(report, reduced.payload, "--yes", "--runs", "1", "--cluster",
                        cluster.address)  # fmt: skip
    finally:
        cluster.stop()
    assert result.exit_code == 1, result.output
    facts = seen(result)
    assert facts["NET"].strip(",").split(",") == ["lo"]
    assert facts["PIDS"] == "512"
    assert "0" not in facts["ID"].split(":")
    assert "boundary: network none (default)" in result.stdout


@pytest.mark.cluster
def test_a_cluster_replay_forwards_the_tmpfs_sizes(
    client: Any, reduced: Reduced, tmp_path: Path
) -> None:
    """``--tmp-size``/``--work-size`` reach the workers' runners too (they kept the defaults,
    while replay printed the values given)."""
    from tests.cluster._support import LocalCluster

    cluster = LocalCluster(tmp_path / "cluster", workers=1)
    try:
        report = tampered(reduced, tmp_path, **{**LOOSE, "environment_names": []})
        result = replay(report, reduced.payload, "--yes", "--runs", "1", "--tmp-size", "64m",
                        "--cluster", cluster.address)  # fmt: skip
    finally:
        cluster.stop()
    assert result.exit_code == 1, result.output
    assert seen(result)["TMP"] == str(64 * 1024), result.output  # 1k blocks of the tmpfs
    assert "/tmp 64m tmpfs (--tmp-size)" in result.stdout
