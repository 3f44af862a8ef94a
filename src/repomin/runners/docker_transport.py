"""How a tree gets into a container: a host directory bind-mounted, or a tar streamed in.

``bind`` is the fast path: the host writes each sample's tree to a per-worker directory on tmpfs,
hands it to the sample's uid and bind-mounts it at ``/work``. It needs the engine to see the
host's filesystem (a local daemon) and the right to ``chown`` (root): :func:`probe_bind` checks
both by mounting a random token read-only and reading it back through the engine. Otherwise
``stream`` sends the tree as a tar through the exec's stdin (``tar -x`` inside the container),
which works against any engine, remote ones included.

Host-side invariant: a bind directory is only wiped or refilled when no process of the sample
can run in it any more, and wiping never follows a symlink planted by a sample.
"""

from __future__ import annotations

import io
import logging
import os
import secrets
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

from docker.errors import APIError, NotFound
from docker.types import Mount

from repomin.runners.scratch import DOCKER_PREFIX, make_scratch, mount_tmpfs, remove_tree
from repomin.tree import Tree, materialise

log = logging.getLogger(__name__)

PROBE_MOUNT = "/repomin-probe"


class ScratchRoot:
    """This runner's host directory: the bind sources of workers (each a sized tmpfs mount)."""

    def __init__(self, session_label: str) -> None:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_label)[:40]
        self.path = make_scratch(f"{DOCKER_PREFIX}{safe}-")

    def directory(self, name: str, uid: int, gid: int, size: str | None = None) -> Path:
        """A new directory for ``uid:gid``; with ``size``, a ``nosuid,nodev`` tmpfs of that size.

        Raises :class:`OSError` when the tmpfs cannot be mounted (not root, no ``mount``).
        """
        path = self.path / name
        path.mkdir()
        if size is not None:
            options = f"mode=0755,uid={uid},gid={gid}" + ("" if size == "none" else f",size={size}")
            why = mount_tmpfs(path, options)
            if why is not None:
                path.rmdir()
                raise PermissionError(why)
        os.chown(path, uid, gid)
        return path

    def drop(self, path: Path) -> None:
        """Unmount and remove one directory made by :meth:`directory`."""
        remove_tree(path)

    def remove(self) -> None:
        remove_tree(self.path)


def wipe(directory: Path) -> None:
    """Empty ``directory`` without following symlinks (``rmtree`` uses fd-relative calls)."""
    os.chmod(directory, 0o755)
    for entry in os.scandir(directory):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def fill(directory: Path, tree: Tree, uid: int, gid: int) -> None:
    """Write ``tree`` into the (empty) ``directory`` and give it to ``uid:gid``."""
    materialise(tree, directory)
    os.chown(directory, uid, gid)
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)


def tar_bytes(tree: Tree, uid: int, gid: int, *, under: str = "") -> bytes:
    """The tree as a GNU tar (directories first, 0755 like :func:`materialise` makes them).

    ``under`` puts the tree below a directory of that name owned by ``uid:gid``: an engine
    extracting as root (``put_archive``) keeps the target directory itself root-owned.
    """
    now = int(time.time())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:

        def add(name: str, kind: bytes, mode: int, data: bytes = b"") -> None:
            info = tarfile.TarInfo(f"{under}/{name}" if under else name)
            info.type, info.mode, info.uid, info.gid, info.mtime = kind, mode, uid, gid, now
            if kind == tarfile.SYMTYPE:
                info.linkname = os.fsdecode(data)
                tar.addfile(info)
            elif kind == tarfile.REGTYPE:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)

        if under:
            tar.addfile(_dir_info(under, uid, gid, now))
        for directory in sorted(tree.directories()):
            add(directory, tarfile.DIRTYPE, 0o755)
        for path, entry in tree.entries.items():
            if entry.kind == "file":
                add(path, tarfile.REGTYPE, entry.mode & 0o7777, entry.data)
            elif entry.kind == "symlink":
                add(path, tarfile.SYMTYPE, 0o777, entry.data)
    return buf.getvalue()


def _dir_info(name: str, uid: int, gid: int, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, 0o755, uid, gid, mtime
    return info


def probe_bind(
    api: Any, image_id: str, scratch: ScratchRoot, uid: int, gid: int, labels: dict[str, str]
) -> str | None:
    """``None`` when bind mounts work here, else why not (the runner then streams).

    Creates (never starts) a container with a random token bind-mounted read-only and reads it
    back through the engine: a remote engine either rejects the mount or sees another file.
    """
    try:
        probe = scratch.directory("probe", uid, gid, size="1m")
    except PermissionError as exc:
        return f"cannot give the sample a sized tmpfs at /work here ({exc})"
    token = secrets.token_hex(16)
    (probe / "token").write_text(token)
    cid: str | None = None
    try:
        host_config = api.create_host_config(
            network_mode="none",
            mounts=[Mount(PROBE_MOUNT, str(probe), type="bind", read_only=True)],
        )
        cid = api.create_container(
            image_id, command=["true"], host_config=host_config, labels=labels
        )["Id"]
        stream, _ = api.get_archive(cid, f"{PROBE_MOUNT}/token")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.extractfile("token")
            seen = member.read().decode() if member is not None else ""
        return None if seen == token else "the engine sees another filesystem"
    except APIError as exc:
        return f"the engine cannot mount {probe} ({exc.explanation or exc})"
    finally:
        if cid is not None:
            try:
                api.remove_container(cid, force=True)
            except APIError:
                log.debug("could not remove probe container %s", cid)
        scratch.drop(probe)


def probe_shell(api: Any, image_id: str, labels: dict[str, str], host_config: Any) -> bool:
    """Whether the image has ``/bin/sh`` (checked in a created, never started, container).

    Creating it with the runner's ``host_config`` also validates the resource settings.
    """
    cid = api.create_container(image_id, command=["true"], labels=labels, host_config=host_config)[
        "Id"
    ]
    try:
        stream, _ = api.get_archive(cid, "/bin/sh")
        for _ in stream:
            pass
        return True
    except NotFound:
        return False
    finally:
        api.remove_container(cid, force=True)
