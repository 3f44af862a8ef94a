"""Safe limits by default: what a worker really gets, and what a runaway sample meets.

Every test here uses the runner's *defaults* (no ``memory``/``pids_limit``/size given), because
that is what the limits are for: one runaway sample must not fill the host's RAM or /dev/shm.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from repomin.errors import UsageError
from repomin.runners.base import RunRequest
from repomin.runners.docker_engine import host_memory
from repomin.runners.docker_limits import GIB, MIB, default_memory
from repomin.runners.scratch import mounts_below
from repomin.tree import Entry, Tree
from tests.docker._support import NOSHELL, has_image, run

pytestmark = pytest.mark.docker

ALL_DEFAULTS = ["memory", "pids_limit", "tmp_size", "work_size"]


@pytest.fixture(scope="module", params=["bind", "stream"])
def default_runner(request: pytest.FixtureRequest, module_runner: Any) -> Any:
    try:
        return module_runner(transport=request.param)
    except UsageError as exc:
        pytest.skip(f"the {request.param} transport is not available here: {exc}")


def worker_config(runner: Any) -> dict[str, Any]:
    """The HostConfig of a worker the runner started with its defaults.

    A worker the runner found unclean after a sample (its wipe or reap failed, as can happen
    on a loaded machine) is retired and its slot left empty until the next sample: so a
    sample is run until one leaves a worker behind, and any slot's worker will do.
    """
    outcomes = []
    for _ in range(3):
        outcome = run(runner, "true")
        outcomes.append(outcome)
        workers = [slot.worker for slot in runner._all_slots if slot.worker is not None]
        if workers:
            config: dict[str, Any] = runner.api.inspect_container(workers[0].cid)["HostConfig"]
            return config
    raise AssertionError(f"no sample left a worker behind: {outcomes}")


def options(text: str) -> set[str]:
    return set(text.split(","))


def mount_options(mountinfo: str, point: str) -> set[str]:
    """The per-mount and per-superblock options of ``point`` in a ``/proc/*/mountinfo`` text."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 9 and fields[4] == point:
            return options(fields[5]) | options(fields[-1])
    raise AssertionError(f"{point} is not mounted: {mountinfo}")


def test_the_defaults_are_in_docker_inspect_and_in_describe(default_runner: Any) -> None:
    info = default_runner.describe()
    expected_memory = default_memory(host_memory(default_runner.client), 1)
    assert info["docker_limit_defaults"] == ALL_DEFAULTS
    assert info["docker_memory_bytes"] == expected_memory
    assert info["docker_memory"] == f"{expected_memory // MIB}m"
    assert 256 * MIB <= expected_memory <= 2 * GIB
    assert info["docker_pids_limit"] == 512
    assert (info["docker_tmp_size"], info["docker_work_size"]) == ("512m", "1g")
    assert info["sample_isolation"] == "container"

    config = worker_config(default_runner)
    assert config["Memory"] == expected_memory
    assert config["MemorySwap"] == expected_memory  # no swap beyond the limit
    assert config["PidsLimit"] == 512
    assert config["ShmSize"] == 64 * MIB
    assert config["ReadonlyRootfs"] is True
    assert config["CapDrop"] == ["ALL"]
    assert config["SecurityOpt"] == ["no-new-privileges"]
    assert {"nosuid", "nodev", "size=512m"} <= options(config["Tmpfs"]["/tmp"])
    if default_runner.transport == "stream":
        assert {"nosuid", "nodev", "size=1g"} <= options(config["Tmpfs"]["/work"])
    else:
        # The bind source is a tmpfs of its own on the host, mounted nosuid,nodev with the size.
        (source,) = [m["Source"] for m in config["Mounts"] if m["Target"] == "/work"]
        assert mounts_below(Path(source)) == [source]
        host_view = mount_options(Path("/proc/self/mountinfo").read_text(), source)
        assert {"nosuid", "nodev", "size=1048576k"} <= host_view


def test_the_sample_sees_work_and_tmp_nosuid_nodev_and_sized(default_runner: Any) -> None:
    outcome = run(default_runner, "cat /proc/self/mountinfo")
    assert outcome.exit_code == 0, outcome
    seen = outcome.stdout.decode()
    for point, size in (("/work", "size=1048576k"), ("/tmp", "size=524288k")):
        assert {"nosuid", "nodev", size} <= mount_options(seen, point), point


def test_none_lifts_each_limit(make_runner: Any) -> None:
    runner = make_runner(memory="none", pids_limit="none", tmp_size="none", work_size="none")
    info = runner.describe()
    assert info["docker_limit_defaults"] == []
    assert (info["docker_memory"], info["docker_pids_limit"]) == (None, None)
    assert (info["docker_tmp_size"], info["docker_work_size"]) == (None, None)
    config = worker_config(runner)
    assert config["Memory"] == 0
    assert config["PidsLimit"] in (None, 0, -1)
    assert not any(o.startswith("size=") for o in options(config["Tmpfs"]["/tmp"]))
    assert {"nosuid", "nodev"} <= options(config["Tmpfs"]["/tmp"])


def available_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemAvailable in /proc/meminfo")


@pytest.mark.parametrize("target", ["/tmp", "/work"])
def test_writing_4_gb_is_stopped_and_is_a_resource_exhaustion(
    default_runner: Any, target: str
) -> None:
    before = available_memory()
    lowest = [before]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            lowest[0] = min(lowest[0], available_memory())
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        outcome = run(
            default_runner,
            f"dd if=/dev/zero of={target}/fill bs=1M count=4096 2>&1; echo rc=$?; "
            f"du -sm {target}/fill",
            timeout=120,
        )
    finally:
        done.set()
        watcher.join()
    assert outcome.infrastructure_error is None, outcome
    assert not outcome.timed_out
    assert outcome.resource_exhausted, outcome
    text = outcome.stdout.decode()
    assert "No space left on device" in text, text
    written_mib = int(text.split()[-2])
    assert written_mib <= 1024  # stopped at the filesystem's size, far below 4 GB
    # 4 GB in host RAM would take 3.7 GiB; the limits keep the drop below the 1 GiB tmpfs
    # plus what other processes on this machine do meanwhile (a generous 1.5 GiB).
    assert before - lowest[0] < int(2.5 * GIB), (before, lowest[0])
    assert run(default_runner, f"ls -A {target} | wc -l").stdout.strip() in (b"0", b"4")


def _static_euid_program(directory: Path) -> Path | None:
    """A static binary printing its effective uid (busybox drops setuid privileges itself)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    source = directory / "euid.c"
    source.write_text(
        "#include <stdio.h>\n#include <unistd.h>\n"
        'int main(void) { printf("%d\\n", (int)geteuid()); return 0; }\n'
    )
    binary = directory / "euid"
    built = subprocess.run(
        [compiler, "-static", "-O1", "-o", str(binary), str(source)], capture_output=True
    )
    return binary if built.returncode == 0 else None


def test_setuid_bits_cannot_be_used_in_work(make_runner: Any, tmp_path: Path) -> None:
    binary = _static_euid_program(tmp_path)
    if binary is None:
        pytest.skip("no C compiler with a static libc to build a setuid test program")
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        # Control: on a filesystem without nosuid the program does gain root.
        control = tmp_path / "control"
        shutil.copy(binary, control)
        control.chmod(0o4755)
        tmp_path.chmod(0o755)
        shown = subprocess.run(
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", str(control)],
            capture_output=True,
            text=True,
        )
        if shown.returncode == 0:
            assert shown.stdout.strip() == "0"
    try:
        runner = make_runner(transport="bind")
    except UsageError as exc:
        pytest.skip(f"a root-owned setuid file can only be planted through a bind mount: {exc}")
    result: list[Any] = []
    sample = threading.Thread(
        target=lambda: result.append(
            run(runner, "while [ ! -e go ]; do sleep 0.05; done; ls -l suid | cut -c1-10; ./suid")
        )
    )
    sample.start()
    bind_dir = runner._all_slots[0].worker.bind_dir
    deadline = time.monotonic() + 10
    while not (bind_dir / "README.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    # The tree is in place and the sample waits: plant a root-owned setuid program.
    planted = bind_dir / "suid"
    shutil.copy(binary, planted)
    planted.chmod(0o4755)
    (bind_dir / "go").touch()
    sample.join(15)
    assert result, "the sample did not finish"
    lines = result[0].stdout.decode().split()
    assert lines == ["-rwsr-xr-x", "65534"], result[0]


def test_a_shell_less_image_without_fresh_container_runs_one_container_per_sample(
    make_runner: Any,
) -> None:
    if not has_image(NOSHELL):
        pytest.skip(f"{NOSHELL} is missing; run docker/build-test-images.sh")
    runner = make_runner(image=NOSHELL)
    info = runner.describe()
    assert info["docker_strategy"] == "container-per-sample"
    assert info["docker_strategy_reason"] == "the image has no /bin/sh"
    outcome = run(runner, "busybox sh -c 'cat README.txt; exit 3'")
    assert outcome.exit_code == 3
    assert outcome.stdout == b"hello from the tree\n"


def test_a_shell_less_image_with_a_shell_strategy_is_a_usage_error(make_runner: Any) -> None:
    if not has_image(NOSHELL):
        pytest.skip(f"{NOSHELL} is missing; run docker/build-test-images.sh")
    with pytest.raises(UsageError, match=r"has no /bin/sh.*drop it"):
        make_runner(image=NOSHELL, strategy="agent")


def test_a_tree_larger_than_work_is_a_usage_error_not_an_engine_failure(make_runner: Any) -> None:
    runner = make_runner(work_size="1m")
    big = Tree.of({"big.bin": Entry("file", b"x" * (2 * MIB))})
    with pytest.raises(UsageError, match=r"more than --work-size 1m"):
        runner.run(big, RunRequest("true", {}, 10))
    assert run(runner, "cat README.txt").stdout == b"hello from the tree\n"
