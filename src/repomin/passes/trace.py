"""The ``trace`` pass: delete every file the traced run never touched, in one candidate.

It runs first, from a :class:`~repomin.analysis.trace.TraceResult` the driver obtained right after
the
baseline, and again (a fresh traced run) in later rounds after content edits (see
:class:`TraceCut`). The candidate keeps every touched path, every tree entry on
the way to one (a symlinked directory in ``link/file``), the targets of kept symlinks, and kept
paths (``--keep``); with the atime method, which cannot see symlinks or directories, all
symlinks and empty directories stay too. If the oracle rejects the candidate, nothing happens:
the other passes start from the unchanged tree.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import ClassVar

from repomin.analysis.trace import TraceResult
from repomin.passes.hints import SearchHints
from repomin.search.problem import Problem
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
    """Proposes the trace-guided cut; later, after content edits, re-traces and cuts again.

    The first run uses the trace the pipeline took right after the baseline. In every later
    round, when ``hints.retrace`` is available, the first trace was usable, and some file's
    content changed since the tree last traced (a content pass may have removed the code that
    loaded other files), the command is traced again on the current tree (an event, never an
    oracle sample) and deleting everything that run no longer touched is proposed as one
    candidate. A traced run that did not reproduce the failure (a flaky failure's traced run
    misses as often as its samples) still proposes its cut, which the oracle decides like any
    candidate; the priors, the file order and the coverage are refreshed only from runs that
    reproduced it (another path may have run). The
    re-traced run goes where the search layer puts it (``problem.later``): with several slots
    in the background, its cut proposed when the search settles it (after the next pass that
    draws samples), so that the traced run, several samples long, no longer holds up every
    slot; with one slot at once.
    """

    name: ClassVar[str] = "trace"

    def __init__(self, trace: TraceResult | None = None) -> None:
        self.trace = trace
        self.done = False
        self.hints: SearchHints | None = None
        #: The tree the latest trace ran on (content changes are measured against it).
        self._traced: Tree | None = None
        self.retraces = 0

    def run(self, problem: Problem) -> None:
        if self.trace is None or self.trace.opened is None:
            return
        if not self.done:
            self.done = True
            self._traced = problem.current  # the baseline tree's trace, up to the journal
            self._cut(problem, self.trace, "traced run")
            return
        self.retrace(problem, self.name)

    def retrace(self, problem: Problem, owner: str) -> None:
        """Trace the command again when a file's content changed since the last trace, and
        propose the cut of that run when it finishes: at once, or beside the next work when
        the search layer runs it in the background (settled as ``owner``'s work). After the
        first cut only; one re-trace in flight at a time."""
        problem.settle(self.name)
        due = self._due(problem) if self.done else None
        if due is None:
            return
        retrace, tree = due
        number = self.retraces
        problem.later(owner, lambda: retrace(tree), lambda r: self.finish(problem, r, number))

    def _due(self, problem: Problem) -> tuple[Callable[[Tree], TraceResult], Tree] | None:
        retrace = self.hints.retrace if self.hints is not None else None
        tree = problem.current
        if retrace is None or self._traced is None or not _content_changed(self._traced, tree):
            return None
        self._traced = tree
        self.retraces += 1
        return retrace, tree

    def finish(self, problem: Problem, result: TraceResult, number: int) -> None:
        """Propose a re-traced run's cut, and renew the hints from it when it reproduced."""
        if result.opened is None:
            return
        note = ""
        if result.reproduced is False:
            # A flaky failure's traced run misses as often as its samples do; its cut is a
            # candidate like any (the oracle decides), but its order, priors and coverage may
            # be those of another path, so the hints stay those of the last reproducing run.
            note = " (that run did not reproduce the failure)"
        elif self.hints is not None:
            self.hints.update_trace(result)
        self._cut(problem, result, f"re-traced run {number}", note)

    def _cut(self, problem: Problem, trace: TraceResult, which: str, note: str = "") -> None:
        tree = problem.current
        keep = kept_by_trace(tree, trace, problem.protected)
        drop = [p for p in tree.entries if p not in keep]
        if not drop:
            return
        candidate = tree.without(drop)
        gone = tree.file_count - candidate.file_count
        description = (
            f"delete the {gone} file{'' if gone == 1 else 's'} the {which} ({trace.method}) "
            f"never touched; keep {candidate.file_count}{note}"
        )
        problem.try_first(self.name, [(candidate, description)])


def _content_changed(before: Tree, after: Tree) -> bool:
    """Did a file present in both trees change its content (not only deletions)?"""
    old = before.entries
    for path, entry in after.entries.items():
        prior = old.get(path)
        if prior is not None and prior is not entry and prior.data != entry.data:
            return True
    return False
