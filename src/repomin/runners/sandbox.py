"""The host sample's boundary: what a sample cannot see, and why it cannot outlive ReproMin.

**Namespace** (preferred, when ``bwrap`` works here): every sample runs as

    bwrap --dev-bind / / --proc /proc --unshare-pid --as-pid-1 --die-with-parent --cap-drop ALL
          [--ro-bind HOME HOME [--bind TEMP TEMP]]
          --tmpfs HIDDEN --remount-ro HIDDEN ... --tmpfs PRIVATE --bind OWN OWN
          --remount-ro PRIVATE --info-fd N -- PYTHON -I -S -c SUPERVISOR ...

(``--ro-bind HOME HOME`` only with ``--home inherit``: the user's HOME read-only, the system
temporary directory bound back writable when it lies inside it; SRC and the other hidden
directories are covered afterwards, so they stay hidden when they lie under HOME.)

The whole filesystem stays visible at its own paths (tools, compilers, the sample's own copy),
except SRC, OUTPUT, its sidecar and the session directory, each covered by an empty read-only
tmpfs: a sample that reaches SRC through an absolute path finds nothing there, exactly as after
SRC is moved away. ReproMin's private scratch root (every runner's directory, the process
records, the other samples' directories) is covered the same way, and only the sample's own
directory is bound back at its path: a sample cannot see or write its siblings or the records
reaping trusts. ``--cap-drop ALL`` leaves the sample no capability even when ReproMin runs as
root, so it cannot unmount what hides SRC (bwrap also sets ``no_new_privs``). The private PID
namespace (with its own ``/proc``) gives the kernel's PID-1 rule: when the namespace's init dies,
every process in it dies, including grandchildren that called ``setsid``. ``--die-with-parent``
ties init to bwrap and bwrap to ReproMin
(``PR_SET_PDEATHSIG``), so SIGKILL of ReproMin kills the whole sample at once.

**Supervisor** (fallback, no namespace): the sample's group leader is a small Python supervisor
that sets ``PR_SET_PDEATHSIG`` on itself and, when ReproMin dies, kills its own process group
(the command and every descendant that did not leave the group). SRC stays visible; the caller
checks the traced run's log for accesses under SRC instead (see :mod:`repomin.analysis.trace`).
The supervisor makes itself non-dumpable, so another sample of an unprivileged user cannot open
its status pipe through ``/proc``; but a sample runs as the same user as ReproMin and its
siblings, so supervisor mode contains accidents, not attacks (see SECURITY.md).

In both modes the supervisor reports the command's raw wait status through a pipe, so a signal
death (``-11``) stays distinguishable from ``exit 139`` although bwrap itself reports ``128+N``.

**CPU time**: everything the sample starts is reaped below the process ReproMin waits for with
``wait4`` -- the supervisor is the namespace's init (``--as-pid-1``) or a child subreaper -- so
that process's rusage is the sample's CPU time. At a timeout ReproMin sends the supervisor
SIGUSR1 (:func:`signal_child`, in the namespace at the init PID bwrap reports on ``--info-fd``):
it kills the rest of the sample, reaps it and exits, instead of dying with it unreaped. The
supervisor restores SIGPIPE and SIGXFSZ (ignored by Python) to their defaults for the command.

**Reaping**: every live sample is recorded as ``live/<pgid>`` (its process group and the
leader's start time) in the runner's directory, whose ``owner`` file holds ReproMin's PID and
start time. Runner directories live only in the private root of
:func:`repomin.runners.scratch.private_root` (``0700``, owned by the effective user, checked with
``lstat`` every time). A new runner removes directories of dead owners there after killing the
processes of their recorded groups that started no earlier than the recorded time (never by
name), and only processes of its own effective user; a directory or record that is not owned
by that user, is a symlink or has looser modes is never acted on.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

#: Values of ``execution.sample_isolation``.
ISOLATION_MODES = ("namespace", "supervisor")

_SUPERVISOR = r"""
import os, signal, sys, time
fd, parent, group = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "group"
argv = sys.argv[4:]
stopping = []
def _kill_rest():
    if os.getpid() == 1:  # the namespace's init: -1 is every other process in it
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        return 0
    me, pg, alive = os.getpid(), os.getpgrp(), 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/" + name + "/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            if int(fields[2]) == pg and fields[0] not in "ZX":
                alive += 1
                os.kill(int(name), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass
    return alive
def _stop(signum, frame):
    stopping.append(signum)
    for _ in range(200):
        if not _kill_rest():
            return
signal.signal(signal.SIGUSR1, _stop)
if group:
    def _die(signum, frame):
        os.killpg(0, signal.SIGKILL)
    signal.signal(signal.SIGUSR2, _die)
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGUSR2))  # PR_SET_PDEATHSIG
    libc.prctl(4, 0)  # PR_SET_DUMPABLE 0: siblings cannot open this status pipe via /proc
    libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans are reaped here, their CPU time counts
    if os.getppid() != parent:
        _die(0, None)
