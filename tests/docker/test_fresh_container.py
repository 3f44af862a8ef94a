"""``fresh_container=True``: one container per sample, with and without a shell in the image."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.docker._support import NOSHELL, has_image, run

pytestmark = pytest.mark.docker


def test_each_sample_gets_its_own_container(make_runner: Any) -> None:
    runner = make_runner(fresh_container=True, memory="64m")
    assert runner.describe()["docker_strategy"] == "container-per-sample"
    first = run(runner, "sleep 300 >/dev/null 2>&1 & echo x > /tmp/mark; cat README.txt; exit 4")
    second = run(runner, "ls -A /tmp; cat /proc/[0-9]*/comm | grep -c '^sleep$' || true")
    oom = run(runner, "dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>/dev/null; echo after")
    assert first.exit_code == 4
    assert first.stdout == b"hello from the tree\n"
    assert second.exit_code == 0
    assert second.stdout == b"0\n"  # no sleep survived, /tmp is empty
    assert first.extra["docker_container"] != second.extra["docker_container"]
    assert oom.resource_exhausted
    assert oom.stdout == b"after\n"


@pytest.fixture(params=["bind", "stream"])
def noshell(request: pytest.FixtureRequest, make_runner: Any) -> Any:
    if not has_image(NOSHELL):
        pytest.skip(f"{NOSHELL} is missing; run docker/build-test-images.sh")
    from repomin.errors import UsageError

    try:
        runner = make_runner(
            image=NOSHELL, fresh_container=True, memory="64m", transport=request.param
        )
    except UsageError as exc:
        pytest.skip(f"the {request.param} transport is not available here: {exc}")
    assert not runner.has_shell
    return runner


def test_an_image_without_a_shell_runs_the_command_directly(noshell: Any) -> None:
    outcome = run(
        noshell,
        "busybox sh -c 'cat README.txt; touch new && ls; echo FOO=$FOO; exit 5'",
        FOO="from env",
    )
    assert outcome.exit_code == 5, outcome
    lines = outcome.stdout.decode().splitlines()
    assert lines[0] == "hello from the tree"
    assert "new" in lines[1:]
    assert lines[-1] == "FOO=from env"
    assert outcome.workdir in ("/work", "/repomin/work")


def test_without_a_shell_timeouts_and_oom_are_reported(noshell: Any) -> None:
    if noshell.transport == "stream":
        pytest.skip("covered with the bind transport (containers cost ~1 s each)")
    started = time.monotonic()
    slow = run(noshell, "busybox sleep 100", timeout=1.0)
    assert slow.timed_out and slow.exit_code is None
    assert time.monotonic() - started < 5.0
    oom = run(noshell, "busybox dd if=/dev/zero of=/tmp/fill bs=1M count=200")
    assert oom.resource_exhausted
    missing = run(noshell, "no-such-program --flag")
    assert missing.exit_code == 127
    assert missing.infrastructure_error is None
