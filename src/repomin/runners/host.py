"""The host runner: one sample = one fresh copy of the tree + one process group on this machine.

Each sample gets its own directory in ReproMin's private scratch root (on tmpfs when
``/dev/shm`` exists, since copying thousands of files to disk costs seconds; see
:func:`repomin.runners.scratch.private_root`) holding ``tree/`` (the copy) and ``tmp/``
(``TMPDIR``, ``HOME``), so samples never share scratch space. With ``--home inherit`` HOME is
the user's own instead, bound read-only in the namespace (toolchains under ``~`` can be read,
no sample leaves a cache there for the next one) and plainly inherited, writable, under the
supervisor. The command runs through ``/bin/sh -c`` in a new session, inside the boundary of
:mod:`repomin.runners.sandbox` (a private mount and PID namespace without capabilities that
hides SRC, OUTPUT, the session directory and every other sample's directory when ``bwrap``
works; otherwise a supervisor that dies with ReproMin). On timeout -- and after every normal
exit, to reap background stragglers -- the whole process group is killed. Output goes to
unnamed files (``O_TMPFILE``) opened before the sample starts, so no path leads to them: a
sample can neither replace its own captured output by a symlink or FIFO nor write into a
sibling's; they are read back through the runner's descriptors, bounded (head and tail).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.errors import UsageError
from repomin.runners import sandbox
from repomin.runners.base import OUTPUT_LIMIT, Outcome, RunRequest
from repomin.runners.scratch import private_root, reap_stale_scratch
from repomin.tree import Tree, materialise

#: Variables every sample gets from ReproMin itself (values are per-sample paths, or PATH).
IMPLICIT_ENVIRONMENT = ("PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG")

#: Values of ``--home`` and ``execution.home``: ``fresh``, a private empty HOME per sample (its
#: scratch directory); ``inherit``, the user's HOME at its path (read-only in the namespace).
HOME_MODES = ("fresh", "inherit")

_RESOURCE_SIGNALS = {signal.SIGXCPU, signal.SIGXFSZ}
#: Seconds a timed-out sample gets to be stopped and reaped before it is killed outright.
STOP_GRACE = 5.0


class HostRunner:
    """Runs samples as local processes. Thread-safe; each call is independent."""

    backend = "host"

    def __init__(
        self,
        *,
        base_dir: Path | None = None,
        keep_samples: bool = False,
        source: Path | None = None,
        hide: tuple[Path, ...] = (),
        isolation: str = "auto",
        home: str = "fresh",
    ) -> None:
        """``source`` (SRC) and ``hide`` (OUTPUT, its sidecar, the session directory): what a
        sample must not see at its path; paths that do not exist yet are checked again at
        every sample. ``isolation``: ``auto`` (namespace when bwrap works, else supervisor),
        ``namespace`` (required; exit 2 when impossible) or ``supervisor``. ``home``:
        ``fresh`` (HOME is the sample's own empty scratch directory) or ``inherit`` (HOME is
        this process's HOME, bound read-only in the namespace; SRC and ``hide`` stay hidden
        when they lie under it)."""
        if isolation not in ("auto", *sandbox.ISOLATION_MODES):
            raise UsageError(f"isolation {isolation!r} must be auto, namespace or supervisor")
        if home not in HOME_MODES:
            raise UsageError(f"--home {home!r} must be fresh or inherit")
        self.home = home
        self._home = inherited_home() if home == "inherit" else None
        self._home_value = os.environ["HOME"] if self._home is not None else None
        problem = sandbox.bwrap_problem() if isolation != "supervisor" else "not requested"
        if isolation == "namespace" and problem is not None:
            raise UsageError(f"no sample namespace can be made: {problem}; install bubblewrap")
        self.isolation = "namespace" if problem is None else "supervisor"
        self.namespace_problem = problem
        if self.isolation == "supervisor":
            # Same-uid samples cannot read this process's environment or memory via /proc.
            sandbox.make_undumpable()
        self._root = private_root(base_dir)
        reap_stale_scratch([self._root])
        self._base = Path(tempfile.mkdtemp(prefix=f"repomin-{os.getpid()}-", dir=self._root))
        sandbox.write_owner(self._base)
        self._hide = (source, *hide) if source is not None else hide
        # The sample's own directories stay visible even when they lie inside a hidden one.
        self._visible = [self._base, Path(tempfile.gettempdir()).resolve()]
        self._source_hidden = self.isolation == "namespace" and (
            source is not None and bool(sandbox.hidden_paths([source], self._visible))
        )
        # The system temporary directory (trace log, carve record) stays writable under HOME.
        temp = self._visible[1]
        self._home_writable = (
            [temp] if self._home is not None and self._home in temp.parents else []
        )
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._keep = keep_samples
        self._live: set[int] = set()

    @property
    def hides_source(self) -> bool:
        """True when samples cannot see ``source`` at its path."""
        return self._source_hidden

    def describe(self) -> dict[str, Any]:
        return {"backend": "host", "sample_isolation": self.isolation}

    def _next_dir(self, sample_id: str) -> Path:
        with self._lock:
            n = next(self._counter)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in sample_id)[:60]
        path = self._base / f"{n:06d}-{safe}"
        path.mkdir()
        return path

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        sample_dir = self._next_dir(request.sample_id)
        work = sample_dir / "tree"
        scratch = sample_dir / "tmp"
        work.mkdir()
        scratch.mkdir()
        materialise(tree, work)
        env = _sample_env(scratch, request.env, self._home_value)
        hidden = sandbox.hidden_paths(self._hide, self._visible) if self._hide else []
        namespace = self.isolation == "namespace"
        # Unnamed files (O_TMPFILE) opened before the sample starts: no path leads to them.
        with contextlib.ExitStack() as held:
            out = held.enter_context(tempfile.TemporaryFile(dir=self._base))
            err = held.enter_context(tempfile.TemporaryFile(dir=self._base))
            status_r, status_w = os.pipe()
            held.callback(os.close, status_r)
            info_r, info_w = os.pipe()
            held.callback(os.close, info_r)
            if not self._keep:
                held.callback(shutil.rmtree, sample_dir, ignore_errors=True)
            argv = sandbox.sample_argv(
                ["/bin/sh", "-c", request.command],
                status_fd=status_w,
                namespace=namespace,
                hidden=hidden,
                info_fd=info_w if namespace else None,
                private=self._root,
                own=sample_dir,
                read_only=[self._home] if self._home is not None else [],
                writable=self._home_writable,
            )
            start = time.monotonic()
            ended = self._execute(
                argv,
                work,
                env,
                out.fileno(),
                err.fileno(),
                status_w=status_w,
                info_w=info_w,
                info_r=info_r,
                namespace=namespace,
                timeout=request.timeout,
            )
            duration = time.monotonic() - start
            rc = _exit_code(ended, status_r)
            stdout, stderr = _read_bounded(out.fileno()), _read_bounded(err.fileno())
        sig = -rc if rc < 0 else None
        exhausted = sig in _RESOURCE_SIGNALS if sig is not None else False
        return Outcome(
            exit_code=rc,
            stdout=stdout,
            stderr=stderr,
            duration=duration,
            timed_out=ended.timed_out,
            resource_exhausted=exhausted and not ended.timed_out,
            signal=sig,
            workdir=str(work),
            cpu_seconds=ended.cpu_seconds,
        )

    def _execute(
        self,
        argv: list[str],
        work: Path,
        env: dict[str, str],
        out: int,
        err: int,
        *,
        status_w: int,
        info_w: int,
        info_r: int,
        namespace: bool,
        timeout: float,
    ) -> _Ended:
        """Start the sample's process group (output to the descriptors ``out``/``err``; the
        write ends of the pipes are closed once it started), wait for it and kill what is
        left."""
        try:
            proc = subprocess.Popen(
                argv,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                pass_fds=(status_w, info_w) if namespace else (status_w,),
            )
        finally:
            os.close(status_w)
            os.close(info_w)
        with self._lock:
            self._live.add(proc.pid)
        record = sandbox.record_sample(self._base, proc.pid)
        try:
            return self._wait(proc, timeout, info_r)
        finally:
            _kill_group(proc.pid)
            with self._lock:
                self._live.discard(proc.pid)
            record.unlink(missing_ok=True)

    def _wait(self, proc: subprocess.Popen[bytes], timeout: float, info_r: int) -> _Ended:
        """Wait for the sample's leader with ``wait4``; at the timeout stop the sample so that
        every process is reaped inside it: the supervisor (in the namespace its init, at the
        PID bwrap reported) gets SIGUSR1, kills the rest of the sample, reaps it and exits. A
        sample that does not stop in :data:`STOP_GRACE` seconds is killed outright; its CPU
        time is then incomplete and left unknown."""
        ended = _reap(proc, timeout)
        if ended is not None:
            return _Ended(*ended, timed_out=False)
        if self.isolation == "namespace":
            init = sandbox.namespace_init(_read_available(info_r))
            stopped = init is not None and sandbox.signal_child(proc.pid, init, signal.SIGUSR1)
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGUSR1)
            stopped = True
        ended = _reap(proc, STOP_GRACE) if stopped else None
        if ended is not None:
            return _Ended(*ended, timed_out=True)
        _kill_group(proc.pid)
        code, _ = _reap(proc, None) or (-signal.SIGKILL, 0.0)
        return _Ended(code, None, timed_out=True)

    def kill_all(self) -> None:
        """Kill every running sample (Ctrl-C, SIGTERM, budget)."""
        with self._lock:
            pids = list(self._live)
        for pid in pids:
            _kill_group(pid)

    def close(self) -> None:
        self.kill_all()
        shutil.rmtree(self._base, ignore_errors=True)


def reap_stale(root: Path) -> None:
    """Remove sample directories left by ReproMin processes that died (e.g. SIGKILL), after
    killing whatever their recorded sample process groups left running; the Docker runner's
    scratch directories of dead runs too."""
    reap_stale_scratch([root])


@dataclass(frozen=True, slots=True)
class _Ended:
    exit_code: int
    cpu_seconds: float | None
    timed_out: bool


def inherited_home() -> Path:
    """This process's HOME for ``--home inherit``, resolved (what the namespace binds); exit 2
    when it is not an absolute path of an existing directory other than ``/``."""
    raw = os.environ.get("HOME", "")
    path = Path(raw).resolve() if raw.startswith("/") else None
    if path is None or not path.is_dir() or path == Path("/"):
        raise UsageError(
            f"--home inherit: your HOME ({raw or 'unset'}) is not an existing directory other "
            "than /; set HOME or use --home fresh"
        )
    return path


def _sample_env(
    scratch: Path, explicit: Mapping[str, str], home: str | None = None
) -> dict[str, str]:
    """The sample's environment: ReproMin's own variables (:data:`IMPLICIT_ENVIRONMENT`,
    pointing into ``scratch``; HOME is ``home`` when given, ``--home inherit``), overridden by
    the request's ``explicit`` ones."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": home if home is not None else str(scratch),
        "TMPDIR": str(scratch),
        "TMP": str(scratch),
        "TEMP": str(scratch),
        "LANG": "C.UTF-8",
        **explicit,
    }


