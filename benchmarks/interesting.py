"""The failure contract as a stand-alone interestingness test, for peers and for verification.

Peers (shrinkray, C-Vise, picire, Lithium) only understand "exit 0 = interesting". This script
applies exactly the contract ReproMin applies to one sample: run ``/bin/sh -c COMMAND`` in the
candidate tree (its own session, the whole group killed on timeout, environment reduced to
``PATH``/``HOME``/``TMPDIR``/``LANG`` like ReproMin's host runner), then the output regex over
stdout + stderr and the optional exit code; a timeout never counts as the failure.

Usage (stdlib only, so any peer can run it)::

    python interesting.py CONFIG.json [PATH]

``PATH`` is what the peer hands over: a directory (the candidate tree), a file (the candidate
file, run in its directory), or nothing (the current directory is the candidate). ``CONFIG.json``
holds ``command``, ``match``, ``exit_code``, ``timeout`` and ``counter``; every invocation
appends one line to ``counter`` so that the benchmark counts the peer's oracle runs. With
``keep_best``, the smallest interesting candidate seen is kept in ``keep_best/tree`` as the peer's
best-so-far, in case the peer is stopped at the time cap (``single_file`` names the file of a
single-file case).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Contract:
    """The failure contract of a case: what "still fails the same way" means."""

    command: str
    match: str | None
    exit_code: int | None = None
    timeout: float = 30.0

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "match": self.match,
            "exit_code": self.exit_code,
            "timeout": self.timeout,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Contract:
        return cls(
            command=str(data["command"]),
            match=data.get("match"),
            exit_code=data.get("exit_code"),
            timeout=float(data.get("timeout", 30.0)),
        )


def run_once(contract: Contract, workdir: Path) -> bool:
    """One sample of ``contract`` in ``workdir``: does it show the failure?"""
    scratch = Path(tempfile.mkdtemp(prefix="bench-scratch-"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "TMP": str(scratch),
        "TEMP": str(scratch),
        "LANG": "C.UTF-8",
    }
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", contract.command],
                cwd=workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                rc = proc.wait(timeout=contract.timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                rc = None
            finally:
                _kill_group(proc.pid)
                proc.wait()
            out.seek(0)
            err.seek(0)
            output = (out.read() + b"\n" + err.read()).decode("utf-8", "replace")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if timed_out:
        return False
    if contract.exit_code is not None and rc != contract.exit_code:
        return False
    return contract.match is None or re.search(contract.match, output) is not None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def workdir_for(argument: str | None) -> Path:
    """Where the candidate lives: the directory given, a file's directory, or the cwd."""
    if argument is None:
        return Path.cwd()
    path = Path(argument).absolute()
    return path if path.is_dir() else path.parent


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: interesting.py CONFIG.json [PATH]\n")
        return 2
    config = json.loads(Path(argv[1]).read_text("utf-8"))
    counter = config.get("counter")
    if counter:
        fd = os.open(counter, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, b"1\n")
        finally:
            os.close(fd)
    contract = Contract.from_json(config)
    target = argv[2] if len(argv) > 2 else None
    workdir = workdir_for(target)
    single = config.get("single_file")
    candidate = workdir / single if single else workdir
    keep = config.get("keep_best")
    # The candidate as the peer wrote it: the command may add files (e.g. __pycache__).
    listing = _listing(candidate) if keep else {}
    ok = run_once(contract, workdir)
    if ok and keep:
        keep_if_smaller(candidate, listing, Path(keep))
    return 0 if ok else 1


def _listing(candidate: Path) -> dict[str, int]:
    """Relative path -> size of every file (or the one file) of the candidate."""
    if candidate.is_file():
        return {candidate.name: candidate.stat().st_size}
    found: dict[str, int] = {}
    for dirpath, _dirs, files in os.walk(candidate):
        for name in files:
            path = Path(dirpath) / name
            found[str(path.relative_to(candidate))] = path.lstat().st_size
    return found


def keep_if_smaller(candidate: Path, listing: dict[str, int], best: Path) -> None:
    """Keep the smallest interesting candidate seen as ``best/tree`` (its listed files only).

    This is a stopped peer's best-so-far: peers write their result back only at the end (or
    mid-write when interrupted). A tree's files are hard-linked when possible (peers write each
    candidate tree afresh), so the cost per new best is close to the peer's own write-back.
    """
    best.mkdir(parents=True, exist_ok=True)
    size = sum(listing.values())
    root = candidate if candidate.is_dir() else candidate.parent
    with open(best / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = best / ".size"
        if record.exists() and int(record.read_text() or "0") <= size:
            return
        staging = Path(tempfile.mkdtemp(prefix=".staging.", dir=best))
        try:
            for rel in listing:
                target = staging / "tree" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                source = root / rel
                if source.is_symlink():
                    os.symlink(os.readlink(source), target)
                elif candidate.is_file():
                    shutil.copy2(source, target)  # a peer may rewrite its file in place
                else:
                    _link(source, target)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            return
        (staging / "tree").mkdir(exist_ok=True)
        old = best / "tree"
        if old.exists():
            old.rename(staging / "old")
        (staging / "tree").rename(old)
        shutil.rmtree(staging, ignore_errors=True)
        record.write_text(str(size))


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
