"""Host scratch directories of both backends: who owns them, and reaping those of dead runs.

Every runner keeps the trees it hands to samples in one directory per process inside
:func:`private_root`: ``repomin-<euid>`` under :func:`scratch_parent` (tmpfs when ``/dev/shm`` is
writable), created ``0700`` and checked with ``lstat`` every time it is used -- a directory, not a
symlink, owned by the effective user, no group or other bits. A root that fails the check (e.g.
another local user made it first) is never used: the runner then works in a fresh private
directory and nothing is reaped (a warning says so). A run killed with SIGKILL cannot remove its
directory, so the next run of *either* backend calls :func:`reap_stale_scratch`, which removes
every ReproMin scratch directory in the private root whose owner is gone:

- ``repomin-docker-*`` (Docker runner): the owner is recorded in ``owner.json`` (host, pid and
  the pid's kernel start time, so a reused pid is not mistaken for the owner). Tmpfs mounts
  below it (the per-worker ``/work`` mounts) are detached before the directory is removed.
- ``repomin-<pid>-*`` (host runner): handed to :func:`repomin.runners.sandbox.reap_stale`,
  which first kills what the dead run's samples left running (their recorded process groups)
  and then removes the directory. The host runner calls :func:`reap_stale_scratch` at start,
  so either backend reaps what the other left.

Directories of live runs and of other hosts are never touched, nor any entry that fails the
ownership check. Nothing is reaped in shared directories (``/dev/shm``, the system temporary
directory): another local user can write there.

**Sinks** (:func:`make_sink`): directories a sample writes for ReproMin (the trace log, the
carve capture) must be visible to the sample, so they live in the system temporary directory
(``0700``, this user's). Stale ones are only removed (never used to kill anything), and only
when owned by this user; their files are read with :func:`read_regular` (no symlinks, no FIFOs,
bounded).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import logging
import os
import re
import shutil
import socket
import stat
import tempfile
from pathlib import Path

from repomin.runners import sandbox
from repomin.runners.sandbox import owned_entry, trusted_dir

log = logging.getLogger(__name__)

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


_fallback: list[Path] = []


def private_root(parent: Path | None = None) -> Path:
    """ReproMin's scratch root for this effective user: ``<parent>/repomin-<euid>`` (``0700``).

    When that path exists but is not trustworthy (:func:`trusted_dir`), a fresh private
    directory is used instead for this process (nothing is reaped there) and a warning names
    the path to remove."""
    base = parent or scratch_parent()
    path = base / f"repomin-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if trusted_dir(path):
        return path
    if parent is None and _fallback:
        return _fallback[0]
    fresh = Path(tempfile.mkdtemp(prefix=f"repomin-{os.geteuid()}.", dir=base))
    if parent is None:
        _fallback.append(fresh)
    log.warning(
        "%s is not a private directory of this user (owner, mode or a symlink): samples of "
        "dead runs cannot be reaped until it is removed; using %s",
        path,
        fresh,
    )
    return fresh


def make_scratch(prefix: str, parent: Path | None = None) -> Path:
    """A new private scratch directory ``<private root>/<prefix>XXXX`` with its owner recorded
    (``parent``: where the private root lies, default :func:`scratch_parent`)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=private_root(parent)))
    (path / OWNER_FILE).write_text(json.dumps(owner_record()))
    return path


def make_sink(prefix: str) -> Path:
    """A new directory a sample writes for ReproMin, in the system temporary directory
    (``0700``); stale ones of this user with the same prefix are removed first."""
    temp = Path(tempfile.gettempdir())
    remove_stale_sinks(temp, prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=temp))


def remove_stale_sinks(parent: Path, prefix: str) -> int:
    """Remove ``<parent>/<prefix><pid>-*`` directories of dead processes that this effective
    user owns (never killing anything); returns how many."""
    removed = 0
    with contextlib.suppress(OSError):
        for entry in parent.glob(f"{prefix}*-*"):
            pid_text = entry.name[len(prefix) :].split("-")[0]
            if not pid_text.isdigit() or int(pid_text) == os.getpid():
                continue
            if not trusted_dir(entry) or _pid_running(int(pid_text)):
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_regular(path: Path, limit: int) -> bytes | None:
    """Up to ``limit`` bytes of ``path`` when it is a regular file (``O_NOFOLLOW``,
    ``O_NONBLOCK``, checked with ``fstat``): a symlink, FIFO or device a sample put there reads
    as missing (``None``) instead of leaking another file or blocking."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _is_stale(path: Path) -> bool:
    if not owned_entry(path / OWNER_FILE):
        return False  # not a record this user wrote: not ours to judge
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


def reap_stale_scratch(roots: list[Path] | None = None) -> int:
    """Remove scratch directories of dead runs of either backend; returns how many.

    ``roots`` are private roots (default: :func:`private_root`); a root that is not
    :func:`trusted_dir` is skipped, as is every entry in it that is not this user's."""
    if roots is None:
        roots = [private_root()]
    removed = 0
    for root in roots:
        if not trusted_dir(root):
            continue
        host_dirs = set(_host_dirs(root))
        if host_dirs:
            sandbox.reap_stale(root, "repomin-")
            removed += sum(1 for path in host_dirs if not path.exists())
        with contextlib.suppress(OSError):
            for path in root.glob(f"{DOCKER_PREFIX}*"):
                if not trusted_dir(path):
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