def _exit_code(ended: _Ended, status_r: int) -> int:
    """The sample's exit code: SIGKILL at a timeout, else what the supervisor reported on the
    status pipe, else the leader's own."""
    # Written before the supervisor exited; never wait for a straggler holding the pipe.
    os.set_blocking(status_r, False)
    report_bytes = b""
    with contextlib.suppress(BlockingIOError):
        report_bytes = os.read(status_r, 64)
    reported = sandbox.decode_status(report_bytes) if report_bytes else None
    rc = ended.exit_code
    if ended.timed_out:
        rc = -signal.SIGKILL  # killed by ReproMin at the timeout
    elif reported is not None:
        rc = reported
    return rc


def _reap(proc: subprocess.Popen[bytes], timeout: float | None) -> tuple[int, float] | None:
    """``(exit code, CPU seconds)`` of ``proc`` -- user + system time of the process and of
    every descendant reaped below it (``wait4``) -- or ``None`` while it still runs after
    ``timeout`` seconds (``None``: wait as long as it takes)."""
    pid = proc.pid
    if timeout is None:
        _, status, usage = os.wait4(pid, 0)
        return _ended(proc, status, usage)
    deadline = time.monotonic() + timeout
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # no pidfd (old kernel): poll like subprocess does
        pidfd = -1
    watch = select.poll()
    if pidfd >= 0:
        watch.register(pidfd, select.POLLIN)
    try:
        delay = 0.0005
        while True:
            got, status, usage = os.wait4(pid, os.WNOHANG)
            if got:
                return _ended(proc, status, usage)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if pidfd >= 0:
                watch.poll(max(1, int(remaining * 1000)))
            else:
                delay = min(delay * 2, remaining, 0.05)
                time.sleep(delay)
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _ended(
    proc: subprocess.Popen[bytes], status: int, usage: resource.struct_rusage
) -> tuple[int, float]:
    proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
    return code, usage.ru_utime + usage.ru_stime


def _read_available(fd: int) -> bytes:
    """What the pipe ``fd`` holds now (its writer may still have it open)."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 4096):
            data += chunk
    return data


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_bounded(fd: int, limit: int = OUTPUT_LIMIT) -> bytes:
    """The head and tail of what the sample wrote to the unnamed file ``fd`` (read by offset:
    the sample may still hold it open)."""
    size = os.fstat(fd).st_size
    if size <= limit:
        return os.pread(fd, size, 0)
    half = limit // 2
    head = os.pread(fd, half, 0)
    tail = os.pread(fd, half, size - half)
    return head + b"\n[... repomin: output truncated ...]\n" + tail
