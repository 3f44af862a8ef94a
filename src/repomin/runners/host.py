"""The host runner: one sample = one fresh copy of the tree + one process group on this machine.

Each sample gets its own directory (on tmpfs when ``/dev/shm`` exists, since copying thousands of
files to disk costs seconds) holding ``tree/`` (the copy) and ``tmp/`` (``TMPDIR``, ``HOME``), so
samples never share scratch space. The command runs through ``/bin/sh -c`` in a new session,
inside the boundary of :mod:`repomin.runners.sandbox` (a private mount and PID namespace that
hides SRC, OUTPUT and the session directory when ``bwrap`` works; otherwise a supervisor that
dies with ReproMin). On timeout -- and after every normal exit, to reap background stragglers --
the whole process group is killed. Output goes to files and is read back bounded (head and tail).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from repomin.errors import UsageError
from repomin.runners import sandbox
from repomin.runners.base import OUTPUT_LIMIT, Outcome, RunRequest
from repomin.runners.scratch import reap_stale_scratch
from repomin.tree import Tree, materialise

#: Variables every sample gets from ReproMin itself (values are per-sample paths, or PATH).
IMPLICIT_ENVIRONMENT = ("PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG")

_RESOURCE_SIGNALS = {signal.SIGXCPU, signal.SIGXFSZ}


def scratch_root() -> Path:
    """Where sample directories live: tmpfs when available."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return Path(tempfile.gettempdir())


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
    ) -> None:
        """``source`` (SRC) and ``hide`` (OUTPUT, its sidecar, the session directory): what a
        sample must not see at its path; paths that do not exist yet are checked again at
        every sample. ``isolation``: ``auto`` (namespace when bwrap works, else supervisor),
        ``namespace`` (required; exit 2 when impossible) or ``supervisor``."""
        if isolation not in ("auto", *sandbox.ISOLATION_MODES):
            raise UsageError(f"isolation {isolation!r} must be auto, namespace or supervisor")
        problem = sandbox.bwrap_problem() if isolation != "supervisor" else "not requested"
        if isolation == "namespace" and problem is not None:
            raise UsageError(f"no sample namespace can be made: {problem}; install bubblewrap")
        self.isolation = "namespace" if problem is None else "supervisor"
        self.namespace_problem = problem
        root = base_dir or scratch_root()
        reap_stale(root)
        self._base = Path(tempfile.mkdtemp(prefix=f"repomin-{os.getpid()}-", dir=root))
        sandbox.write_owner(self._base)
        self._hide = (source, *hide) if source is not None else hide
        # The sample's own directories stay visible even when they lie inside a hidden one.
        self._visible = [self._base, Path(tempfile.gettempdir()).resolve()]
        self._source_hidden = self.isolation == "namespace" and (
            source is not None and bool(sandbox.hidden_paths([source], self._visible))
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
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(scratch),
            "TMPDIR": str(scratch),
            "TMP": str(scratch),
            "TEMP": str(scratch),
            "LANG": "C.UTF-8",
            **request.env,
        }
        out_path, err_path = sample_dir / "stdout", sample_dir / "stderr"
        timed_out = False
        hidden = sandbox.hidden_paths(self._hide, self._visible) if self._hide else []
        status_r, status_w = os.pipe()
        argv = sandbox.sample_argv(
            ["/bin/sh", "-c", request.command],
            status_fd=status_w,
            namespace=self.isolation == "namespace",
            hidden=hidden,
        )
        start = time.monotonic()
        report_bytes = b""
        try:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                try:
                    proc = subprocess.Popen(
                        argv,
                        cwd=work,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=err,
                        start_new_session=True,
                        pass_fds=(status_w,),
                    )
                finally:
                    os.close(status_w)
                with self._lock:
                    self._live.add(proc.pid)
                record = sandbox.record_sample(self._base, proc.pid)
                try:
                    rc = proc.wait(timeout=request.timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill_group(proc.pid)
                    rc = proc.wait()
                finally:
                    _kill_group(proc.pid)
                    with self._lock:
                        self._live.discard(proc.pid)
                    record.unlink(missing_ok=True)
            duration = time.monotonic() - start
            # Written before the supervisor exited; never wait for a straggler holding the pipe.
            os.set_blocking(status_r, False)
            with contextlib.suppress(BlockingIOError):
                report_bytes = os.read(status_r, 64)
            reported = sandbox.decode_status(report_bytes) if report_bytes else None
            rc = reported if reported is not None and not timed_out else rc
            stdout, stderr = _read_bounded(out_path), _read_bounded(err_path)
        finally:
            os.close(status_r)
            if not self._keep:
                shutil.rmtree(sample_dir, ignore_errors=True)
        sig = -rc if rc < 0 else None
        exhausted = sig in _RESOURCE_SIGNALS if sig is not None else False
        return Outcome(
            exit_code=rc,
            stdout=stdout,
            stderr=stderr,
            duration=duration,
            timed_out=timed_out,
            resource_exhausted=exhausted and not timed_out,
            signal=sig,
            workdir=str(work),
        )

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


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_bounded(path: Path, limit: int = OUTPUT_LIMIT) -> bytes:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if size <= limit:
            return fh.read()
        half = limit // 2
        head = fh.read(half)
        fh.seek(size - half)
        return head + b"\n[... repomin: output truncated ...]\n" + fh.read()