pid = os.fork()
if pid == 0:
    os.close(fd)
    for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
status = 127 << 8
while True:
    try:
        got, st = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    if got == pid:
        status = st
        break
if stopping:
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                _kill_rest()
                time.sleep(0.01)
        except ChildProcessError:
            break
os.write(fd, b"%d\n" % status)
os._exit(0)
"""

_probe_lock = threading.Lock()
_probe_result: dict[str, str | None] = {}


def bwrap_problem() -> str | None:
    """None when ``bwrap`` can make the sample namespace here, else why not (cached)."""
    with _probe_lock:
        if "bwrap" not in _probe_result:
            _probe_result["bwrap"] = _probe_bwrap()
        return _probe_result["bwrap"]


def _probe_bwrap() -> str | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap (bubblewrap) is not installed"
    probe = tempfile.mkdtemp(prefix="repomin-probe-")
    try:
        Path(probe, "visible").write_text("")
        # SRC-like directories are hidden, /proc is the namespace's, and no capability is left.
        check = (
            f"test ! -e {probe}/visible && test -d /proc/self && while read -r k v; do "
            'case "$k$v" in CapEff:*[1-9a-f]*) exit 3;; esac; done < /proc/self/status'
        )
        argv = [exe, *_namespace_flags([Path(probe)]), "--", "/bin/sh", "-c", check]
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return "bwrap cannot create a namespace here" + (f": {detail[-1][:200]}" if detail else "")
    return None


def _namespace_flags(
    hidden: Sequence[Path],
    private: Path | None = None,
    own: Path | None = None,
    read_only: Sequence[Path] = (),
    writable: Sequence[Path] = (),
) -> list[str]:
    """bwrap's flags: ``read_only`` directories (the user's HOME with ``--home inherit``) bound
    read-only at their paths, ``writable`` ones inside them bound back writable, then
    ``hidden`` directories covered by empty read-only tmpfs mounts, and ``private`` (ReproMin's
    scratch root) covered too except ``own`` (the sample's directory). The read-only binds come
    first: a bind's source is the real file system, so a later one would uncover a hidden
    directory that lies inside it (SRC under HOME)."""
    flags = ["--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--as-pid-1"]
    flags += ["--die-with-parent", "--cap-drop", "ALL"]
    for path in read_only:
        flags += ["--ro-bind", str(path), str(path)]
    for path in writable:
        flags += ["--bind", str(path), str(path)]
    for path in hidden:
        flags += ["--tmpfs", str(path), "--remount-ro", str(path)]
    if private is not None:
        flags += ["--tmpfs", str(private)]
        if own is not None:
            flags += ["--bind", str(own), str(own)]
        flags += ["--remount-ro", str(private)]
    return flags


def hidden_paths(candidates: Sequence[Path], keep_visible: Sequence[Path]) -> list[Path]:
    """The existing directories among ``candidates`` (resolved, deduplicated, outermost
    first), minus any that contain a path in ``keep_visible`` (the sample's own directory)."""
    found: list[Path] = []
    for raw in candidates:
        try:
            path = raw.resolve()
        except OSError:
            continue
        if not path.is_dir() or path == Path("/"):
            continue
        if any(v == path or path in v.parents for v in keep_visible):
            continue
        if any(f == path or f in path.parents for f in found):
            continue
        found = [f for f in found if path not in f.parents]
        found.append(path)
    return sorted(found)


def sample_argv(
    command: Sequence[str],
    *,
    status_fd: int,
    namespace: bool,
    hidden: Sequence[Path],
    info_fd: int | None = None,
    private: Path | None = None,
    own: Path | None = None,
    read_only: Sequence[Path] = (),
    writable: Sequence[Path] = (),
) -> list[str]:
    """The argv that runs ``command`` supervised, in the namespace when ``namespace`` (where
    bwrap writes the namespace's init PID, as this process sees it, to ``info_fd``; ``private``
    is hidden from the sample except its ``own`` directory; ``read_only`` and ``writable``: see
    :func:`_namespace_flags`)."""
    parent = os.getpid()
    python = [sys.executable, "-I", "-S", "-c", _SUPERVISOR, str(status_fd)]
    if not namespace:
        return [*python, str(parent), "group", *command]
    bwrap = shutil.which("bwrap") or "bwrap"
    # Inside the namespace the supervisor is PID 1 (--as-pid-1: bwrap reaps it, so its CPU
    # time and that of everything it reaped reach this process); --die-with-parent ties it
    # to bwrap.
    info = ["--info-fd", str(info_fd)] if info_fd is not None else []
    flags = _namespace_flags(hidden, private, own, read_only, writable)
    return [bwrap, *flags, *info, "--", *python, "0", "plain", *command]


def make_undumpable() -> None:
    """``PR_SET_DUMPABLE 0`` for this process: processes of the same unprivileged user (samples
    in supervisor mode) can no longer open its ``/proc/PID`` files (environment, memory,
    descriptors). Children regain the default when they ``exec``."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0)


def decode_status(raw: bytes) -> int | None:
    """The command's exit code from the supervisor's report (negative for a signal)."""
    text = raw.decode("ascii", "replace").strip()
    if not text.isdigit():
        return None
    return os.waitstatus_to_exitcode(int(text))


# -- process records and reaping ---------------------------------------------------------------


def trusted_dir(path: Path) -> bool:
    """Whether ``path`` is a real directory (``lstat``: no symlink) owned by the effective user
    with no group or other permission bits: nothing another local user could have planted."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077 == 0


def owned_entry(path: Path) -> bool:
    """Whether ``path`` (a directory or regular file) is this effective user's, not a symlink
    and not writable by group or others."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)
    return kind and info.st_uid == os.geteuid() and info.st_mode & 0o022 == 0


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return int(fields[19]) if len(fields) > 19 else None


def _group_of(pid: int) -> tuple[int, int] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return (int(fields[2]), int(fields[19])) if len(fields) > 19 else None


def write_owner(directory: Path) -> None:
    """Record this process (PID and start time) as the owner of ``directory``."""
    pid = os.getpid()
    (directory / "owner").write_text(f"{pid} {start_time(pid) or 0}\n")
    (directory / "live").mkdir(mode=0o700, exist_ok=True)


def record_sample(directory: Path, pgid: int) -> Path:
    record = directory / "live" / str(pgid)
    record.write_text(f"{pgid} {start_time(pgid) or 0}\n")
    return record


def owner_alive(directory: Path, pid_hint: int | None) -> bool:
    """Whether the ReproMin process that made ``directory`` is still running."""
    if not owned_entry(directory / "owner"):
        return True  # no record this user wrote: not ours to judge
    try:
        pid_text, _, started = (directory / "owner").read_text().partition(" ")
        pid, ticks = int(pid_text), int(started or 0)
    except (OSError, ValueError):
        if pid_hint is None:
            return True  # not ours to judge
        pid, ticks = pid_hint, 0
    now = start_time(pid)
    if now is None:
        return False
    return ticks == 0 or now == ticks


def reap_processes(directory: Path) -> int:
    """Kill what samples of a dead run left behind: members of each recorded process group
    that started no earlier than the recorded leader. Returns how many were killed."""
    records: list[tuple[int, int]] = []
    if not trusted_dir(directory) or not trusted_dir(directory / "live"):
        return 0
    for record in (directory / "live").glob("*"):
        if not owned_entry(record):
            continue
        with contextlib.suppress(OSError, ValueError):
            pgid, _, ticks = record.read_text().partition(" ")
            records.append((int(pgid), int(ticks or 0)))
    if not records:
        return 0
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        info = _group_of(int(entry.name))
        if info is None or not _ours(entry):
            continue
        group, started = info
        if any(group == pgid and 0 < ticks <= started for pgid, ticks in records):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed


def _ours(proc_entry: Path) -> bool:
    """Whether the process ``/proc/PID`` runs as this effective user (its real and effective
    uid, from ``status``: the owner of ``/proc/PID`` is root for a non-dumpable process)."""
    try:
        for line in (proc_entry / "status").read_text().splitlines():
            if line.startswith("Uid:"):
                real, effective = (int(v) for v in line.split()[1:3])
                return os.geteuid() in (real, effective)
    except (OSError, ValueError):
        pass
    return False


def reap_stale(root: Path, prefix: str = "repomin-") -> None:
    """Remove directories ``PREFIX<pid>-*`` of ReproMin runs that died (SIGKILL, power loss),
    after killing their samples' leftover processes. ``root`` must be a private root
    (:func:`trusted_dir`); entries and records that are not this user's are left alone."""
    if not trusted_dir(root):
        return
    for entry in root.glob(f"{prefix}*-*"):
        pid_text = entry.name[len(prefix) :].split("-")[0]
        if not pid_text.isdigit() or not trusted_dir(entry):
            continue
        if int(pid_text) == os.getpid() or owner_alive(entry, int(pid_text)):
            continue
        reap_processes(entry)
        shutil.rmtree(entry, ignore_errors=True)


# -- stopping a timed-out sample so that its CPU time is kept ----------------------------------


def namespace_init(info: bytes) -> int | None:
    """The namespace init's PID from what bwrap wrote to ``--info-fd`` (JSON)."""
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        value = json.loads(info.decode("utf-8")).get("child-pid")
        return value if isinstance(value, int) and value > 1 else None
    return None


def signal_child(parent: int, child: int, signum: int) -> bool:
    """Send ``signum`` to ``child`` if it still is a child of ``parent`` (checked through a
    pidfd, so a reused PID is never signalled). True when the signal was sent."""
    try:
        fd = os.pidfd_open(child)
    except OSError:
        return False
    try:
        if _parent_of(child) != parent:
            return False
        signal.pidfd_send_signal(fd, signum)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _parent_of(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return int(fields[1]) if len(fields) > 1 else None
