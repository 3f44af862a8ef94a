"""The ``ordered`` pass: content passes file by file, in the order the traced run opened them.

A load chain shrinks from its entry point: once ``app.js`` has lost ``require('express')`` and
the lines that use it, a re-traced run no longer opens any express file, and one candidate
deletes them all; once the next file in the chain has lost the ``require`` calls it does not
need, another re-traced cut follows, and so on. Polishing leaves first (the largest file first,
as the content passes do on their own) spends runs on files a later cut deletes whole.

So, per round -- after the ``files`` pass: in full when the tree has at most
``search.deletion.paths.FLAT_LIMIT`` files (its flat search is cheap there, and a build that
reads every file gives no load order), on a short leash when it has more
(:meth:`TraceOrder.head_start`) -- for each text file in first-open order of the latest usable
trace (the files the trace never named follow, largest first):

1. propose deleting the file (one candidate; with ``--jobs`` the content passes' candidates
   follow in the next calls),
2. else run the bound content passes (``python``, ``blocks``, ``brackets``, ``lines``, those
   in the schedule) on that file alone: every other file is protected in the view they see,
3. if the file changed, run the cuts (``trace``: a fresh traced run and its cut, which also
   renews the order; ``refs``: the reference-graph cut); with several slots the traced run
   goes in the background and its cut follows the next file's work -- after the last file,
   the search layer settles it after the next pass that draws samples (``Problem.later``),

then take the next file not yet worked on this round in the (possibly renewed) order, skipping
the files finished in an earlier round and unchanged since (a file another file's change made
reducible waits for the round that skips nothing, which the driver runs before it calls the
tree a fixpoint: :class:`~repomin.search.problem.Remembering`). A file gets at most
:data:`FIRST_BUDGET` oracle runs in the first sweep; the files a budget cut short are taken
again in a further sweep with four times the budget, until every file is done. Each file's
cost is an event (oracle runs and bytes before/after). Finished files are *settled* at the
entry they ended with: the stand-alone content passes (:class:`Unsettled`) skip them, so a
file is not searched twice; a file changed since (by another pass) is not settled. Without a
usable trace with an order the pass does nothing and the stand-alone passes work as before.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from repomin.passes.cuts import follow, scheduled_cuts
from repomin.passes.hints import SearchHints
from repomin.search.deletion.paths import FLAT_LIMIT
from repomin.search.problem import Lookahead, Pass, Problem
from repomin.search.view import OverBudget, View, focus
from repomin.tree import Entry, Tree

#: The content passes the ordered pass runs per file, in this order (when scheduled).
CONTENT: tuple[str, ...] = ("coverage", "python", "blocks", "brackets", "lines")
#: Oracle runs a file may use in the first sweep of a round; every further sweep (over the
#: files a budget cut short) gives four times as many. A large leaf (a 1,600-line lexer) must
#: not hold up the files after it in the load chain, whose edits cut whole subtrees.
FIRST_BUDGET = 150


class TraceOrder:
    """The ``ordered`` pass (see the module docstring)."""

    name: ClassVar[str] = "ordered"

    def __init__(self, hints: SearchHints | None = None) -> None:
        self.hints = hints or SearchHints()
        self.content: list[Pass] = []
        self.cuts: list[Pass] = []
        #: The ``files`` pass, run first when the tree is a small residue (see ``run``).
        self.files: Pass | None = None
        #: Files finished (in this round or an earlier one), with the entry each ended with.
        self.settled: dict[str, Entry] = {}
        #: A round skipped a file finished in an earlier round since :meth:`forget`.
        self.skipped = False
        #: (path, oracle runs, bytes before, bytes after) per file worked on, in order.
        self.log: list[tuple[str, int, int, int]] = []

    def bind(self, instances: Mapping[str, Pass]) -> None:
        """Take the scheduled content passes and cuts from the pass instances."""
        self.content = [instances[n] for n in CONTENT if n in instances]
        self.cuts = scheduled_cuts(instances)
        self.files = instances.get("files")

    def is_settled(self, tree: Tree, path: str) -> bool:
        entry = self.settled.get(path)
        return entry is not None and tree.entries.get(path) is entry

    def order(self, problem: Problem, done: set[str]) -> list[str]:
        """Text files of the incumbent not yet worked on: first-open order, then the rest."""
        tree = problem.current
        trace = self.hints.trace
        traced = list(trace.order) if trace is not None else []
        rank = {p: i for i, p in enumerate(traced)}
        files = [
            p
            for p, e in tree.entries.items()
            if e.kind == "file" and e.text and e.data and p not in done and not problem.protected(p)
        ]
        return sorted(files, key=lambda p: (rank.get(p, len(rank)), -tree.entries[p].size, p))

    def forget(self) -> bool:
        """Forget the files finished in earlier rounds (the driver, after a round that changed
        nothing: :class:`~repomin.search.problem.Remembering`); True if a round skipped one."""
        skipped, self.skipped = self.skipped, False
        self.settled = {}
        return skipped

    def run(self, problem: Problem) -> None:
        problem.settle(self.name)  # a re-trace the driver did not settle (a direct caller)
        tree = problem.current
        self.settled = {p: e for p, e in self.settled.items() if tree.entries.get(p) is e}
        self.skipped |= bool(self.settled)
        trace = self.hints.trace
        if trace is None or not trace.order or not self.content:
            return
        if self.files is not None and problem.current.file_count <= FLAT_LIMIT:
            # A small residue: the flat learning search over its files costs about
            # 3·k·log2(N/k) runs, less than content passes on files it deletes (a build that
            # reads every file gives no load order to follow).
            self.files.run(problem)
        elif self.files is not None:
            self.head_start(problem, self.files)
        budget = FIRST_BUDGET
        try:
            while True:  # sweeps: the files a budget cut short get a larger one next time
                done: set[str] = set()
                short = False
                while True:
                    pending = [
                        p
                        for p in self.order(problem, done)
                        if not self.is_settled(problem.current, p)
                    ]
                    if not pending:
                        break
                    path = pending[0]
                    done.add(path)
                    short |= self._work(problem, path, budget, pending[1:2])
                if not short:
                    return  # the driver settles the last re-trace, if it runs beside
                budget *= 4
        except BaseException:
            problem.settle(self.name, propose=False)  # stopped: wait, propose nothing
            raise

    def head_start(self, problem: Problem, files: Pass) -> None:
        """The ``files`` search over a large tree before any file's content, on a short leash:
        at most a file's first budget of runs (:data:`FIRST_BUDGET`), and at most
        ``ceil(log2(N))`` runs without an acceptance -- the cost of one halving descent through
        N files that found nothing to delete, the evidence that the files are mostly needed
        as they are (a load chain, where they go only once an entry point shrinks). Where most
        files can go whole (a test suite's data files, a library its driver never reaches) it
        removes them at about ``k·log2(N/k)`` runs before a content pass spends a run on them;
        where they cannot, it stops after a few runs. One ``ordered`` event says what it did,
        also when the reduction stops during it."""
        tree = problem.current
        drought = math.ceil(math.log2(tree.file_count))
        runs = problem.runs
        stopped = ""
        try:
            with contextlib.suppress(OverBudget):
                files.run(View(problem, lambda _: False, FIRST_BUDGET, drought=drought))
        except BaseException:
            stopped = " (the search stopped during it)"
            raise
        finally:  # the event also when the reduction stops inside it (--max-time)
            spent = problem.runs - runs
            now = problem.current.file_count
            problem.note(
                self.name,
                f"files search first over {tree.file_count} files (at most {FIRST_BUDGET} runs, "
                f"{drought} without an acceptance): {spent} oracle runs, "
                f"{tree.file_count} -> {now} files{stopped}",
                runs=spent,
                files_before=tree.file_count,
                files_after=now,
            )

    def _first(self, problem: Problem, files: list[str], k: int) -> list[Tree]:
        """What this pass proposes first for the next file if the incumbent stays as it is
        (up to ``k`` trees): its deletion, or when that is decided (rejected), its content
        passes' first proposals (:class:`~repomin.search.problem.Lookahead`)."""
        if not files or files[0] not in problem.current:
            return []
        deletion = problem.current.without(files[:1])
        decided = problem.known(deletion)
        if decided is None or decided:
            return [deletion] if decided is None else []
        for content in self.content:
            if isinstance(content, Lookahead):
                trees = content.first_trees(focus(problem, files[0]), files[0], k)
                if trees:
                    return trees
        return []

    def _work(self, problem: Problem, path: str, budget: int, then: list[str]) -> bool:
        """Work on one file; True when its budget cut the content passes short. ``then``:
        the file that comes next if this one ends as it is (:meth:`_first`)."""
        before = problem.current
        entry = before.entries[path]
        runs = problem.runs
        short = False
        if problem.try_first(self.name, [(before.without([path]), f"delete {path}")]) is None:
            view = focus(problem, path, budget, lambda k: self._first(problem, then, k))
            try:
                for content in self.content:
                    if path not in problem.current:
                        break
                    content.run(view)
            except OverBudget:
                short = True
        after = problem.current.entries.get(path)
        problem.settle(self.name)  # the previous file's re-trace ran beside this file's work
        if after is not entry:
            self._cut(problem)
        final = problem.current.entries.get(path)
        if final is not None and not short:
            self.settled[path] = final
        size = final.size if final is not None else 0
        spent = problem.runs - runs
        self.log.append((path, spent, entry.size, size))
        problem.note(
            self.name,
            f"{path}: {spent} oracle runs, {entry.size} -> {size} B"
            + ("" if final is not None else " (deleted)")
            + (f" (budget of {budget} runs used; continued in a later sweep)" if short else ""),
            path=path,
            runs_on_file=spent,
            bytes_before=entry.size,
            bytes_after=size,
            budget_used=short,
        )
        return short

    def _cut(self, problem: Problem) -> None:
        """The cuts after a changed file. The re-traced run goes where the search layer puts
        it (``problem.later``): with several slots (a deterministic command and ``--jobs`` >
        1) in the background, its cut proposed after the next file's work (``settle`` in
        :meth:`_work`), so that the serial traced run (3-4 samples long) no longer holds up
        both slots; with one slot at once. The next file is still taken in the older order;
        its deletion comes first, and one rejected means it is needed, so no cut takes it."""
        follow(problem, self.cuts, self.name)


class Unsettled:
    """A stand-alone content pass that skips the files :class:`TraceOrder` settled this round."""

    def __init__(self, inner: Pass, ordered: TraceOrder) -> None:
        self.inner = inner
        self.ordered = ordered
        self.name = inner.name

    def run(self, problem: Problem) -> None:
        self.inner.run(View(problem, lambda p: self.ordered.is_settled(problem.current, p)))


def wrap_unsettled(instances: dict[str, Pass]) -> None:
    """Bind the ordered pass (when scheduled) and make the content passes skip what it settled."""
    ordered = instances.get(TraceOrder.name)
    if not isinstance(ordered, TraceOrder):
        return
    ordered.bind(instances)
    for name in CONTENT:
        if name in instances:
            instances[name] = Unsettled(instances[name], ordered)  # type: ignore[assignment]


__all__: Sequence[str] = ("CONTENT", "TraceOrder", "Unsettled", "wrap_unsettled")
