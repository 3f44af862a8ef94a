"""A pass written only from CONTRIBUTING.md's "Adding a pass": drop the ``.txt`` files.

It is the guide's example, kept as a test fixture (``tests/unit/test_guide_pass.py`` registers
it and runs a real reduction with it). It proposes one candidate per ``.txt`` file, the largest
first, each candidate being the current tree without that one file; after an accepted candidate
it looks at the new current tree and proposes again, until a whole round is rejected. It knows
nothing of slots, threads, batches or the oracle: ``try_first`` is the whole interface.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from repomin.search.problem import Problem
from repomin.tree import Tree


class DropText:
    """The ``droptext`` pass: delete ``.txt`` files one by one, largest first."""

    name: ClassVar[str] = "droptext"

    def run(self, problem: Problem) -> None:
        while True:
            tree = problem.current
            won = problem.try_first(self.name, self._candidates(problem, tree))
            if won is None:  # every candidate rejected (or none): the pass is done this round
                return

    @staticmethod
    def _candidates(problem: Problem, tree: Tree) -> Iterator[tuple[Tree, str]]:
        texts = [
            path
            for path, entry in tree.entries.items()
            if entry.kind == "file" and path.endswith(".txt") and not problem.protected(path)
        ]
        for path in sorted(texts, key=lambda p: (-tree[p].size, p)):
            yield tree.without([path]), f"delete {path}"
