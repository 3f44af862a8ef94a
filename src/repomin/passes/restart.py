"""The ``restart`` pass: retry each surviving file's original content against the current tree.

At a fixpoint every file's content is a local minimum of the path the passes took: an early
cut may have removed what a shorter version of the file needed (``x = f(a)`` kept because the
line defining ``b`` went first), and the content passes only ever shrink what is left. A
restart from the source's content, with the *other* files as they are now, can find a
different, smaller local minimum. For each surviving text file whose content was cut (at most
:data:`MAX_FILES` files in the tree, each at most once per content it had):

1. a *scratch* search starts from the current tree with that file's original content; its
   candidates are all of that form (every other file is protected) and are decided through
   ``problem.probe`` -- the oracle's verdict, cached, **never adopted** -- so the incumbent
   stays the current tree however large the scratch tree is;
2. the content passes (``normalise``, ``python``, ``blocks``, ``brackets``, ``lines``,
   ``pyexpr``: those scheduled; fresh instances, so no state of the main search leaks in) run on
   that file alone, in rounds, until they change nothing or the file's budget of
   :data:`BUDGET` oracle runs is spent (:data:`GIVE_UP` runs when none has been accepted);
3. the scratch search's last accepted tree is proposed to the real problem only when that
   file is then **smaller than it is now**; its reproduction was shown by its own run (the
   cached verdict, so adopting it costs no run), and the real problem's rules apply as for any
   candidate. Otherwise the incumbent is left exactly as it was.

One ``restart`` event per file records the runs, the bytes now / originally / found, and
whether the result was kept. The driver runs the pass only when every other pass stalled
(``STALL_ONLY``); an adopted result gives the other passes another round. A problem without
``probe`` (no way to decide a tree without adopting it) is left alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from repomin.passes.hints import Hinted, SearchHints
from repomin.passes.ordered import Unsettled
from repomin.search.problem import Pass, Problem, ProblemDefaults
from repomin.search.view import OverBudget, focus
from repomin.tree import Tree

#: Only trees of at most this many files (a small residue) are restarted.
MAX_FILES = 16
#: Oracle runs (samples) a file's scratch search may use.
BUDGET = 100
#: A scratch search that has had this many runs without one acceptance gives up: the file's
#: original content no longer reproduces with the other files as they are, and single edits
#: of it do not repair that (measured: most of a restart's cost was such files).
GIVE_UP = 24
#: Rounds of the content passes over the file (each round stops early when nothing changed).
ROUNDS = 4
#: The content passes a restart runs, in this order (those in the schedule).
CONTENT: tuple[str, ...] = ("normalise", "python", "blocks", "brackets", "lines", "pyexpr")

Probe = Callable[[str, Tree], bool]


class Scratch(ProblemDefaults):
    """A throwaway incumbent over a real problem: ``try_first`` decides candidates through
    ``probe`` (never adopted by the real problem) and adopts them here only. Past ``budget``
    runs (the real problem's) the next ``try_first`` raises :class:`OverBudget`."""

    def __init__(
        self, problem: Problem, start: Tree, probe: Probe, budget: int, phase: str = "restart"
    ) -> None:
        self._problem = problem
        self._phase = phase
        self._current = start
        self._probe = probe
        self.probes = 0
        self._start = self.runs
        self._budget = budget
        #: The last tree the probe accepted (None: none was).
        self.won: Tree | None = None

    @property
    def current(self) -> Tree:
        return self._current

    def protected(self, path: str) -> bool:
        return self._problem.protected(path)

    @property
    def miss_rate(self) -> float:  # decided by the real problem's oracle
        return self._problem.miss_rate

    @property
    def runs(self) -> int:
        return self._problem.runs

    def note(self, phase: str, description: str, **fields: Any) -> None:
        self._problem.note(phase, description, **fields)

    def known(self, tree: Tree) -> bool | None:
        return self._problem.known(tree)

    def spent(self) -> int:
        return self.runs - self._start

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        for pos, (tree, _) in enumerate(candidates):
            if not tree.reduces(self._current):
                continue
            if self.spent() >= self._budget or (self.won is None and self.spent() >= GIVE_UP):
                raise OverBudget
            self.probes += 1
            if self._probe(self._phase, tree):  # every run is the restart's, whichever pass
                self._current = self.won = tree
                return pos
        return None


class Restart:
    """The ``restart`` pass (see the module docstring)."""

    name: ClassVar[str] = "restart"

    def __init__(self, origin: Tree | None = None, hints: SearchHints | None = None) -> None:
        #: The source tree (default: the problem's first accepted tree, ``history[0]``).
        self.origin = origin
        self.hints = hints or SearchHints()
        self.content: list[type[Pass]] = []
        #: (path, sha256 of its content) already restarted.
        self.tried: set[tuple[str, str]] = set()
        #: (path, runs, bytes now, bytes originally, bytes found, kept) per restart, in order.
        self.log: list[tuple[str, int, int, int, int, bool]] = []

    def bind(self, instances: Mapping[str, Pass]) -> None:
        """Take the scheduled content passes (their classes: a restart uses fresh instances)."""
        self.content = [_kind(instances[n]) for n in CONTENT if n in instances]

    def run(self, problem: Problem) -> None:
        origin = self.origin or _source(problem)
        if origin is None or not self.content:
            return
        for path in self.targets(problem.current, origin, problem.protected):
            self._retry(problem, path, origin.entries[path].data, problem.probe)

    def targets(self, tree: Tree, origin: Tree, protected: Callable[[str], bool]) -> list[str]:
        """Text files of ``tree`` whose content was cut and not yet restarted, largest first."""
        if tree.file_count > MAX_FILES:
            return []
        out = []
        for path, entry in tree.entries.items():
            source = origin.entries.get(path)
            if entry.kind != "file" or not entry.text or protected(path):
                continue
            if source is None or source.kind != "file" or source.data == entry.data:
                continue
            if (path, _sha(entry.data)) not in self.tried:
                out.append(path)
        return sorted(out, key=lambda p: (-tree.entries[p].size, p))

    def _retry(self, problem: Problem, path: str, original: bytes, probe: Probe) -> None:
        now = problem.current.entries.get(path)
        if now is None:
            return
        self.tried.add((path, _sha(now.data)))
        scratch = Scratch(problem, problem.current.replace(path, original), probe, BUDGET)
        view = focus(scratch, path)
        passes = [self._fresh(kind) for kind in self.content]
        try:
            for _ in range(ROUNDS):
                before = scratch.current.digest
                for content in passes:
                    content.run(view)
                if scratch.current.digest == before:
                    break
        except OverBudget:
            pass
        best = scratch.won
        found = _size(best, path) if best is not None else len(original)
        kept = False
        if best is not None and found < now.size:
            what = f"restart {path} from its original content: {now.size} -> {found} B"
            kept = problem.try_first(self.name, [(best, what)]) is not None
            if kept:  # what a restart of the file found: not restarted again for itself
                self.tried.add((path, _sha(best.entries[path].data)))
        self.log.append((path, scratch.spent(), now.size, len(original), found, kept))
        outcome = f"{now.size} -> {found} B" if best is not None else "no version reproduced"
        _event(
            problem,
            f"{path}: restarted from its original {len(original)} B, {scratch.spent()} oracle "
            f"runs, {outcome}, " + ("kept" if kept else "not kept"),
            path=path,
            runs_on_file=scratch.spent(),
            bytes_before=now.size,
            bytes_original=len(original),
            bytes_found=found if best is not None else None,
            kept=kept,
        )

    def _fresh(self, kind: type[Pass]) -> Pass:
        instance = kind()
        if isinstance(instance, Hinted):
            instance.hints = self.hints
        return instance


def bind_restart(instances: Mapping[str, Pass]) -> None:
    """Bind the restart pass (when scheduled) to the scheduled content passes."""
    restart = instances.get(Restart.name)
    if isinstance(restart, Restart):
        restart.bind(instances)


def _kind(instance: Pass) -> type[Pass]:
    inner = instance.inner if isinstance(instance, Unsettled) else instance
    return type(inner)


def _source(problem: Problem) -> Tree | None:
    history = problem.history
    return history[0] if history else None


def _size(tree: Tree, path: str) -> int:
    entry = tree.entries.get(path)
    return entry.size if entry is not None else 0


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _event(problem: Problem, description: str, **fields: Any) -> None:
    problem.note(Restart.name, description, **fields)


__all__: Sequence[str] = ("BUDGET", "GIVE_UP", "MAX_FILES", "Restart", "Scratch", "bind_restart")
