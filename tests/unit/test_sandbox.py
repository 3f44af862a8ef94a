"""The host sample's boundary: SRC hidden, samples die with ReproMin, leftovers reaped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repomin.runners import sandbox
from repomin.runners.base import RunRequest
from repomin.runners.host import HostRunner, reap_stale
from repomin.tree import Entry, Tree

TREE = Tree.of({"a.txt": Entry("file", b"hello\n", text=True)})
ROOT = Path(__file__).resolve().parents[2]
needs_namespace = pytest.mark.skipif(
    sandbox.bwrap_problem() is not None, reason=f"no namespace: {sandbox.bwrap_problem()}"
)
MODES = [pytest.param("namespace", marks=needs_namespace), "supervisor"]


def _pids_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for(token: str, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not _pids_with(token):
        assert time.monotonic() < deadline, f"no sample process with {token} appeared"
        time.sleep(0.05)


@needs_namespace
def test_namespace_hides_source_and_keeps_status(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "secret.txt").write_text("from SRC\n")
    (tmp_path / "base").mkdir()
    runner = HostRunner(base_dir=tmp_path / "base", source=src, hide=(tmp_path / "none",))
    try:
        assert runner.isolation == "namespace" and runner.hides_source
        out = runner.run(TREE, RunRequest(f"cat a.txt; cat {src}/secret.txt", {}, 10))
        assert out.stdout == b"hello\n" and b"No such file" in out.stderr
        assert runner.run(TREE, RunRequest("kill -SEGV $$", {}, 10)).exit_code == -11
        assert runner.run(TREE, RunRequest("exit 139", {}, 10)).exit_code == 139
    finally:
        runner.close()
    assert (src / "secret.txt").read_text() == "from SRC\n"


def test_supervisor_mode_sees_source_and_keeps_status(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "secret.txt").write_text("from SRC\n")
    (tmp_path / "base").mkdir()
    runner = HostRunner(base_dir=tmp_path / "base", source=src, isolation="supervisor")
    try:
        assert not runner.hides_source
        out = runner.run(TREE, RunRequest(f"cat {src}/secret.txt; exit 4", {}, 10))
        assert (out.exit_code, out.stdout) == (4, b"from SRC\n")
        assert runner.run(TREE, RunRequest("kill -TERM $$", {}, 10)).signal == signal.SIGTERM
    finally:
        runner.close()


def test_hidden_paths_skip_missing_nested_and_the_sample_directory(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "scratch").mkdir()
    got = sandbox.hidden_paths(
        [tmp_path / "a" / "b", tmp_path / "a", tmp_path / "missing", tmp_path],
        [tmp_path / "scratch"],
    )
    assert got == [tmp_path / "a"], "tmp_path holds the scratch directory and stays visible"


_CHILD = """
import sys, time
from pathlib import Path
from repomin.runners.host import HostRunner
from repomin.runners.base import RunRequest
from repomin.tree import Entry, Tree
runner = HostRunner(base_dir=Path(sys.argv[1]), isolation=sys.argv[2])
tree = Tree.of({"a.txt": Entry("file", b"x")})
runner.run(tree, RunRequest(sys.argv[3], {}, 600))
"""


@pytest.mark.parametrize("mode", MODES)
def test_sigkill_of_the_parent_kills_the_sample_group(tmp_path: Path, mode: str) -> None:
    token = f"repomin-test-loop-{os.getpid()}-{mode}"
    command = f": {token}; (: {token}-child; while :; do sleep 0.1; done) & while :; do :; done"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), mode, command], env=env)
    try:
        _wait_for(token)
        child.kill()
        child.wait()
        deadline = time.monotonic() + 3
        while _pids_with(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _pids_with(token) == [], "a sample process outlived ReproMin"
    finally:
        child.kill()
        for pid in _pids_with(token):
            os.kill(pid, signal.SIGKILL)


def test_reaping_kills_recorded_groups_of_dead_runs(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()  # a PID that is no longer running
    stale = tmp_path / f"repomin-{dead.pid}-old"
    stale.mkdir(mode=0o700)
    (stale / "owner").write_text(f"{dead.pid} 1\n")
    (stale / "live").mkdir(mode=0o700)
    token = f"repomin-test-leftover-{os.getpid()}"
    left = subprocess.Popen(
        ["/bin/sh", "-c", f": {token}; sleep 60 & sleep 60"], start_new_session=True
    )
    unrelated = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        _wait_for(token)
        sandbox.record_sample(stale, left.pid)
        reap_stale(tmp_path)
        assert not stale.exists()
        assert left.wait(timeout=5) == -signal.SIGKILL
        assert unrelated.poll() is None, "only recorded groups are reaped"
    finally:
        for proc in (left, unrelated):
            proc.kill()
            proc.wait()


def test_live_runs_are_not_reaped(tmp_path: Path) -> None:
    mine = tmp_path / f"repomin-{os.getppid()}-live"
    mine.mkdir(mode=0o700)
    sandbox.write_owner(mine)  # owner: this (live) process, under its parent's PID name
    (mine / "owner").write_text(f"{os.getpid()} {sandbox.start_time(os.getpid())}\n")
    reap_stale(tmp_path)
    assert mine.exists()
