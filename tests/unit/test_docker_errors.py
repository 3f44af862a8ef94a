"""Docker engine errors reach the user as one readable line, with no engine needed."""

from __future__ import annotations

from pathlib import Path

import requests
from click.testing import CliRunner
from docker.errors import APIError
from urllib3.exceptions import ProtocolError

from repomin.cli.main import cli
from repomin.runners.docker_engine import EngineFailure, engine_error


def test_an_api_error_is_its_status_and_the_engines_explanation() -> None:
    response = requests.Response()
    response.status_code = 409
    exc = APIError(
        "409 Client Error", response, explanation="container abc is not running\n(try again)"
    )
    assert engine_error(exc) == "409 container abc is not running (try again)"


def test_a_nested_connection_error_is_its_innermost_cause() -> None:
    inner = FileNotFoundError(2, "No such file or directory")
    exc = requests.exceptions.ConnectionError(ProtocolError("Connection aborted.", inner))
    assert engine_error(exc) == "No such file or directory"
    assert "(" not in engine_error(exc)  # no exception tuple


def test_our_own_failure_keeps_its_advice_not_its_cause() -> None:
    try:
        try:
            raise OSError(28, "No space left on device")
        except OSError as exc:
            raise EngineFailure("could not write the tree to /work; raise --work-size") from exc
    except EngineFailure as failure:
        assert engine_error(failure) == "could not write the tree to /work; raise --work-size"


def test_a_long_message_is_one_bounded_line() -> None:
    text = engine_error(RuntimeError("x" * 1000 + "\n" + "y"))
    assert "\n" not in text and len(text) == 300


def test_an_unreachable_engine_is_exit_3_with_one_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.txt").write_text("x\n")
    argv = ["reduce", str(src), "-o", str(tmp_path / "out"), "--command", "false"]
    argv += ["--exit-code", "1", "--backend", "docker", "--image", "any:1"]
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-such-docker.sock"}
    result = CliRunner().invoke(cli, argv, env=env)
    assert result.exit_code == 3, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "cannot reach the Docker engine (No such file or directory)" in lines[0]
    assert "Traceback" not in result.output
