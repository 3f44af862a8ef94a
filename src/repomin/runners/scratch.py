"""Host scratch directories of both backends: who owns them, and reaping those of dead runs.

Every runner keeps the trees it hands to samples in one directory per process under
:func:`scratch_parent` (tmpfs when ``/dev/shm`` is writable). A run killed with SIGKILL cannot
remove its directory, so the next run of *either* backend calls :func:`reap_stale_scratch`,
which removes every ReproMin scratch directory whose owner is gone:

- ``repomin-docker-*`` (Docker runner): the owner is recorded in ``owner.json`` (host, pid and
  the pid's kernel start time, so a reused pid is not mistaken for the owner). Tmpfs mounts
  below it (the per-worker ``/work`` mounts) are detached before the directory is removed.
- ``repomin-<pid>-*`` (host runner): handed to :func:`repomin.runners.sandbox.reap_stale`,
  which first kills what the dead run's samples left running (their recorded process groups)
  and then removes the directory. The host runner calls :func:`reap_stale_scratch` at start,
  so either backend reaps what the other left.

Directories of live runs and of other hosts are never touched.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path

from repomin.runners import sandbox

OWNER_FILE = "owner.json"
#: Prefix of the Docker runner's scratch directories; the host runner's are ``repomin-PID-*``.
DOCKER_PREFIX = "repomin-docker-"
_HOST_NAME = re.compile(r"repomin-\d+-.+")
_MNT_DETACH = 2


def scratch_parent() -> Path:
    """Where sample trees live: tmpfs when available (copies to disk cost seconds)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return Path(tempfile.gettempdir())


def process_start(pid: int) -> str:
    """The kernel's start time of ``pid`` (guards against pid reuse), or ``""``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]


def owner_record() -> dict[str, str]:
    """This process as an owner: host name, pid and the pid's start time."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": str(pid), "pid_start": process_start(pid)}


def owner_alive(host: str, pid: int, start: str) -> bool:
    """Whether the run that recorded ``host/pid/start`` may still be running.

    Runs on other hosts are assumed alive: nothing here can tell.
    """
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not start or process_start(pid) in ("", start)


def make_scratch(prefix: str, parent: Path | None = None) -> Path:
    """A new private scratch directory ``<parent>/<prefix>XXXX`` with its owner recorded."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent or scratch_parent()))
    (path / OWNER_FILE).write_text(json.dumps(owner_record()))
    return path


def _is_stale(path: Path) -> bool:
    try:
        owner = json.loads((path / OWNER_FILE).read_text())
        return not owner_alive(
            str(owner["host"]), int(owner["pid"]), str(owner.get("pid_start", ""))
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False  # no readable owner: not ours to judge


def mounts_below(path: Path) -> list[str]:
    """Mount points at or below ``path`` (deepest first), from ``/proc/self/mountinfo``."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    root = os.path.realpath(path)
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) < 5:
            continue
        point = fields[4].encode().decode("unicode_escape")  # octal escapes such as \040
        if point == root or point.startswith(root + "/"):
            found.append(point)
    return sorted(found, key=len, reverse=True)


def detach(point: str) -> bool:
    """Lazily unmount ``point`` (``umount2(MNT_DETACH)``); whether it worked."""
    libc = _libc()
    if libc is None:
        return False
    return int(libc.umount2(os.fsencode(point), _MNT_DETACH)) == 0


def remove_tree(path: Path) -> None:
    """Detach any mount below ``path``, then remove it (never following symlinks)."""
    for point in mounts_below(path):
        detach(point)
    shutil.rmtree(path, ignore_errors=True)


def reap_stale_scratch(parents: list[Path] | None = None) -> int:
    """Remove scratch directories of dead runs of either backend; returns how many.

    ``parents`` defaults to :func:`scratch_parent` and the system temporary directory.
    """
    if parents is None:
        parents = list(dict.fromkeys([scratch_parent(), Path(tempfile.gettempdir())]))
    removed = 0
    for parent in parents:
        host_dirs = set(_host_dirs(parent))
        if host_dirs:
            sandbox.reap_stale(parent, "repomin-")
            removed += sum(1 for path in host_dirs if not path.exists())
        with contextlib.suppress(OSError):
            for path in parent.glob(f"{DOCKER_PREFIX}*"):
                if path.is_symlink() or not path.is_dir():
                    continue
                if _is_stale(path):
                    remove_tree(path)
                    removed += 1
    return removed


def _host_dirs(parent: Path) -> list[Path]:
    with contextlib.suppress(OSError):
        return [p for p in parent.glob("repomin-*-*") if _HOST_NAME.fullmatch(p.name)]
    return []


_LIBC: list[ctypes.CDLL | None] = []


def _libc() -> ctypes.CDLL | None:
    if not _LIBC:
        name = ctypes.util.find_library("c")
        try:
            _LIBC.append(ctypes.CDLL(name or "libc.so.6", use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


def mount_tmpfs(point: Path, options: str) -> str | None:
    """Mount a ``nosuid,nodev`` tmpfs on ``point``; ``None`` on success, else why not."""
    libc = _libc()
    if libc is None:
        return "the C library cannot be loaded"
    ms_nosuid, ms_nodev, ms_noatime = 2, 4, 1024
    rc = libc.mount(
        b"repomin",
        os.fsencode(point),
        b"tmpfs",
        ctypes.c_ulong(ms_nosuid | ms_nodev | ms_noatime),
        options.encode(),
    )
    if rc == 0:
        return None
    err = ctypes.get_errno()
    return f"cannot mount a tmpfs on {point} ({os.strerror(err)})"
