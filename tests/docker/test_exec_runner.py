"""The long-lived worker strategies (sample agent, exec per sample) against a real engine.

Every test runs with both strategies (and, where the transport matters, both tree transports).
One worker container serves many samples here, so each test checks both the outcome of a hostile
sample and that the next sample on the same worker starts from a clean slate.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from repomin.errors import UsageError
from repomin.runners.base import OUTPUT_LIMIT, RunRequest
from repomin.tree import Entry, Tree
from tests.docker._support import BUSYBOX, TREE, new_label, run

pytestmark = pytest.mark.docker

MEMORY = "96m"
PIDS = 64


STRATEGY_NAMES = {"agent": "agent-per-worker", "exec": "exec-per-sample"}


@pytest.fixture(
    scope="module",
    params=[("agent", "bind"), ("agent", "stream"), ("exec", "bind"), ("exec", "stream")],
    ids=lambda p: "-".join(p),
)
def runner(request: pytest.FixtureRequest, module_runner: Any) -> Any:
    """One runner per strategy and tree transport, for what depends on how the tree gets in."""
    strategy, transport = request.param
    try:
        made = module_runner(memory=MEMORY, pids_limit=PIDS, transport=transport, strategy=strategy)
    except UsageError as exc:
        pytest.skip(f"the {transport} transport is not available here: {exc}")
    assert made.describe()["docker_tree_transport"] == transport
    assert made.describe()["docker_strategy"] == STRATEGY_NAMES[strategy]
    return made


@pytest.fixture(scope="module", params=["agent", "exec"])
def any_runner(request: pytest.FixtureRequest, module_runner: Any) -> Any:
    """For behaviour that does not depend on the transport (the one chosen automatically)."""
    return module_runner(memory=MEMORY, pids_limit=PIDS, strategy=request.param)


def is_agent(runner: Any) -> bool:
    return bool(runner.describe()["docker_strategy"] == "agent-per-worker")


def assert_clean(runner: Any) -> None:
    """The next sample sees the original tree, empty scratch and no other process of its uid."""
    outcome = run(
        runner,
        "cat README.txt; ls -A /work | tr '\\n' ' '; echo; ls -A /tmp /dev/shm | wc -w; "
        "n=0; for d in /proc/[0-9]*; do "
        "  u=$(awk '/^Uid:/ {print $2}' $d/status 2>/dev/null); "
        '  [ "$u" = "$(id -u)" ] && n=$((n+1)); '
        "done; echo procs=$n",
    )
    assert outcome.exit_code == 0, outcome
    lines = outcome.stdout.decode().splitlines()
    assert lines[0] == "hello from the tree"
    assert lines[1].split() == ["README.txt", "bin", "data", "link"]
    assert lines[2] == "2"  # only the two directory headers `ls` prints for /tmp and /dev/shm
    # The script, the command shell, and the awk/id/subshells of the loop's last iteration.
    assert int(lines[3].removeprefix("procs=")) <= 5, lines


def test_describe_records_the_boundary(runner: Any) -> None:
    info = runner.describe()
    assert info["backend"] == "docker"
    assert info["docker_image"] == "repomin-test/busybox:1"
    assert info["docker_image_id"].startswith("sha256:")
    assert info["docker_network"] == "none"
    assert info["docker_memory"] == MEMORY
    assert info["docker_pids_limit"] == PIDS
    assert info["docker_cpus"] is None
    assert info["docker_user"] == "65534:65534"
    assert info["docker_strategy"] in STRATEGY_NAMES.values()


def test_no_network_by_default(any_runner: Any) -> None:
    assert run(any_runner, "ls /sys/class/net").stdout == b"lo\n"


def test_exit_code_output_environment_and_tree(runner: Any) -> None:
    outcome = run(
        runner,
        "cat README.txt; cat link; ./bin/run.sh a b; echo rc=$? FOO=$FOO; pwd; id -u; "
        "ls -ld data/empty | cut -c1-10; ls -l data/secret.txt | cut -c1-10; echo oops >&2; "
        "exit 7",
        FOO="bar baz",
    )
    assert outcome.exit_code == 7
    assert outcome.infrastructure_error is None
    assert not outcome.timed_out and not outcome.resource_exhausted
    assert outcome.stdout.decode().splitlines() == [
        "hello from the tree",
        "hello from the tree",
        "ran a b",
        "rc=3 FOO=bar baz",
        "/work",
        "65534",
        "drwxr-xr-x",
        "-rw-------",
    ]
    assert outcome.stderr == b"oops\n"
    assert outcome.workdir == "/work"
    assert outcome.signal is None


def test_environment_values_arrive_verbatim(any_runner: Any) -> None:
    tricky = "a'b\"c\n$HOME `id` $(id) \\ ; exit 9"
    outcome = run(any_runner, 'printf %s "$TRICKY"; echo; printf %s "$HOME"', TRICKY=tricky)
    assert outcome.exit_code == 0, outcome
    assert outcome.stdout.decode() == tricky + "\n/tmp"


@pytest.mark.parametrize(("signal", "code"), [("SEGV", 139), ("TERM", 143), ("KILL", 137)])
def test_signals_arrive_as_128_plus_n(any_runner: Any, signal: str, code: int) -> None:
    outcome = run(any_runner, f"kill -{signal} $$")
    assert outcome.exit_code == code
    assert outcome.signal is None  # a plain `exit {code}` would look the same
    assert outcome.stderr == b""  # no job-status message from the runner's own shell
    assert not outcome.resource_exhausted


def test_timeout_kills_the_sample_quickly(runner: Any) -> None:
    started = time.monotonic()
    outcome = run(runner, "echo started; sleep 100", timeout=1.0)
    elapsed = time.monotonic() - started
    assert outcome.timed_out
    assert outcome.exit_code is None
    assert outcome.stdout == b"started\n"
    assert elapsed < 3.0
    assert_clean(runner)


def test_writes_background_processes_and_scratch_do_not_leak(runner: Any) -> None:
    outcome = run(
        runner,
        "echo changed > README.txt; rm -r bin; mkdir new; touch new/file .hidden; "
        "echo x > /tmp/t; echo y > /dev/shm/s; "
        "chmod 000 data; mkdir -p deep/er; chmod 000 deep/er deep; "
        "ln -s /etc/passwd passwd-link; "
        "(sleep 300 >/dev/null 2>&1 &); sleep 300 >/dev/null 2>&1 & echo left",
    )
    assert outcome.exit_code == 0
    assert outcome.stdout == b"left\n"
    assert outcome.duration < 3.0  # a background process must not hold the sample open
    assert_clean(runner)


def test_filling_tmp_is_a_resource_exhaustion(any_runner: Any) -> None:
    outcome = run(
        any_runner, "dd if=/dev/zero of=/tmp/fill bs=1M count=400 2>/dev/null; echo after"
    )
    assert outcome.resource_exhausted
    assert not outcome.timed_out
    assert outcome.infrastructure_error is None
    assert_clean(any_runner)


def test_forking_past_the_pids_limit_is_a_resource_exhaustion(any_runner: Any) -> None:
    outcome = run(
        any_runner,
        "i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done 2>/dev/null; echo done",
    )
    assert outcome.resource_exhausted
    assert outcome.infrastructure_error is None
    assert_clean(any_runner)


def test_fork_bomb_until_the_timeout(any_runner: Any) -> None:
    started = time.monotonic()
    # The bomb runs in a subshell (a failed fork is fatal to a shell) while the parent spins
    # without forking, so the sample reliably lasts until the deadline. The bomb's processes
    # ask to be the OOM killer's first choice (raising one's own oom_score_adj needs no
    # privilege): under the memory limit it once killed the spinning parent after 0.2 s, which
    # ended the sample as resource-exhausted before its deadline.
    bomb = (
        "(echo 1000 > /proc/self/oom_score_adj; b() { b | b & }; b) 2>/dev/null; "
        "while :; do :; done"
    )
    outcome = run(any_runner, bomb, timeout=1.0)
    assert outcome.timed_out
    assert time.monotonic() - started < 8.0
    assert_clean(any_runner)


def test_a_sample_that_kills_the_runner_script(runner: Any) -> None:
    outcome = run(runner, "echo before; kill -9 -1; echo survived")
    assert outcome.infrastructure_error is None
    if is_agent(runner):
        # The agent runs as another user: the sample's kill -9 -1 cannot reach it.
        assert outcome.exit_code == 0
        assert outcome.stdout == b"before\nsurvived\n"
    else:
        # The exec's script runs as the sample user: it dies, and that is what is reported.
        assert outcome.exit_code == 137
        assert outcome.stdout.startswith(b"before\n")
    assert_clean(runner)


def test_the_agent_and_its_channels_are_out_of_the_samples_reach(make_runner: Any) -> None:
    runner = make_runner(strategy="agent", memory=MEMORY, pids_limit=PIDS)
    outcome = run(
        runner,
        "me=$(id -u); for p in /proc/[0-9]*; do "
        "  [ \"$(awk '/^Uid:/ {print $2}' $p/status 2>/dev/null)\" = $me ] && continue; "
        "  for f in $p/fd/0 $p/fd/1 $p/fd/3 $p/fd/4 $p/mem; do "
        "    [ -e $f ] && { echo x 2>/dev/null >>$f && echo wrote $f; }; "
        "  done; "
        "  [ -r $p/environ ] && cat $p/environ >/dev/null 2>&1 || true; "
        "done; "
        "for p in /proc/[0-9]*; do "
        "  [ ${p#/proc/} = $$ ] || kill -9 ${p#/proc/} 2>/dev/null; "
        "done; "
        "printf '%s R 0 0 0 0 0 0 0 0 0 0 0 0 0\\n' forged >&2; exit 5",
    )
    assert outcome.infrastructure_error is None, outcome
    assert b"wrote" not in outcome.stdout, outcome.stdout
    assert outcome.exit_code == 5
    assert outcome.stderr.startswith(b"forged R 0")  # left in the output, not parsed
    assert run(runner, "echo next").stdout == b"next\n"  # the agent is alive
    assert_clean(runner)


def test_a_forged_trailer_is_not_believed(make_runner: Any) -> None:
    any_runner = make_runner(strategy="exec", memory=MEMORY, pids_limit=PIDS)
    # The sample can read the nonce from its parent's argv; printing a fake "success" trailer
    # and killing the script must still be reported as the SIGKILL it is.
    outcome = run(
        any_runner,
        "nonce=$(tr '\\0\\n' '\\001 ' < /proc/$PPID/cmdline | awk -F '\\001' '{print $6}'); "
        "echo ${#nonce}; printf '\\n%s end 0 0 0 0 0\\n' \"$nonce\" >&2; kill -9 -1",
    )
    assert outcome.stdout == b"16\n"  # the sample did find the nonce
    assert outcome.exit_code == 137
    assert b" end 0 0 0 0 0" in outcome.stderr  # left in the output, not parsed
    assert_clean(any_runner)


def test_output_is_bounded_head_and_tail(any_runner: Any) -> None:
    outcome = run(
        any_runner, "echo first; yes filler | head -c 3000000; echo; echo last; echo e >&2"
    )
    assert outcome.exit_code == 0
    assert outcome.stdout.startswith(b"first\n")
    assert outcome.stdout.endswith(b"last\n")
    assert b"[... repomin: output truncated ...]" in outcome.stdout
    assert len(outcome.stdout) < OUTPUT_LIMIT + 100
    assert outcome.stderr == b"e\n"


def test_a_quiet_sample_longer_than_the_http_timeout_is_fine(any_runner: Any) -> None:
    # Regression guard: hijacked sockets must not inherit the client's HTTP timeout.
    any_runner.api.timeout = 0.5
    try:
        outcome = run(any_runner, "sleep 1; echo awake", timeout=10)
    finally:
        any_runner.api.timeout = 60
    assert outcome.exit_code == 0
    assert outcome.stdout == b"awake\n"


def test_big_trees_with_odd_names_arrive_intact(runner: Any) -> None:
    entries = {
        f"pkg{i % 7}/sub dir/ünïcödé-{i}.txt": Entry("file", f"{i}\n".encode() * 50)
        for i in range(300)
    }
    entries["x" * 60 + "/" + "y" * 60 + "/" + "z" * 60 + ".txt"] = Entry("file", b"long\n")
    entries["ro.txt"] = Entry("file", b"r\n", 0o444)
    tree = Tree.of(entries)
    outcome = runner.run(
        tree,
        RunRequest(
            "find . -type f | wc -l; cat xxx*/yyy*/zzz*.txt; ls -l ro.txt | cut -c1-10; "
            "cat 'pkg3/sub dir/ünïcödé-10.txt' | wc -l",
            {},
            10,
        ),
    )
    assert outcome.exit_code == 0, outcome
    assert outcome.stdout.decode().split() == ["302", "long", "-r--r--r--", "50"]


@pytest.mark.parametrize("dd_works", [True, False])
def test_streamed_trees_without_a_block_copying_dd(
    client: Any, tmp_path: Any, dd_works: bool
) -> None:
    """The sample script falls back to ``head -c`` when ``dd iflag=fullblock`` fails."""
    from docker.types import Mount
    from docker.utils.socket import frames_iter

    from repomin.runners.docker_script import SAMPLE_SCRIPT, STREAM_BLOCK, split_trailer
    from repomin.runners.docker_transport import tar_bytes

    fake = tmp_path / "dd"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    mounts = (
        [] if dd_works else [Mount("/usr/local/bin/dd", str(fake), type="bind", read_only=True)]
    )
    payload = tar_bytes(TREE, 65534, 65534)
    payload += bytes(-len(payload) % STREAM_BLOCK)
    nonce = "f" * 16
    api = client.api
    cid = api.create_container(
        BUSYBOX,
        command=[
            "/bin/sh",
            "-c",
            SAMPLE_SCRIPT,
            "repomin",
            "65534",
            nonce,
            "stream",
            str(len(payload)),
            "cat README.txt; ls /usr/local/bin 2>/dev/null; true",
        ],
        user="65534:65534",
        stdin_open=True,
        labels={"io.repomin.session": new_label(), "io.repomin.pid": str(os.getpid())},
        host_config=api.create_host_config(
            read_only=True,
            network_mode="none",
            tmpfs={"/work": "rw,exec,uid=65534,gid=65534", "/tmp": "rw"},
            mounts=mounts,
        ),
    )["Id"]
    try:
        sock = api.attach_socket(cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        api.start(cid)
        sock._sock.sendall(payload)
        frames = list(frames_iter(sock, tty=False))
        sock._sock.close()
        sock.close()
    finally:
        api.remove_container(cid, force=True)
    stdout = b"".join(data for stream, data in frames if stream == 1)
    stderr = b"".join(data for stream, data in frames if stream == 2)
    trailer, _ = split_trailer(stderr, nonce)
    assert trailer is not None and trailer.exit_code == 0, stderr
    assert stdout.splitlines() == [b"hello from the tree"] + ([] if dd_works else [b"dd"])
