"""The ``trace`` pass: delete every file the traced run never touched, in one candidate.

It runs once, before anything else, from a :class:`~repomin.trace.TraceResult` the driver
obtained right after the baseline. The candidate keeps every touched path, every tree entry on
the way to one (a symlinked directory in ``link/file``), the targets of kept symlinks, and kept
paths (``--keep``); with the atime method, which cannot see symlinks or directories, all
symlinks and empty directories stay too. If the oracle rejects the candidate, nothing happens:
the other passes start from the unchanged tree.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import ClassVar

from repomin.passes.base import Problem
from repomin.trace import TraceResult
from repomin.tree import Tree


def kept_by_trace(tree: Tree, trace: TraceResult, protected: Callable[[str], bool]) -> set[str]:
    """The paths of ``tree`` the trace says (or suggests) the command needs."""
    opened = trace.opened or frozenset()
    keep: set[str] = set()
    pending = list(opened)
    while pending:
        path = pending.pop()
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            entry = tree.entries.get(prefix)
            if entry is None or prefix in keep:
                continue
            keep.add(prefix)
            if entry.kind == "symlink":
                target = os.fsdecode(entry.data)
                if not target.startswith("/"):
                    resolved = os.path.normpath(os.path.join(os.path.dirname(prefix), target))
                    if not resolved.startswith(".."):
                        pending.append(resolved + "/".join(["", *parts[i:]]))
    for path, entry in tree.entries.items():
        if protected(path) or (trace.method == "atime" and entry.kind in ("symlink", "dir")):
            keep.add(path)
    return keep


class TraceCut:
    """Proposes the trace-guided cut once; a no-op without a usable trace."""

    name: ClassVar[str] = "trace"

    def __init__(self, trace: TraceResult | None = None) -> None:
        self.trace = trace
        self.done = False

    def run(self, problem: Problem) -> None:
        if self.done or self.trace is None or self.trace.opened is None:
            return
        self.done = True
        tree = problem.current
        keep = kept_by_trace(tree, self.trace, problem.protected)
        drop = [p for p in tree.entries if p not in keep]
        if not drop:
            return
        candidate = tree.without(drop)
        description = (
            f"delete the {tree.file_count - candidate.file_count} files the traced run "
            f"({self.trace.method}) never touched; keep {candidate.file_count}"
        )
        problem.try_first(self.name, [(candidate, description)])
