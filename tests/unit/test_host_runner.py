from __future__ import annotations

import time
from pathlib import Path

import pytest

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.runners.base import RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree

TREE = Tree.of({"a.txt": Entry("file", b"hello\n", text=True)})


@pytest.fixture
def runner(tmp_path: Path) -> HostRunner:
    r = HostRunner(base_dir=tmp_path)
    yield r  # type: ignore[misc]
    r.close()


def run(runner: HostRunner, cmd: str, timeout: float = 10, **env: str):  # type: ignore[no-untyped-def]
    return runner.run(TREE, RunRequest(cmd, env, timeout))


def test_exit_code_output_and_fresh_copy(runner: HostRunner) -> None:
    out = run(runner, "cat a.txt; echo err >&2; echo changed > a.txt; exit 3")
    assert out.exit_code == 3 and out.signal is None
    assert out.stdout == b"hello\n" and out.stderr == b"err\n"
    again = run(runner, "cat a.txt")
    assert again.stdout == b"hello\n", "a sample's writes must not reach the next sample"


def test_signal_is_reported(runner: HostRunner) -> None:
    out = run(runner, "kill -SEGV $$")
    assert out.exit_code == -11 and out.signal == 11
    xcpu = run(runner, "kill -XCPU $$")
    assert xcpu.resource_exhausted


def test_timeout_kills_the_whole_group(runner: HostRunner, tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    start = time.monotonic()
    out = run(runner, f"(sleep 3; touch {marker}) & sleep 30", timeout=0.5)
    assert out.timed_out and time.monotonic() - start < 5
    time.sleep(3.5)
    assert not marker.exists(), "a background child survived the timeout"
    contract = FailureContract(FailureSpec(exit_code=out.exit_code))
    assert not contract.reproduces(out), "a timeout never counts as the failure"


def test_explicit_environment_and_private_tmp(runner: HostRunner) -> None:
    out = run(runner, 'echo "$FOO|$HOME|$TMPDIR|${SECRET_NOT_PASSED:-unset}"', FOO="bar")
    foo, home, tmpdir, unset = out.stdout.decode().strip().split("|")
    assert foo == "bar" and home == tmpdir and unset == "unset"
    other = run(runner, 'echo "$TMPDIR"').stdout.decode().strip()
    assert other != tmpdir, "samples must not share TMPDIR"


def test_output_is_bounded(runner: HostRunner) -> None:
    out = run(runner, "head -c 3000000 /dev/zero | tr '\\0' a; echo TAIL")
    assert len(out.stdout) < 1_100_000 and out.stdout.endswith(b"TAIL\n")
    assert b"output truncated" in out.stdout
