"""Export: write the payload and its sidecar atomically, next to each other, never inside.

The payload is materialised into a temporary sibling of OUTPUT (files and symlinks keep SRC's
modification times, see :func:`repomin.tree.materialise`) and renamed into place; an
existing OUTPUT is only replaced with ``--force`` (moved aside first, removed after the rename).
The sidecar ``OUTPUT.repomin/`` holds ``report.json`` and ``REPOMIN.md``, each written via a
temporary file and ``os.replace`` relative to the sidecar's own descriptor.

Nothing is written through a symlink: OUTPUT or ``OUTPUT.repomin`` being a symlink (or the
sidecar not being the user's directory) is refused at start-up by
:func:`check_output_location`, and again when writing -- another user who can create entries
beside OUTPUT, or a sample that can reach it, may plant one meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repomin.errors import UsageError
from repomin.report.fingerprint import Fingerprint, fingerprint
from repomin.report.io import check_own_dir, json_bytes, open_own_dir, write_atomic_at
from repomin.report.picture import PICTURE_NAMES
from repomin.tree import Tree, materialise

#: How a refused output path is fixed (the end of its one-line error).
OUTPUT_FIX = "remove it or choose another -o"


def sidecar_dir(output: Path) -> Path:
    return output.with_name(output.name + ".repomin")


def check_not_symlink(path: Path) -> None:
    """Refuse (exit 2) when ``path`` itself is a symlink (its parents are the user's)."""
    if os.path.islink(path):
        raise UsageError(f"{path} is a symlink; {OUTPUT_FIX}")


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output_location(src: Path, output: Path, *, force: bool) -> None:
    """Refuse an OUTPUT that would modify SRC or clobber something without ``--force``, and
    an OUTPUT or ``OUTPUT.repomin`` that is a symlink (or a sidecar that is not the user's
    directory): nothing is ever written through one."""
    check_not_symlink(output.absolute())
    check_own_dir(sidecar_dir(output.absolute()), OUTPUT_FIX)
    src_r = src.resolve()
    out_r = output.resolve()
    side = sidecar_dir(out_r)
    if _inside(out_r, src_r) or _inside(side, src_r):
        raise UsageError(
            f"OUTPUT {str(output)!r} is inside SRC {str(src)!r}; choose a path outside the "
            "repository (the source tree is never modified)"
        )
    if _inside(src_r, out_r):
        raise UsageError(
            f"SRC {str(src)!r} is inside OUTPUT {str(output)!r}; choose a different OUTPUT"
        )
    if out_r.exists() or out_r.is_symlink():
        if not out_r.is_dir() or out_r.is_symlink():
            raise UsageError(
                f"OUTPUT {str(output)!r} exists and is not a directory; remove it or choose "
                "another path"
            )
        if not force:
            raise UsageError(
                f"OUTPUT {str(output)!r} already exists; pass --force to replace it or choose "
                "another path"
            )


def export_payload(tree: Tree, output: Path) -> Fingerprint:
    """Write ``tree`` to ``output`` atomically and fingerprint the result. A symlink at
    ``output`` (planted since start-up) is refused, never followed nor moved."""
    output = output.absolute()
    output.parent.mkdir(parents=True, exist_ok=True)
    check_not_symlink(output)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    old: Path | None = None
    try:
        materialise(tree, tmp)
        os.chmod(tmp, 0o755)
        check_not_symlink(output)
        if os.path.lexists(output):
            old = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-", dir=output.parent))
            os.rmdir(old)
            os.replace(output, old)
        try:
            os.replace(tmp, output)  # rename never follows a link at ``output``: it fails
        except OSError:
            check_not_symlink(output)  # a link planted in the last instant: say so
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not os.path.lexists(output):
            os.replace(old, output)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return fingerprint(output)


def write_sidecar(
    output: Path, report: dict[str, Any], notes: str, pictures: Mapping[str, bytes] | None = None
) -> Path:
    """``report.json``, ``REPOMIN.md`` and the ``pictures`` it links in ``OUTPUT.repomin``
    (created if missing), each written atomically relative to the sidecar's own descriptor: a
    symlink planted at the sidecar or at any file since start-up is refused or replaced, never
    followed. A picture an earlier ``--force`` run left and this report does not draw goes."""
    side = sidecar_dir(output.absolute())
    fd = open_own_dir(side, OUTPUT_FIX)
    try:
        for name in PICTURE_NAMES:
            if pictures and name in pictures:
                write_atomic_at(fd, name, pictures[name])
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=fd)  # removes a link itself, never its target
        write_atomic_at(fd, "report.json", json_bytes(report))
        write_atomic_at(fd, "REPOMIN.md", notes.encode("utf-8"))
    finally:
        os.close(fd)
    return side / "report.json"
