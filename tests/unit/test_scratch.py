"""Scratch directories of dead runs are reaped by the next run of either backend."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

from repomin.runners import sandbox
from repomin.runners.host import HostRunner
from repomin.runners.scratch import (
    DOCKER_PREFIX,
    OWNER_FILE,
    make_scratch,
    owner_record,
    private_root,
    reap_stale_scratch,
)


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def docker_dir(parent: Path, name: str, owner: dict[str, str] | None) -> Path:
    path = parent / f"{DOCKER_PREFIX}{name}"
    path.mkdir(mode=0o700)
    (path / "w1").mkdir()
    (path / "w1" / "tree.txt").write_text("the last tree")
    if owner is not None:
        (path / OWNER_FILE).write_text(json.dumps(owner))
    return path


def host_dir(parent: Path, pid: int) -> Path:
    path = parent / f"repomin-{pid}-abc"
    path.mkdir(mode=0o700)
    (path / "owner").write_text(f"{pid} 0\n")
    (path / "live").mkdir(mode=0o700)
    return path


def test_docker_dirs_of_dead_runs_go_and_the_others_stay(tmp_path: Path) -> None:
    here = socket.gethostname()
    dead = docker_dir(tmp_path, "dead", {"host": here, "pid": str(dead_pid())})
    alive = docker_dir(tmp_path, "alive", owner_record())
    elsewhere = docker_dir(tmp_path, "other", {"host": "another-machine", "pid": "1"})
    unknown = docker_dir(tmp_path, "unknown", None)
    unrelated = tmp_path / "someone-else-1-x"
    unrelated.mkdir()
    assert reap_stale_scratch([tmp_path]) == 1
    assert not dead.exists()
    assert alive.exists() and elsewhere.exists() and unknown.exists() and unrelated.exists()


def test_a_reused_pid_is_not_taken_for_the_owner(tmp_path: Path) -> None:
    record = {**owner_record(), "pid_start": "1"}  # this pid, but started at another time
    reused = docker_dir(tmp_path, "reused", record)
    assert reap_stale_scratch([tmp_path]) == 1
    assert not reused.exists()


def test_host_dirs_are_reaped_with_their_leftover_processes(tmp_path: Path) -> None:
    path = host_dir(tmp_path, dead_pid())
    straggler = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        sandbox.record_sample(path, straggler.pid)
        mine = host_dir(tmp_path, os.getpid())
        assert reap_stale_scratch([tmp_path]) == 1
        assert straggler.wait(5) == -9
        assert not path.exists()
        assert mine.exists()
    finally:
        if straggler.poll() is None:
            straggler.kill()
            straggler.wait()


def test_the_host_runner_reaps_what_a_dead_docker_run_left(tmp_path: Path) -> None:
    root = private_root(tmp_path)
    dead = docker_dir(root, "dead", {"host": socket.gethostname(), "pid": str(dead_pid())})
    runner = HostRunner(base_dir=tmp_path)
    try:
        assert not dead.exists()
    finally:
        runner.close()


def test_make_scratch_records_this_process(tmp_path: Path) -> None:
    path = make_scratch(DOCKER_PREFIX, tmp_path)
    assert path.parent == private_root(tmp_path)
    assert json.loads((path / OWNER_FILE).read_text()) == owner_record()
    assert reap_stale_scratch([path.parent]) == 0
    assert path.exists()
