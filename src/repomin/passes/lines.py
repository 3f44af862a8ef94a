"""Line deletion inside text files (ddmin with halving chunk sizes), largest files first.

Binary files are never cut. Kept paths are never edited. Lines keep their own endings, so a
file's last line without a newline stays that way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from repomin.passes.base import Problem, ddmin_delete
from repomin.tree import Tree


class DeleteLines:
    name: ClassVar[str] = "lines"

    def run(self, problem: Problem) -> None:
        tree = problem.current
        files = sorted(
            (
                p
                for p, e in tree.entries.items()
                if e.kind == "file" and e.text and e.data and not problem.protected(p)
            ),
            key=lambda p: (-tree.entries[p].size, p),
        )
        for path in files:
            if path not in problem.current:
                continue
            lines = problem.current[path].data.splitlines(keepends=True)
            numbered = list(enumerate(lines))

            def build(remaining: Sequence[tuple[int, bytes]], path: str = path) -> Tree:
                return problem.current.replace(path, b"".join(line for _, line in remaining))

            def describe(chunk: Sequence[tuple[int, bytes]], path: str = path) -> str:
                first, last = chunk[0][0] + 1, chunk[-1][0] + 1
                where = f"line {first}" if first == last else f"lines {first}-{last}"
                return f"delete {where} of {path}"

            ddmin_delete(problem, self.name, numbered, build, describe)
