"""Deletion of directories and files: what the ``files`` pass proposes and how it learns.

The search over the tree's paths -- hierarchical delta debugging level by level from the root,
or one flat search over a small tree -- is the search layer's (``search.deletion.paths``, with
the learning deletion search of ``search.deletion.learning``). This pass gives it the priors:
the latest trace's and the reference distances when known (``passes.hints``), and a higher one
for paths that survived an earlier search (likely needed again: tested singly first). Kept paths
(``--keep``) and directories containing them are never deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from repomin.passes.hints import SearchHints
from repomin.search.deletion.learning import SURVIVOR_PRIOR
from repomin.search.deletion.paths import learn_paths
from repomin.search.problem import Problem
from repomin.tree import Tree


def describe_paths(chunk: Sequence[str]) -> str:
    head = ", ".join(chunk[:3])
    more = f" and {len(chunk) - 3} more" if len(chunk) > 3 else ""
    return f"delete {head}{more}"


class DeleteFiles:
    name: ClassVar[str] = "files"

    def __init__(self, hints: SearchHints | None = None) -> None:
        self.hints = hints or SearchHints()
        #: Paths that survived an earlier search: likely needed again (tested singly first).
        self.survived: set[str] = set()

    def run(self, problem: Problem) -> None:
        self.survived.update(learn_paths(problem, self.name, self._priors, describe_paths))

    def _priors(self, tree: Tree, units: list[str]) -> list[float]:
        return [
            max(p, SURVIVOR_PRIOR) if u in self.survived else p
            for u, p in zip(units, self.hints.file_priors(tree, units), strict=True)
        ]
