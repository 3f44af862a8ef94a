"""Line deletion inside text files (the learning deletion search), largest files first.

Binary files are never cut. Kept paths are never edited. Lines keep their own endings, so a
file's last line without a newline stays that way. The structure passes' syntax guard applies:
in a Python or JSON file that currently parses, a candidate that does not parse is not proposed
(it becomes a no-op and costs no run). With ``--jobs``, a search that a folded candidate cut
short (the file is not what it searched any more) starts again on the new content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from repomin.passes.base import Problem
from repomin.passes.learning import SURVIVOR_PRIOR, learn_delete
from repomin.passes.textedit import propose, syntax_guard, text_files
from repomin.tree import Tree

#: A search cut short by a folded candidate starts again on the new content at most this often.
RESTARTS = 3


class DeleteLines:
    name: ClassVar[str] = "lines"

    def __init__(self) -> None:
        #: (path, line) pairs that survived an earlier search: tested alone first next time.
        self.survived: set[tuple[str, bytes]] = set()

    def run(self, problem: Problem) -> None:
        for path in text_files(problem):
            for _ in range(RESTARTS + 1):
                if path not in problem.current or not self._search(problem, path):
                    break

    def _search(self, problem: Problem, path: str) -> bool:
        """One learning search over the lines of ``path``; True when it was cut short because
        another candidate was folded into the file (``--jobs``): the caller searches again."""
        data = problem.current[path].data
        guard = syntax_guard(path, data)
        numbered = list(enumerate(data.splitlines(keepends=True)))

        def build(remaining: Sequence[tuple[int, bytes]]) -> Tree:
            return propose(problem, path, b"".join(line for _, line in remaining), guard)

        def describe(chunk: Sequence[tuple[int, bytes]]) -> str:
            numbers = sorted(i + 1 for i, _ in chunk)
            first, last = numbers[0], numbers[-1]
            where = f"line {first}" if first == last else f"lines {first}-{last}"
            if len(numbers) != last - first + 1:
                where = f"{len(numbers)} of {where}"
            return f"delete {where} of {path}"

        base = 1.0 / max(1, len(numbered))
        priors = [
            SURVIVOR_PRIOR if (path, line) in self.survived else base for _, line in numbered
        ]
        cut_short = False

        def sync(kept: Sequence[tuple[int, bytes]]) -> list[bool] | None:
            nonlocal cut_short
            entry = problem.current.entries.get(path)
            mask = None if entry is None else still_there([line for _, line in kept], entry.data)
            cut_short = entry is not None and mask is None
            return mask  # None: another edit was folded into this file

        kept = learn_delete(problem, self.name, numbered, build, describe, priors, sync=sync)
        if not cut_short:  # survivors of a search cut short were not all tested
            self.survived.update((path, line) for _, line in kept)
        return cut_short


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

