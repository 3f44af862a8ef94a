"""Reading and writing report files: one shipped JSON Schema, atomic writes.

Directories ReproMin writes its own outputs into (the sidecar ``OUTPUT.repomin``, a session)
are opened with :func:`open_own_dir`, never through a symlink and only when the user owns
them, and written with :func:`write_atomic_at` relative to that descriptor: a link planted at
the directory or at a file in it is refused or replaced, never followed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from repomin.errors import UsageError

SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = frozenset({1})


@cache
def load_schema() -> dict[str, Any]:
    """The report's JSON Schema as shipped in the package (the writer's and validator's)."""
    text = resources.files("repomin.report").joinpath("report.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def structural_errors(report: Any) -> list[str]:
    """JSON Schema violations, one line each (path: message)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = []
    for err in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        errors.append(f"schema: {where}: {err.message}")
    return errors


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` via a temporary sibling and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False, allow_nan=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_own_dir(path: Path, fix: str) -> bool:
    """Whether ``path`` exists, refusing (:class:`UsageError`, exit 2) a symlink, something
    that is not a directory, or a directory owned by another user. ``fix`` ends the message
    (e.g. "remove it or choose another -o")."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    _check_stat(path, st, fix)
    return True


def _check_stat(path: Path, st: os.stat_result, fix: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"{path} is a symlink; {fix}")
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{path} exists and is not a directory; {fix}")
    if st.st_uid != os.geteuid():
        raise UsageError(f"{path} is owned by another user (uid {st.st_uid}); {fix}")


def open_own_dir(path: Path, fix: str, *, mode: int = 0o755) -> int:
    """A descriptor of the directory ``path`` itself, created (with ``mode``) if missing;
    refused as :func:`check_own_dir` says when it is a symlink, not a directory or not the
    user's. Its parents are taken as they are (the user named them); the caller closes it."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            check_own_dir(path, fix)  # raises with what is there instead
        raise
    try:
        _check_stat(path, os.fstat(fd), fix)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_atomic_at(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``name`` in the directory ``dir_fd`` via a fresh temporary sibling (created
    exclusively, never through a link, fsynced) and ``rename``, which replaces a link at
    ``name`` rather than following it."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def json_bytes(data: Any) -> bytes:
    """``data`` as :func:`write_json_atomic` writes it."""
    return (json.dumps(data, indent=2, sort_keys=False, allow_nan=False) + "\n").encode("utf-8")
