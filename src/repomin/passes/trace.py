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
from concurrent.futures import Future
from dataclasses import dataclass
from typing import ClassVar

from repomin.analysis.trace import TraceResult
from repomin.passes.base import Problem
from repomin.passes.hints import SearchHints
from repomin.sampling.parallel import in_background
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
    candidate. A traced run that did not reproduce the failure is not used (it may have taken
    another path). Each new trace also refreshes the priors of the deletion search. With
    several slots (``batch_width`` > 1) the re-traced run goes in the background and its cut
    is proposed by :meth:`settle`, which the driver calls after the next pass that draws
    samples: the traced run, several samples long, no longer holds up every slot.
    """

    name: ClassVar[str] = "trace"

    def __init__(self, trace: TraceResult | None = None) -> None:
        self.trace = trace
        self.done = False
        self.hints: SearchHints | None = None
        #: The tree the latest trace ran on (content changes are measured against it).
        self._traced: Tree | None = None
        self.retraces = 0
        self._background: Retrace | None = None

    def run(self, problem: Problem) -> None:
        if self.trace is None or self.trace.opened is None:
            return
        if not self.done:
            self.done = True
            self._traced = problem.current  # the baseline tree's trace, up to the journal
            self._cut(problem, self.trace, "traced run")
            return
        if getattr(problem, "batch_width", 1) > 1:
            self._background = self.start(problem)
            return
        due = self._due(problem)
        if due is not None:
            self.finish(problem, due[0](due[1]), self.retraces)

    def pending(self) -> bool:
        return self._background is not None

    def settle(self, problem: Problem) -> None:
        """Wait for the re-traced run :meth:`run` left in the background; propose its cut."""
        retrace, self._background = self._background, None
        if retrace is not None:
            self.finish(problem, retrace.result.result(), retrace.number)

    def drop(self) -> None:
        retrace, self._background = self._background, None
        if retrace is not None:
            retrace.result.result()

    def start(self, problem: Problem) -> Retrace | None:
        """The re-trace ``run`` would make now, in the background (None: none is due); after
        the first cut only. :meth:`finish` proposes its cut later, against the tree then."""
        self.settle(problem)  # one re-trace in flight at a time
        due = self._due(problem) if self.done else None
        if due is None:
            return None
        retrace, tree = due
        return Retrace(in_background(lambda: retrace(tree)), self.retraces)

    def _due(self, problem: Problem) -> tuple[Callable[[Tree], TraceResult], Tree] | None:
        retrace = self.hints.retrace if self.hints is not None else None
        tree = problem.current
        if retrace is None or self._traced is None or not _content_changed(self._traced, tree):
            return None
        self._traced = tree
        self.retraces += 1
        return retrace, tree

    def finish(self, problem: Problem, result: TraceResult, number: int) -> None:
        """Renew the hints from a re-traced run and propose its cut (when it reproduced)."""
        if result.opened is None or result.reproduced is False:
            return
        if self.hints is not None:
            self.hints.update_trace(result)
        self._cut(problem, result, f"re-traced run {number}")

    def _cut(self, problem: Problem, trace: TraceResult, which: str) -> None:
        tree = problem.current
        keep = kept_by_trace(tree, trace, problem.protected)
        drop = [p for p in tree.entries if p not in keep]
        if not drop:
            return
        candidate = tree.without(drop)
        gone = tree.file_count - candidate.file_count
        description = (
            f"delete the {gone} file{'' if gone == 1 else 's'} the {which} ({trace.method}) "
            f"never touched; keep {candidate.file_count}"
        )
        problem.try_first(self.name, [(candidate, description)])


@dataclass(frozen=True, slots=True)
class Retrace:
    """A re-traced run in flight (:meth:`TraceCut.start`) and its number."""

    result: Future[TraceResult]
    number: int


def _content_changed(before: Tree, after: Tree) -> bool:
    """Did a file present in both trees change its content (not only deletions)?"""
    old = before.entries
    for path, entry in after.entries.items():
        prior = old.get(path)
        if prior is not None and prior is not entry and prior.data != entry.data:
            return True
    return False
