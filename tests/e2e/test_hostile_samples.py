"""Hostile trees on the real host runner: what a sample, or another local user, tries against the
boundary, and why each attempt fails (SECURITY.md lists each with its test).

Every test here runs real samples through :class:`repomin.runners.host.HostRunner` in each
isolation mode this machine can make (``namespace`` needs a working bwrap and is skipped with the
reason otherwise). Tests that act as another local user need root (``setpriv``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from repomin.runners import sandbox
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.host import HostRunner
from repomin.runners.scratch import private_root, read_regular
from repomin.tree import Entry, Tree

NO_NAMESPACE = sandbox.bwrap_problem()
MODES = [
    pytest.param(
        "namespace",
        marks=pytest.mark.skipif(NO_NAMESPACE is not None, reason=f"{NO_NAMESPACE}"),
    ),
    "supervisor",
]
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root")
NOBODY = 65534
TREE = Tree.of({"a.txt": Entry("file", b"a\n", text=True)})


def _run(runner: HostRunner, command: str, timeout: float = 20) -> Outcome:
    return runner.run(TREE, RunRequest(command, {}, timeout))


@pytest.fixture
def parent() -> Iterator[Path]:
    """A shared scratch parent like ``/dev/shm`` (world-writable, sticky) that other users can
    reach."""
    shared = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    path = Path(tempfile.mkdtemp(prefix="repomin-test-shared-", dir=shared))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A root-owned (this user's) process group nobody asked ReproMin to kill."""
    proc = subprocess.Popen(["sleep", "1001"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def _as_nobody(script: str) -> None:
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    subprocess.run([*argv, "/bin/sh", "-c", script], check=True)


def _plant_script(directory: Path, pgid: int) -> str:
    return (
        f"mkdir -p {directory}/live && chmod 777 {directory} {directory}/live && "
        f"echo '4000000 0' > {directory}/owner && echo '{pgid} 1' > {directory}/live/{pgid}"
    )


# -- reaping trusts only what ReproMin made ------------------------------------------------------


@AS_ROOT
@pytest.mark.parametrize("mode", MODES)
def test_a_record_planted_by_another_user_kills_nothing(
    parent: Path, victim: subprocess.Popen[bytes], mode: str
) -> None:
    """Another user plants a dead owner's directory naming our process group, both where runs
    used to live (the shared parent) and as the private root itself (made before us)."""
    legacy = parent / "repomin-4000000-x"
    squatted = parent / f"repomin-{os.geteuid()}"
    _as_nobody(_plant_script(legacy, victim.pid))
    _as_nobody(_plant_script(squatted / "repomin-4000000-y", victim.pid))
    _as_nobody(f"chmod 777 {squatted}")
    runner = HostRunner(base_dir=parent, isolation=mode)
    try:
        assert _run(runner, "echo ok").stdout == b"ok\n"
    finally:
        runner.close()
    time.sleep(0.2)
    assert victim.poll() is None, "a record another user planted killed a process group"
    assert legacy.exists() and (squatted / "repomin-4000000-y").exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_loose_record_in_our_own_root_is_not_trusted(
    tmp_path: Path, victim: subprocess.Popen[bytes], mode: str
) -> None:
    root = private_root(tmp_path)
    stale = root / "repomin-4000000-z"
    (stale / "live").mkdir(parents=True, mode=0o700)
    stale.chmod(0o700)
    (stale / "owner").write_text("4000000 0\n")
    record = stale / "live" / str(victim.pid)
    record.write_text(f"{victim.pid} 1\n")
    record.chmod(0o666)  # writable by anyone: not a record ReproMin wrote
    HostRunner(base_dir=tmp_path, isolation=mode).close()
    time.sleep(0.2)
    assert victim.poll() is None


@pytest.mark.skipif(NO_NAMESPACE is not None, reason=f"{NO_NAMESPACE}")
def test_a_sample_cannot_plant_a_record_for_the_next_start(
    tmp_path: Path, victim: subprocess.Popen[bytes]
) -> None:
    """The sample writes a record naming the victim into its runner's ``live/`` (two levels
    up, and by the absolute path of the private root); then the run dies uncleanly and the
    next start reaps what it left."""
    runner = HostRunner(base_dir=tmp_path, isolation="namespace")
    base = runner._base
    plant = (
        f"echo '{victim.pid} 1' > ../../live/{victim.pid}; "
        f"echo '{victim.pid} 1' > {base}/live/{victim.pid}; "
        f"ls {base.parent} | wc -l"
    )
    out = _run(runner, plant)
    assert not (base / "live" / str(victim.pid)).exists(), out
    assert out.stdout.strip() == b"1", "the sample saw more of the private root than itself"
    (base / "owner").write_text("4000000 0\n")  # as after SIGKILL: the owner is gone
    runner._live.clear()
    HostRunner(base_dir=tmp_path, isolation="namespace").close()
    time.sleep(0.2)
    assert victim.poll() is None
    shutil.rmtree(base, ignore_errors=True)


# -- a sample sees nothing of its siblings or of the runner -------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_sibling_cannot_forge_another_samples_output(tmp_path: Path, mode: str) -> None:
    """B appends to every file named like captured output in every sibling directory it can
    reach while A runs; A's captured output is A's alone."""
    runner = HostRunner(base_dir=tmp_path, isolation=mode)
    forge = (
        "for i in 1 2 3 4 5 6 7 8 9 10; do for d in ../../*/; do "
        "for f in stdout stderr out err; do echo FORGED >> $d$f 2>/dev/null; done; done; "
        "sleep 0.1; done; echo B"
    )
    results: dict[str, Outcome] = {}
    try:
        a = threading.Thread(target=lambda: results.update(a=_run(runner, "sleep 1.5; echo A")))
        a.start()
        time.sleep(0.3)
        results["b"] = _run(runner, forge)
        a.join()
    finally:
        runner.close()
    assert results["a"].stdout == b"A\n" and results["a"].stderr == b""
    assert results["b"].stdout.endswith(b"B\n")


@pytest.mark.skipif(NO_NAMESPACE is not None, reason=f"{NO_NAMESPACE}")
def test_a_namespaced_sample_cannot_reach_a_siblings_processes_or_pipes(tmp_path: Path) -> None:
    """B looks for A's processes (and so A's supervisor and its status pipe) in ``/proc`` and
    tries to write a forged status into every pipe it can open there: it sees only its own
    namespace, and A's exit status is A's."""
    runner = HostRunner(base_dir=tmp_path, isolation="namespace")
    token = f"repomin-sibling-{os.getpid()}"
    forge = (
        # [s]: the pattern does not match B's own command lines
        f"grep -l '[r]epomin-sibling-{os.getpid()}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l; "
        'for f in /proc/[0-9]*/fd/*; do [ -p "$f" ] && echo 0 > "$f"; done 2>/dev/null; '
        "echo B"
    )
    results: dict[str, Outcome] = {}
    try:
        a = threading.Thread(
            target=lambda: results.update(a=_run(runner, f": {token}; sleep 1.5; exit 3"))
        )
        a.start()
        time.sleep(0.5)
        results["b"] = _run(runner, forge)
        a.join()
    finally:
        runner.close()
    assert results["b"].stdout.split()[0] == b"0", results["b"].stdout
    assert results["a"].exit_code == 3


@pytest.mark.parametrize("mode", MODES)
def test_a_sample_cannot_swap_its_captured_output(tmp_path: Path, mode: str) -> None:
    """The sample replaces where its output used to be written by a symlink to a file outside
    its tree and by a FIFO: the runner returns what the sample printed, promptly."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET outside the tree\n")
    runner = HostRunner(base_dir=tmp_path, isolation=mode)
    swap = (
        f"rm -f ../stdout ../stderr; ln -s {secret} ../stdout; mkfifo ../stderr; "
        "echo mine; echo err-mine >&2"
    )
    try:
        started = time.monotonic()
        out = _run(runner, swap, timeout=5)
        took = time.monotonic() - started
    finally:
        runner.close()
    assert out.stdout == b"mine\n" and out.stderr == b"err-mine\n"
    assert b"SECRET" not in out.stdout + out.stderr
    assert took < 5 and not out.timed_out


def test_read_regular_refuses_links_and_fifos(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"x" * 100)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    os.mkfifo(tmp_path / "fifo")
    assert read_regular(tmp_path / "real", 10) == b"x" * 10
    assert read_regular(tmp_path / "link", 10) is None
    assert read_regular(tmp_path / "fifo", 10) is None  # and it did not block


@pytest.mark.skipif(NO_NAMESPACE is not None, reason=f"{NO_NAMESPACE}")
def test_a_namespaced_sample_cannot_read_repomin_s_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPOMIN_TEST_SECRET", "s3cr3t-value")
    runner = HostRunner(base_dir=tmp_path, isolation="namespace")
    try:
        out = _run(runner, f"cat /proc/{os.getpid()}/environ; tr '\\0' '\\n' </proc/1/environ")
    finally:
        runner.close()
    assert b"s3cr3t-value" not in out.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every process's /proc files")
def test_a_supervised_sample_cannot_read_repomin_s_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPOMIN_TEST_SECRET", "s3cr3t-value")
    runner = HostRunner(base_dir=tmp_path, isolation="supervisor")
    try:
        out = _run(runner, f"cat /proc/{os.getpid()}/environ")
    finally:
        runner.close()
    assert b"s3cr3t-value" not in out.stdout


# -- the namespace drops every capability --------------------------------------------------------


@pytest.mark.skipif(NO_NAMESPACE is not None, reason=f"{NO_NAMESPACE}")
def test_the_namespace_leaves_no_capability_to_unhide_src(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "secret.txt").write_text("SRC content\n")
    (tmp_path / "scratch").mkdir()
    runner = HostRunner(base_dir=tmp_path / "scratch", source=src, isolation="namespace")
    try:
        out = _run(
            runner,
            f"grep CapEff /proc/self/status; umount {src}; umount -l {src}; cat {src}/secret.txt",
        )
    finally:
        runner.close()
    assert b"CapEff:\t0000000000000000" in out.stdout, out.stdout
    assert b"SRC content" not in out.stdout
    assert runner.hides_source


def test_isolation_namespace_is_refused_when_it_cannot_be_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from repomin.errors import UsageError

    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bwrap (bubblewrap) is not installed")
    with pytest.raises(UsageError, match="install bubblewrap"):
        HostRunner(base_dir=tmp_path, isolation="namespace")


def test_reduce_isolation_namespace_exits_2_without_bwrap(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from repomin.cli.main import cli

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("BUG\n")
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bwrap (bubblewrap) is not installed")
    args = ["reduce", str(src), "-o", str(tmp_path / "out"), "--command", "cat a.txt; exit 1"]
    args += ["--match", "BUG"]
    result = CliRunner().invoke(cli, [*args, "--isolation", "namespace", "--no-session"])
    assert result.exit_code == 2, result.output
    assert "install bubblewrap" in result.output
    docker = CliRunner().invoke(cli, [*args, "--isolation", "supervisor", "--backend", "docker"])
    assert docker.exit_code == 2 and "--isolation supervisor is for the host" in docker.output
