"""The ``ordered`` pass: content passes file by file, in the order the traced run opened them.

A load chain shrinks from its entry point: once ``app.js`` has lost ``require('express')`` and
the lines that use it, a re-traced run no longer opens any express file, and one candidate
deletes them all; once the next file in the chain has lost the ``require`` calls it does not
need, another re-traced cut follows, and so on. Polishing leaves first (the largest file first,
as the content passes do on their own) spends runs on files a later cut deletes whole.

So, per round (after the ``files`` pass when the tree has at most ``files.FLAT_LIMIT`` files:
its flat search is cheap there, and a build that reads every file gives no load order), for
each text file in first-open order of the latest usable trace (the files
the trace never named follow, largest first):

1. propose deleting the file (one candidate; with ``--jobs`` the content passes' candidates
   follow in the next calls),
2. else run the bound content passes (``python``, ``blocks``, ``brackets``, ``lines``, those
   in the schedule) on that file alone: every other file is protected in the view they see,
3. if the file changed, run the cuts (``trace``: a fresh traced run and its cut, which also
   renews the order; ``refs``: the reference-graph cut); with several slots the traced run
   goes in the background and its cut follows the next file's work -- after the last file,
   the driver settles it after the next pass that draws samples (``passes.base.Deferred``),

then take the next file not yet worked on this round in the (possibly renewed) order. A file
gets at most :data:`FIRST_BUDGET` oracle runs in the first sweep; the files a budget cut short
are taken again in a further sweep with four times the budget, until every file is done. Each
file's cost is an event (oracle runs and bytes before/after). Files finished this round are
*settled* at the entry they ended with: the stand-alone content passes of the same round
(:class:`Unsettled`) skip them, so a file is not searched twice in one round; a file changed
since (by another pass) is not settled. Without a usable trace with an order the pass does
nothing and the stand-alone passes work as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from repomin.passes.base import Combine, Pass, Problem, Spare, Speculate
from repomin.passes.files import FLAT_LIMIT
from repomin.passes.hints import SearchHints
from repomin.passes.trace import Retrace, TraceCut
from repomin.tree import Entry, Tree

#: The content passes the ordered pass runs per file, in this order (when scheduled).
CONTENT: tuple[str, ...] = ("coverage", "python", "blocks", "brackets", "lines")
#: Oracle runs a file may use in the first sweep of a round; every further sweep (over the
#: files a budget cut short) gives four times as many. A large leaf (a 1,600-line lexer) must
#: not hold up the files after it in the load chain, whose edits cut whole subtrees.
FIRST_BUDGET = 150
#: The cuts it runs after a file changed.
CUTS: tuple[str, ...] = ("trace", "refs")


class _Events(Protocol):
    def event(self, phase: str, description: str, **fields: Any) -> dict[str, Any]: ...


class _Samples(Protocol):
    @property
    def samples(self) -> int: ...


class OverBudget(Exception):
    """A focused file used its runs for this sweep (raised to unwind the content pass)."""


class View:
    """A :class:`Problem` seen through an extra protection rule (everything else delegated),
    optionally with a budget of oracle runs: past it, no more candidates are handed on and the
    next ``try_first`` raises :class:`OverBudget`."""

    def __init__(
        self, problem: Problem, protect: Callable[[str], bool], budget: int | None = None
    ) -> None:
        self._problem = problem
        self._protect = protect
        self._limit = None if budget is None else _samples(problem) + budget
        #: What the caller proposes after the content passes, if the tree stays as it is
        #: (``learn_delete``'s ``then``; the ordered pass: the next file's first candidates).
        self.then: Spare | None = None

    def _over(self) -> bool:
        return self._limit is not None and _samples(self._problem) >= self._limit

    @property
    def current(self) -> Tree:
        return self._problem.current

    def protected(self, path: str) -> bool:
        return self._protect(path) or self._problem.protected(path)

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        if self._over():
            raise OverBudget
        return self._problem.try_first(phase, self._bounded(candidates))

    def try_batch(
        self,
        phase: str,
        candidates: Sequence[tuple[Tree, str]],
        ahead: Speculate | None = None,
        combine: Combine | None = None,
        spare: Spare | None = None,
    ) -> list[bool | None]:
        # The learning search decides batches here when the problem has slots (``--jobs``):
        # without this the budget was checked only on ``try_first`` and a batched search of a
        # large file ran past it (found on the npm case: the lexer kept the cap to itself).
        if self._over():
            raise OverBudget
        batch: Callable[..., list[bool | None]] = self._problem.try_batch  # type: ignore[attr-defined]
        return batch(phase, candidates, ahead, combine, spare)

    def _bounded(self, candidates: Iterable[tuple[Tree, str]]) -> Iterator[tuple[Tree, str]]:
        it = iter(candidates)
        # Checked before each pull: a lazy proposer (repomin.passes.deletion.chain) then proposes
        # only what is handed on, and only what was handed on is tried
        # (the search stays consistent).
        while not self._over():
            item = next(it, None)
            if item is None:
                return
            yield item

    # Read-only forwards of what passes and the learning search read from a problem (named,
    # not a blanket ``__getattr__``: a future Problem method that decides candidates must be
    # added here, with the budget check, or it is absent from the view).
    @property
    def batch_width(self) -> int:
        width: int = getattr(self._problem, "batch_width", 1)
        return width

    @property
    def chain_width(self) -> int:  # flaky: try_first keeps this many candidates in flight
        width: int = getattr(self._problem, "chain_width", 1)
        return width

    @property
    def oracle(self) -> Any:
        return getattr(self._problem, "oracle", None)

    @property
    def ledger(self) -> Any:
        return getattr(self._problem, "ledger", None)


def focus(problem: Problem, path: str, budget: int | None = None) -> View:
    """``problem`` with every file but ``path`` protected (content passes edit ``path`` only)."""
    return View(problem, lambda p: p != path, budget)


class TraceOrder:
    """The ``ordered`` pass (see the module docstring)."""

    name: ClassVar[str] = "ordered"

    def __init__(self, hints: SearchHints | None = None) -> None:
        self.hints = hints or SearchHints()
        self.content: list[Pass] = []
        self.cuts: list[Pass] = []
        #: The ``files`` pass, run first when the tree is a small residue (see ``run``).
        self.files: Pass | None = None
        #: Files finished in the latest round, with the entry each ended with.
        self.settled: dict[str, Entry] = {}
        #: (path, oracle runs, bytes before, bytes after) per file worked on, in order.
        self.log: list[tuple[str, int, int, int]] = []
        #: The re-traced run in the background (several slots) and the cut it belongs to.
        self._pending: tuple[TraceCut, Retrace] | None = None

    def bind(self, instances: Mapping[str, Pass]) -> None:
        """Take the scheduled content passes and cuts from the pass instances."""
        self.content = [instances[n] for n in CONTENT if n in instances]
        self.cuts = [instances[n] for n in CUTS if n in instances]
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

    def run(self, problem: Problem) -> None:
        self._join(problem)  # a re-trace the driver did not settle (a direct caller)
        self.settled = {}
        trace = self.hints.trace
        if trace is None or not trace.order or not self.content:
            return
        if self.files is not None and problem.current.file_count <= FLAT_LIMIT:
            # A small residue: the flat learning search over its files costs about
            # 3·k·log2(N/k) runs, less than content passes on files it deletes (a build that
            # reads every file gives no load order to follow).
            self.files.run(problem)
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
                    if getattr(problem, "batch_width", 1) <= 1:
                        self._join(problem)
                    return  # else the driver settles the last re-trace (``settle``)
                budget *= 4
        except BaseException:
            self._join(problem, propose=False)  # stopped: wait for it, propose nothing
            raise

    def pending(self) -> bool:
        return self._pending is not None

    def _first(self, problem: Problem, files: list[str], width: int) -> list[Tree]:
        """What this pass proposes first for the next file if the incumbent stays as it is:
        its deletion, or when that is decided (rejected), its content passes' first batch
        (``first_trees``) -- for a content pass's last batch to run in its idle slots."""
        if not files or files[0] not in problem.current:
            return []
        deletion = problem.current.without(files[:1])
        oracle = getattr(problem, "oracle", None)
        decided = oracle.cached(deletion) if oracle is not None else None
        if decided is None or decided.accepted:
            return [deletion] if decided is None else []
        for content in self.content:
            first = getattr(content, "first_trees", None)
            trees: list[Tree] = first(focus(problem, files[0]), files[0], width) if first else []
            if trees:
                return trees
        return []

    def settle(self, problem: Problem) -> None:
        """Propose the cut of the last file's re-trace, which ran beside the next pass."""
        self._join(problem)

    def drop(self) -> None:
        if self._pending is not None:
            self._pending[1].result.result()
            self._pending = None

    def _work(self, problem: Problem, path: str, budget: int, then: list[str]) -> bool:
        """Work on one file; True when its budget cut the content passes short. ``then``:
        the file that comes next if this one ends as it is (:meth:`_first`)."""
        before = problem.current
        entry = before.entries[path]
        runs = _samples(problem)
        short = False
        if problem.try_first(self.name, [(before.without([path]), f"delete {path}")]) is None:
            view = focus(problem, path, budget)
            view.then = lambda k: self._first(problem, then, k)
            try:
                for content in self.content:
                    if path not in problem.current:
                        break
                    content.run(view)
            except OverBudget:
                short = True
        after = problem.current.entries.get(path)
        self._join(problem)  # the previous file's re-trace ran beside this file's samples
        if after is not entry:
            self._cut(problem)
        final = problem.current.entries.get(path)
        if final is not None and not short:
            self.settled[path] = final
        size = final.size if final is not None else 0
        spent = _samples(problem) - runs
        self.log.append((path, spent, entry.size, size))
        _event(
            problem,
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
        """The cuts after a changed file. With several slots (a deterministic command and
        ``--jobs`` > 1) the re-traced run goes in the background and its cut is proposed after
        the next file's work (:meth:`_join`): the serial traced run (3-4 samples long) no
        longer holds up both slots. The next file is still taken in the older order; its
        deletion comes first, and one rejected means it is needed, so no cut takes it."""
        for cut in self.cuts:
            if isinstance(cut, TraceCut) and getattr(problem, "batch_width", 1) > 1:
                retrace = cut.start(problem)
                self._pending = (cut, retrace) if retrace is not None else None
            else:
                cut.run(problem)

    def _join(self, problem: Problem, propose: bool = True) -> None:
        """Wait for the re-traced run in the background, if any, and propose its cut."""
        if self._pending is None:
            return
        cut, retrace = self._pending
        self._pending = None
        result = retrace.result.result()
        if propose:
            cut.finish(problem, result, retrace.number)


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


def _samples(problem: Problem) -> int:
    oracle: _Samples | None = getattr(problem, "oracle", None)
    return oracle.samples if oracle is not None else 0


def _event(problem: Problem, phase: str, description: str, **fields: Any) -> None:
    ledger = getattr(problem, "ledger", None)
    if ledger is not None and callable(getattr(ledger, "event", None)):
        events: _Events = ledger
        events.event(phase, description, decision="info", **fields)


__all__: Sequence[str] = ("CONTENT", "TraceOrder", "Unsettled", "View", "focus", "wrap_unsettled")
