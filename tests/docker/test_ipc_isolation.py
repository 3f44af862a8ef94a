"""IPC does not survive from one sample to the next in a reused worker container.

A worker container (agent or exec strategy) runs many samples in one IPC namespace, so what a
sample leaves there -- POSIX message queues (``/dev/mqueue``), System V shared memory,
semaphores and message queues, POSIX shared memory in ``/dev/shm`` -- would be visible to the
next sample. These tests leave one of each behind and look for them in the next sample of the
same worker: in the Python image (``ipcrm`` present, the objects are removed) and in the busybox
image (no ``ipcrm``: the worker is replaced instead).
"""

from __future__ import annotations

import platform
import struct
from typing import Any

import pytest

from repomin.runners.base import RunRequest
from repomin.tree import Entry, Tree
from tests.docker._support import PYTHON, has_image

pytestmark = pytest.mark.docker

LEAVE = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mq_open.restype = ctypes.c_int
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
libc.mq_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
q = libc.mq_open(b"/repomin-leak", os.O_CREAT | os.O_RDWR, 0o600, None)
assert q >= 0, os.strerror(ctypes.get_errno())
assert libc.mq_send(q, b"secret", 6, 0) == 0, os.strerror(ctypes.get_errno())
IPC_CREAT = 0o1000
assert libc.shmget(0x5EC2E7, 4096, IPC_CREAT | 0o666) >= 0
assert libc.semget(0x5EC2E8, 1, IPC_CREAT | 0o666) >= 0
assert libc.msgget(0x5EC2E9, IPC_CREAT | 0o666) >= 0
with open("/dev/shm/repomin-leak", "w") as f:
    f.write("secret")
print("left")
"""

#: What the next sample sees: every IPC object of its namespace (one line each) and /dev/shm.
LOOK = (
    "ls -A /dev/mqueue /dev/shm; "
    "for f in /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg; do "
    'tail -n +2 "$f"; done'
)
CLEAN = b"/dev/mqueue:\n\n/dev/shm:\n"

PY_TREE = Tree.of({"leave.py": Entry("file", LEAVE.encode())})


def _two_samples(runner: Any, tree: Tree, leave: str) -> tuple[Any, Any]:
    first = runner.run(tree, RunRequest(leave, {}, 30.0))
    second = runner.run(tree, RunRequest(LOOK, {}, 30.0))
    return first, second


@pytest.mark.parametrize("strategy", ["agent", "exec"])
def test_ipc_left_by_a_sample_is_gone_in_the_next(make_runner: Any, strategy: str) -> None:
    if not has_image(PYTHON):
        pytest.skip(f"{PYTHON} is missing; run docker/build-test-images.sh --python")
    runner = make_runner(image=PYTHON, memory="256m", strategy=strategy)
    first, second = _two_samples(runner, PY_TREE, "python3 -B leave.py")
    assert first.exit_code == 0, first
    assert first.stdout == b"left\n"
    assert second.exit_code == 0, second
    assert second.stdout == CLEAN
    # Removed, not hidden by a new container: the worker is the same one.
    assert first.extra["docker_container"] == second.extra["docker_container"]
    third = runner.run(PY_TREE, RunRequest("python3 -B leave.py", {}, 30.0))
    assert third.exit_code == 0 and third.stdout == b"left\n", third  # the same names again


@pytest.mark.parametrize("strategy", ["agent", "exec"])
def test_ipc_left_by_a_timed_out_sample_is_gone_in_the_next(
    make_runner: Any, strategy: str
) -> None:
    if not has_image(PYTHON):
        pytest.skip(f"{PYTHON} is missing; run docker/build-test-images.sh --python")
    runner = make_runner(image=PYTHON, memory="256m", strategy=strategy)
    first = runner.run(PY_TREE, RunRequest("python3 -B leave.py && sleep 100", {}, 3.0))
    second = runner.run(PY_TREE, RunRequest(LOOK, {}, 30.0))
    assert first.timed_out, first
    assert second.exit_code == 0, second
    assert second.stdout == CLEAN


def _leaver_elf() -> bytes:
    """A static x86-64 Linux program (no libc): System V shm, semaphore and message queue with
    ``IPC_PRIVATE``, a POSIX message queue ``repomin-leak``, then ``exit(0)``."""
    base = 0x400000
    flags = 0o1000 | 0o600  # IPC_CREAT | 0600

    def mov(reg: int, value: int) -> bytes:
        return bytes([0xB8 + reg]) + struct.pack("<I", value)

    eax, edx, esi = 0, 2, 6
    xor_edi, xor_r10, syscall = b"\x31\xff", b"\x45\x31\xd2", b"\x0f\x05"
    code = b"".join(
        [
            mov(eax, 29) + xor_edi + mov(esi, 4096) + mov(edx, flags) + syscall,  # shmget
            mov(eax, 64) + xor_edi + mov(esi, 1) + mov(edx, flags) + syscall,  # semget
            mov(eax, 68) + xor_edi + mov(esi, flags) + syscall,  # msgget
        ]
    )
    # mq_open("repomin-leak", O_RDWR | O_CREAT, 0600, NULL); the name follows the code.
    tail = mov(esi, 0o102) + mov(edx, 0o600) + xor_r10 + syscall
    tail += mov(eax, 60) + xor_edi + syscall  # exit(0)
    lea_len = 7
    mq = mov(eax, 240) + b"\x48\x8d\x3d" + struct.pack("<i", len(tail)) + tail
    assert len(mq) == 5 + lea_len + len(tail)
    code += mq + b"repomin-leak\0"
    header_size = 64 + 56
    entry = base + header_size
    elf = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    elf += struct.pack("<HHIQQQIHHHHHH", 2, 0x3E, 1, entry, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    size = header_size + len(code)
    elf += struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)
    return elf + code


@pytest.mark.parametrize("strategy", ["agent", "exec"])
@pytest.mark.parametrize("timed_out", [False, True])
def test_ipc_in_an_image_without_ipcrm_replaces_the_worker(
    make_runner: Any, strategy: str, timed_out: bool
) -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the IPC-leaving test program is x86-64 machine code")
    runner = make_runner(memory="64m", strategy=strategy)  # busybox: a shell, no ipcrm
    tree = Tree.of({"leave": Entry("file", _leaver_elf(), 0o755)})
    leave = "./leave && echo left" + (" && sleep 100" if timed_out else "")
    first = runner.run(tree, RunRequest(leave, {}, 3.0 if timed_out else 30.0))
    second = runner.run(tree, RunRequest(LOOK, {}, 30.0))
    assert first.stdout == b"left\n", first
    assert first.infrastructure_error is None
    assert first.timed_out == timed_out
    assert second.exit_code == 0, second
    assert second.stdout == CLEAN
    assert first.extra["docker_container"] != second.extra["docker_container"]
