"""Line deletion inside text files (the learning deletion search), largest files first.

Binary files are never cut. Kept paths are never edited. Lines keep their own endings, so a
file's last line without a newline stays that way. The structure passes' syntax guard applies:
in a Python or JSON file that currently parses, a candidate that does not parse is not proposed
(it becomes a no-op and costs no run). With ``--jobs``, a search that a folded candidate cut
short (the file is not what it searched any more) starts again on the new content.

Where the ``python`` pass is scheduled, a line of a Python file it reduces that is a whole
statement of its own (``PySource.one_line_units``) is not a unit here: deleting that line is the
very candidate of that pass's statement search, which tests every statement alone against the
tree it ends with, so a line search after it would test each such line again (on a file the
statement search has just left, almost always to a rejection). That search goes down the bodies
level by level; a one-line binding an upper level kept for a reader below that has gone since
is tried again at its end (``python_ast``: the freed bindings). Under a flaky oracle (one that
can reject a good candidate) a statement that binds a name stays a unit here instead, and the
statement search has no freed-binding search: the line search's test of a binding is also a
second chance for a rejection that was a miss (measured: the suite's flaky pytest case ended
larger at its cap with the bindings held). The lines inside multi-line statements (elements of
a literal, arguments of a call), compound headers and everything in other files stay units.

The files' searches go to the search layer together (``search.deletion.lockstep``), which
decides how they share the slots: with batch slots every round's batch takes candidates from
every file that has work, each file keeping its own search (its own density), its priors, its
syntax guard and its re-mapping after a fold; otherwise the files are searched one after
another. A file whose search was cut short is searched again on its new content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import ClassVar

from repomin.passes.python_names import NameHolds
from repomin.passes.python_source import PySource
from repomin.passes.textedit import Guard, compiles, is_python, syntax_guard, text_files
from repomin.search.deletion.learning import SURVIVOR_PRIOR
from repomin.search.deletion.lockstep import learn_together
from repomin.search.problem import Pass, Problem
from repomin.tree import Entry, Tree

#: A search cut short by a folded candidate starts again on the new content at most this often.
RESTARTS = 3


class DeleteLines:
    name: ClassVar[str] = "lines"

    def __init__(self) -> None:
        #: (path, line) pairs that survived an earlier search: tested alone first next time.
        self.survived: set[tuple[str, bytes]] = set()
        #: The ``python`` pass is scheduled: its one-line statements are not units here.
        self.statements_elsewhere = False

    def bind(self, instances: Mapping[str, Pass]) -> None:
        """Learn whether the ``python`` pass runs in the same reduction (module doc)."""
        self.statements_elsewhere = "python" in instances

    def run(self, problem: Problem) -> None:
        paths = text_files(problem)
        for _ in range(RESTARTS + 1):  # again for the files a folded candidate cut short
            paths = self._search_files(problem, [p for p in paths if p in problem.current])
            if not paths:
                break

    def _priors(self, path: str, lines: Sequence[bytes]) -> list[float]:
        base = 1.0 / max(1, len(lines))
        return [SURVIVOR_PRIOR if (path, line) in self.survived else base for line in lines]

    def _search_files(self, problem: Problem, paths: Sequence[str]) -> list[str]:
        """The searches of every file of ``paths`` (``search.deletion.lockstep``); returns the
        files whose search a folded candidate cut short (the caller searches them again)."""
        start = problem.current
        # A deterministic oracle: every one-line statement is the statement search's (it tries
        # freed bindings again); a flaky one: the bindings stay here (module doc).
        every = problem.miss_rate == 0
        split = [self._split(path, start[path].data, every) for path in paths]
        paths = [path for path, (units, _) in zip(paths, split, strict=True) if units]
        split = [(units, held) for units, held in split if units]
        guards = [syntax_guard(path, start[path].data) for path in paths]
        members: list[tuple[list[tuple[int, bytes]], list[float]]] = []
        for path, (units, _) in zip(paths, split, strict=True):
            priors = self._priors(path, start[path].data.splitlines(keepends=True))
            members.append((units, [priors[i] for i, _ in units]))

        def build(remaining: Sequence[Sequence[tuple[int, bytes]] | None]) -> Tree:
            whole = [
                None if r is None else with_held(r, split[k][1]) for k, r in enumerate(remaining)
            ]
            return rebuild(problem.current, paths, whole, guards)

        def describe(k: int, chunk: Sequence[tuple[int, bytes]]) -> str:
            return f"delete {where(sorted(i + 1 for i, _ in chunk))} of {paths[k]}"

        def version(tree: Tree, k: int) -> str:
            entry = tree.entries.get(paths[k])
            return "" if entry is None else hashlib.blake2b(entry.data, digest_size=16).hexdigest()

        def sync(k: int, kept: Sequence[tuple[int, bytes]]) -> list[bool] | None:
            entry = problem.current.entries.get(paths[k])
            if entry is None:
                return [False] * len(kept)
            held = split[k][1]
            whole = with_held(kept, held)
            mask = still_there([line for _, line in whole], entry.data)
            if mask is None or not all(
                m for (i, _), m in zip(whole, mask, strict=True) if i in held
            ):
                return None  # a held line went too: not a deletion of this search's units
            return [m for (i, _), m in zip(whole, mask, strict=True) if i not in held]

        results = learn_together(problem, self.name, members, build, describe, version, sync)
        for path, kept in zip(paths, results, strict=True):
            if kept is not None:  # survivors of a search cut short were not all tested
                self.survived.update((path, line) for _, line in kept)
        return [path for path, kept in zip(paths, results, strict=True) if kept is None]

    def _split(
        self, path: str, data: bytes, every: bool = True
    ) -> tuple[list[tuple[int, bytes]], dict[int, bytes]]:
        """The numbered lines of ``path`` that are units of this search, and those held for
        the ``python`` pass (module doc): every one-line statement, or with ``every`` False
        those binding no name; none without that pass, or in a file it does not reduce (not
        Python, not compiling, not UTF-8)."""
        lines = list(enumerate(data.splitlines(keepends=True)))
        src = None
        if self.statements_elsewhere and is_python(path, data) and compiles(data, path):
            src = PySource.parse(data)
        if src is None:
            return lines, {}
        units = src.one_line_units()
        if every:
            held = {u.line - 1 for u in units}
        else:
            try:
                binds = NameHolds(src, units, ()).binds
            except RecursionError:  # an expression nested deeper than the walk goes
                return lines, {}
            held = {u.line - 1 for u, names in zip(units, binds, strict=True) if not names}
        return [(i, ln) for i, ln in lines if i not in held], {
            i: ln for i, ln in lines if i in held
        }


def where(numbers: Sequence[int]) -> str:
    """``line 3`` / ``lines 3-9`` / ``2 of lines 3-9`` for sorted line numbers (from 1)."""
    first, last = numbers[0], numbers[-1]
    text = f"line {first}" if first == last else f"lines {first}-{last}"
    return text if len(numbers) == last - first + 1 else f"{len(numbers)} of {text}"


def with_held(
    kept: Sequence[tuple[int, bytes]], held: Mapping[int, bytes]
) -> list[tuple[int, bytes]]:
    """A search's kept lines with the lines it holds, in file order."""
    return sorted([*kept, *held.items()]) if held else list(kept)


def rebuild(
    current: Tree,
    paths: Sequence[str],
    remaining: Sequence[Sequence[tuple[int, bytes]] | None],
    guards: Sequence[Guard],
) -> Tree:
    """``current`` with each of ``paths`` holding exactly its ``remaining`` lines (None: as it
    is), or ``current`` itself when a changed file fails its syntax guard (a no-op, as in one
    file's search)."""
    changes: dict[str, Entry | None] = {}
    for path, lines, guard in zip(paths, remaining, guards, strict=True):
        entry = current.entries.get(path)
        if lines is None or entry is None:
            continue
        data = b"".join(line for _, line in lines)
        if data == entry.data:
            continue
        if not guard(data):
            return current
        changes[path] = entry.with_data(data)
    return current.with_changes(changes) if changes else current


def still_there(kept: Sequence[bytes], data: bytes) -> list[bool] | None:
    """Which of the ``kept`` lines ``data`` still has, when ``data`` is ``kept`` with some lines
    deleted (other candidates of the same search folded in); None when it is not."""
    lines = data.splitlines(keepends=True)
    mask: list[bool] = []
    i = 0
    for line in kept:
        hit = i < len(lines) and lines[i] == line
        mask.append(hit)
        i += hit
    return mask if i == len(lines) else None
