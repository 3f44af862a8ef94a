"""Hierarchical deletion of directories and files (HDD): whole subtrees first.

Visits directories breadth-first from the root. At each directory the deletable children
(files, symlinks, subdirectories, largest first) are reduced with ``ddmin_delete``; surviving
subdirectories are visited next. One accepted candidate can remove thousands of files; a
repository where a few files matter costs roughly ``depth x log(width)`` decisions per file.
Kept paths (``--keep``) and directories containing them are never deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from repomin.passes.base import Problem, ddmin_delete
from repomin.tree import Tree


class DeleteFiles:
    name: ClassVar[str] = "files"

    def run(self, problem: Problem) -> None:
        queue = [""]
        while queue:
            directory = queue.pop(0)
            tree = problem.current
            if directory and not tree.is_dir(directory):
                continue
            children = tree.children(directory)
            units = sorted(
                (c for c in children if not problem.protected(c)),
                key=lambda c: (-tree.size_of(c), c),
            )

            def build(remaining: Sequence[str], units: list[str] = units) -> Tree:
                keep = set(remaining)
                return problem.current.without(u for u in units if u not in keep)

            def describe(chunk: Sequence[str]) -> str:
                head = ", ".join(chunk[:3])
                more = f" and {len(chunk) - 3} more" if len(chunk) > 3 else ""
                return f"delete {head}{more}"

            if units:
                ddmin_delete(problem, self.name, units, build, describe)
            after = problem.current
            queue.extend(c for c in children if after.is_dir(c))
