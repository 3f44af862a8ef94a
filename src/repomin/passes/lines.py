"""Line deletion inside text files (the learning deletion search), largest files first.

Binary files are never cut. Kept paths are never edited. Lines keep their own endings, so a
file's last line without a newline stays that way. The structure passes' syntax guard applies:
in a Python or JSON file that currently parses, a candidate that does not parse is not proposed
(it becomes a no-op and costs no run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from repomin.passes.base import Problem
from repomin.passes.learning import SURVIVOR_PRIOR, learn_delete
from repomin.passes.textedit import Guard, propose, syntax_guard, text_files
from repomin.tree import Tree


class DeleteLines:
    name: ClassVar[str] = "lines"

    def __init__(self) -> None:
        #: (path, line) pairs that survived an earlier search: tested alone first next time.
        self.survived: set[tuple[str, bytes]] = set()

    def run(self, problem: Problem) -> None:
        for path in text_files(problem):
            if path not in problem.current:
                continue
            data = problem.current[path].data
            guard = syntax_guard(path, data)
            numbered = list(enumerate(data.splitlines(keepends=True)))

            def build(
                remaining: Sequence[tuple[int, bytes]], path: str = path, guard: Guard = guard
            ) -> Tree:
                return propose(problem, path, b"".join(line for _, line in remaining), guard)

            def describe(chunk: Sequence[tuple[int, bytes]], path: str = path) -> str:
                first, last = chunk[0][0] + 1, chunk[-1][0] + 1
                where = f"line {first}" if first == last else f"lines {first}-{last}"
                return f"delete {where} of {path}"

            base = 1.0 / max(1, len(numbered))
            priors = [
                SURVIVOR_PRIOR if (path, line) in self.survived else base for _, line in numbered
            ]
            def sync(kept: Sequence[tuple[int, bytes]], path: str = path) -> list[bool] | None:
                entry = problem.current.entries.get(path)
                if entry is None or entry.data != b"".join(line for _, line in kept):
                    return None  # another candidate was folded into this file
                return [True] * len(kept)

            kept = learn_delete(problem, self.name, numbered, build, describe, priors, sync=sync)
            self.survived.update((path, line) for _, line in kept)
