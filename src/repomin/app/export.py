"""Export: write the payload and its sidecar atomically, next to each other, never inside.

The payload is materialised into a temporary sibling of OUTPUT (files and symlinks keep SRC's
modification times, see :func:`repomin.tree.materialise`) and renamed into place; an
existing OUTPUT is only replaced with ``--force`` (moved aside first, removed after the rename).
The sidecar ``OUTPUT.repomin/`` holds ``report.json`` and ``REPOMIN.md``, each written via a
temporary file and ``os.replace``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from repomin.errors import UsageError
from repomin.report.fingerprint import Fingerprint, fingerprint
from repomin.tree import Tree, materialise


def sidecar_dir(output: Path) -> Path:
    return output.with_name(output.name + ".repomin")


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def check_output_location(src: Path, output: Path, *, force: bool) -> None:
    """Refuse an OUTPUT that would modify SRC or clobber something without ``--force``."""
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
    """Write ``tree`` to ``output`` atomically and fingerprint the result."""
    output = output.absolute()
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}.tmp-", dir=output.parent))
    old: Path | None = None
    try:
        materialise(tree, tmp)
        os.chmod(tmp, 0o755)
        if output.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{output.name}.old-", dir=output.parent))
            os.rmdir(old)
            os.replace(output, old)
        os.replace(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not output.exists():
            os.replace(old, output)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return fingerprint(output)
