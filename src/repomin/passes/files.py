"""Hierarchical deletion of directories and files (HDD) with a learning search per level.

Visits the tree level by level from the root, as HDD does. At each level the deletable
children of every surviving directory of that level (files, symlinks, subdirectories,
largest first) go through one learning deletion search (``search.deletion.learning``:
adaptive group testing, priors from the latest trace and the reference distances when known,
1-minimal over the level's units; one search per level gives ``--jobs`` slots enough disjoint
candidates); surviving subdirectories form the next level. One accepted candidate can remove
thousands of files. Kept paths (``--keep``) and directories containing them are never deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from repomin.passes.hints import SearchHints
from repomin.search.deletion.learning import SURVIVOR_PRIOR, learn_delete
from repomin.search.problem import Problem
from repomin.tree import Tree


def describe_paths(chunk: Sequence[str]) -> str:
    head = ", ".join(chunk[:3])
    more = f" and {len(chunk) - 3} more" if len(chunk) > 3 else ""
    return f"delete {head}{more}"


#: At most this many files: one learning search over every file at once instead of one per
#: directory (a small residue's directories are mostly chains: each level costs runs).
FLAT_LIMIT = 64


#: With at least this many slots, trees up to FLAT_WIDE_LIMIT files are searched flat too: in
#: batches every level of the hierarchy costs at least three rounds (groups, splits, the
#: final checks) whatever its size, so a deep tree costs more rounds than one flat search.
WIDE = 4
FLAT_WIDE_LIMIT = 20_000


def _present(tree: Tree, path: str) -> bool:
    return path in tree or tree.is_dir(path)


class DeleteFiles:
    name: ClassVar[str] = "files"

    def __init__(self, hints: SearchHints | None = None) -> None:
        self.hints = hints or SearchHints()
        #: Paths that survived an earlier search: likely needed again (tested singly first).
        self.survived: set[str] = set()

    def run(self, problem: Problem) -> None:
        wide = problem.batch_width >= WIDE
        if problem.current.file_count <= (FLAT_WIDE_LIMIT if wide else FLAT_LIMIT):
            self._flat(problem)
            return
        frontier = [""]
        while frontier:
            tree = problem.current
            dirs = [d for d in frontier if not d or tree.is_dir(d)]
            children = [c for d in dirs for c in tree.children(d)]
            units = sorted(
                (c for c in children if not problem.protected(c)),
                key=lambda c: (-tree.size_of(c), c),
            )

            def build(remaining: Sequence[str], units: list[str] = units) -> Tree:
                keep = set(remaining)
                return problem.current.without(u for u in units if u not in keep)

            if units:
                priors = self.hints.file_priors(tree, units)
                priors = [
                    max(p, SURVIVOR_PRIOR) if u in self.survived else p
                    for u, p in zip(units, priors, strict=True)
                ]
                kept = learn_delete(
                    problem,
                    self.name,
                    units,
                    build,
                    describe_paths,
                    priors,
                    sync=lambda kept: [_present(problem.current, u) for u in kept],
                )
                self.survived.update(kept)
            after = problem.current
            frontier = [c for c in children if after.is_dir(c)]

    def _flat(self, problem: Problem) -> None:
        tree = problem.current
        units = sorted(
            (p for p, e in tree.entries.items() if e.kind != "dir" or not tree.under(p)),
            key=lambda p: (-tree.size_of(p), p),
        )
        units = [u for u in units if not problem.protected(u)]
        if not units:
            return

        def build(remaining: Sequence[str]) -> Tree:
            keep = set(remaining)
            return problem.current.without(u for u in units if u not in keep)

        priors = [
            max(p, SURVIVOR_PRIOR) if u in self.survived else p
            for u, p in zip(units, self.hints.file_priors(tree, units), strict=True)
        ]
        kept = learn_delete(
            problem,
            self.name,
            units,
            build,
            describe_paths,
            priors,
            sync=lambda kept: [u in problem.current for u in kept],
        )
        self.survived.update(kept)
