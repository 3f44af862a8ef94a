"""The Docker runner's default limits, their parsing, the CLI flags and their replay (no engine)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.errors import UsageError
from repomin.report.validate import validate_report
from repomin.runners.docker_limits import (
    GIB,
    MIB,
    PAGE,
    RECORDED_SETTINGS,
    ReplaySandbox,
    check_fits,
    default_memory,
    describe_recorded,
    describe_replay_sandbox,
    parse_limits,
    replay_settings,
)

ALL_DEFAULTS = ("memory", "pids_limit", "tmp_size", "work_size")


@pytest.mark.parametrize(
    ("host", "jobs", "expected"),
    [
        (24 * GIB, 1, 2 * GIB),  # capped at 2 GiB
        (24 * GIB, 8, 24 * GIB // 16),  # 1.5 GiB: half the RAM shared by 8 workers
        (2 * GIB, 2, 512 * MIB),
        (512 * MIB, 2, 256 * MIB),  # the floor
        (None, 4, 2 * GIB),  # RAM unknown
        (0, 1, 2 * GIB),
    ],
)
def test_default_memory(host: int | None, jobs: int, expected: int) -> None:
    assert default_memory(host, jobs) == expected


def test_every_limit_is_on_by_default() -> None:
    limits = parse_limits(host_memory=8 * GIB, jobs=2)
    assert (limits.memory, limits.memory_bytes) == ("2048m", 2 * GIB)
    assert limits.pids_limit == 512
    assert (limits.tmp_size, limits.shm_size, limits.work_size) == ("512m", "64m", "1g")
    assert limits.defaults == ALL_DEFAULTS
    described = limits.describe()
    assert described["docker_limit_defaults"] == list(ALL_DEFAULTS)
    assert described["docker_work_mount"] == "tmpfs,nosuid,nodev"
    options = limits.tmpfs_options(mode="1777", size=limits.tmp_size).split(",")
    assert {"nosuid", "nodev", "size=512m", "mode=1777"} <= set(options)


def test_none_lifts_each_limit_and_values_are_kept() -> None:
    lifted = parse_limits(memory="none", pids_limit="NONE", tmp_size="none", work_size=" none ")
    assert (lifted.memory, lifted.memory_bytes, lifted.pids_limit) == (None, None, None)
    assert (lifted.tmp_size, lifted.work_size, lifted.defaults) == (None, None, ())
    assert "size=" not in lifted.tmpfs_options(mode="1777", size=lifted.tmp_size)
    given = parse_limits(memory="1g", pids_limit="100", tmp_size="2g", work_size="300m")
    assert (given.memory, given.memory_bytes, given.pids_limit) == ("1g", GIB, 100)
    assert (given.tmp_size, given.work_size, given.defaults) == ("2g", "300m", ())
    assert parse_limits(pids_limit=64, tmp_size="1g").defaults == ("memory", "work_size")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pids_limit": "lots"}, r"--pids-limit 'lots' is not a number \(e.g. 512\) or none"),
        ({"pids_limit": 8}, "use at least 16"),
        ({"tmp_size": "tiny"}, r"--tmp-size 'tiny' is not a size of at least 1m"),
        ({"work_size": "10k"}, r"--work-size '10k' is not a size"),
        ({"memory": "1m"}, r"--memory '1m' is not a size of at least 6m"),
        # reduce as replay: root's group would make the image's group-root files the sample's
        ({"user": "1000:0"}, r"--user 1000:0: group 0 \(root's group\) is refused"),
        ({"user": "0"}, r"--user 0 \(root\) is refused"),
    ],
)
def test_bad_limits_name_the_value_and_the_fix(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_limits(**kwargs)  # type: ignore[arg-type]


def test_replay_settings_are_the_defaults_never_a_reports() -> None:
    """Replay's boundary is ReproMin's defaults (``None`` below: the runner's default), not what
    a report recorded: the report is its sender's to write."""
    settings = replay_settings(ReplaySandbox())
    assert settings["network"] == "none"
    assert {settings[k] for k in ("memory", "pids_limit", "tmp_size", "work_size", "user")} == {
        None
    }
    assert (settings["strategy"], settings["fresh_container"]) == (None, False)
    again = parse_limits(
        **{k: settings[k] for k in ("memory", "pids_limit", "tmp_size", "work_size", "user")}
    )
    assert again.defaults == ALL_DEFAULTS and again.user == "65534:65534"
    assert "docker_network" in RECORDED_SETTINGS  # shown to the user, never used


def test_replay_settings_take_the_replays_own_options() -> None:
    box = ReplaySandbox(network="bridge", memory="none", pids_limit="64", user="4242:4343")
    settings = replay_settings(box)
    assert (settings["network"], settings["memory"], settings["pids_limit"]) == (
        "bridge",
        "none",
        "64",
    )
    assert settings["user"] == "4242:4343"
    assert box.given() == ["--network", "--memory", "--pids-limit", "--user"]


@pytest.mark.parametrize(
    ("user", "message"),
    [("65534:0", "group 0"), ("0", "root"), ("0:65534", "root"), ("x", "numeric")],
)
def test_replay_refuses_roots_uid_and_gid(user: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        replay_settings(ReplaySandbox(user=user))


def test_the_replay_boundary_says_where_each_value_comes_from() -> None:
    lines = describe_replay_sandbox(ReplaySandbox(pids_limit="none", tmp_size="2g"))
    assert "network none (default)" in lines
    assert "processes no limit (--pids-limit)" in lines
    assert "/tmp 2g tmpfs (--tmp-size)" in lines
    assert "user 65534:65534 (default)" in lines
    recorded = describe_recorded(
        {"docker_network": "bridge", "docker_memory": None, "docker_user": "65534:0"}
    )
    assert recorded == "network bridge, memory no limit, user 65534:0 (root's group)"


def _reduce(tmp_path: Path, *extra: str) -> tuple[int, str]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "f.txt").write_text("x\n")
    argv = [
        "reduce",
        str(src),
        "-o",
        str(tmp_path / "out"),
        "--command",
        "false",
        "--exit-code",
        "1",
        *extra,
    ]
    result = CliRunner().invoke(cli, argv)
    return result.exit_code, result.output


@pytest.mark.parametrize("flag", ["--tmp-size=1g", "--work-size=1g", "--pids-limit=none"])
def test_docker_flags_need_the_docker_backend(tmp_path: Path, flag: str) -> None:
    code, output = _reduce(tmp_path, flag)
    assert code == 2
    assert "need --backend docker" in output
    assert len(output.strip().splitlines()) == 1


def test_a_bad_limit_exits_2_before_the_engine_is_asked(tmp_path: Path) -> None:
    code, output = _reduce(tmp_path, "--backend", "docker", "--image", "x", "--pids-limit", "lots")
    assert code == 2
    assert (
        output.strip()
        .splitlines()[-1]
        .endswith("--pids-limit 'lots' is not a number (e.g. 512) or none")
    ), output


def docker_report(**execution: object) -> dict[str, Any]:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "v1.json"
    data: dict[str, Any] = json.loads(fixture.read_text())
    described = parse_limits(host_memory=8 * GIB).describe()
    data["execution"].update(
        backend="docker",
        docker_image="repomin-test/busybox:1",
        docker_image_id="sha256:" + "ab" * 32,
        **described,
    )
    data["execution"].update(execution)
    return data


def test_a_report_with_default_limits_is_valid() -> None:
    assert validate_report(docker_report()).valid


@pytest.mark.parametrize(
    "change",
    [
        {"docker_memory_bytes": None},  # limited in one form, unlimited in the other
        {"docker_memory": None},
        {"docker_pids_limit": None},  # named as a default, yet no limit
        {"docker_work_size": None},
    ],
)
def test_inconsistent_limits_break_the_docker_limits_rule(change: dict[str, object]) -> None:
    assert validate_report(docker_report(**change)).rules() == {"execution.docker_limits"}


def test_a_lifted_limit_that_is_not_named_as_a_default_is_valid() -> None:
    lifted = parse_limits(memory="none", pids_limit="none").describe()
    assert validate_report(docker_report(**lifted)).valid


def test_a_mistyped_limit_breaks_the_schema() -> None:
    assert "schema" in validate_report(docker_report(docker_pids_limit="512")).rules()


def test_a_tree_that_cannot_fit_into_work_is_a_usage_error() -> None:
    check_fits([MIB - PAGE, PAGE], "1m")  # exactly 256 pages: fits
    check_fits([10 * GIB], None)  # no size limit
    with pytest.raises(UsageError, match=r"at least 2 MiB in /work, more than --work-size 1m"):
        check_fits([MIB - PAGE, PAGE, 1], "1m")  # one byte more is one page more
    with pytest.raises(UsageError, match=r"e\.g\. 6g"):
        check_fits([3 * GIB], "1g")
