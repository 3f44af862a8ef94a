"""Deleting the paths of a tree: level by level (hierarchical delta debugging), or flat.

Hierarchical delta debugging visits the tree level by level from the root: the deletable
children of every surviving directory of a level (files, symlinks, subdirectories, largest
first) go through one learning search (``learning``), and the surviving subdirectories form
the next level, so one accepted candidate can remove thousands of files. A small tree is
searched flat instead, every file (and empty directory) at once: its directories are mostly
chains, and each level costs rounds. How small is decided here, by the width: with batch slots
every level costs at least three rounds (groups, splits, the final checks) whatever its size, so
a deep tree costs more rounds than one flat search far beyond the one-slot limit.

Protected paths (``--keep``, a view's focus) and the directories holding them are never
proposed. The caller gives the priors (its estimate that each path is needed) and how a group
of paths is described; it gets back the paths that survived (each one's deletion alone was
rejected), to try them alone first next time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from repomin.search.deletion.learning import learn_delete
from repomin.search.problem import Problem
from repomin.tree import Tree

#: At most this many files: one learning search over every file at once instead of one per
#: directory.
FLAT_LIMIT = 64

#: With at least this many batch slots, trees up to FLAT_WIDE_LIMIT files are searched flat.
WIDE = 4
FLAT_WIDE_LIMIT = 20_000

#: ``priors(tree, paths)``: the caller's estimate that each of ``paths`` is needed.
Priors = Callable[[Tree, list[str]], list[float]]


def flat_limit(problem: Problem) -> int:
    """The largest tree (in files) searched flat at this problem's width."""
    return FLAT_WIDE_LIMIT if problem.batch_width >= WIDE else FLAT_LIMIT


def learn_paths(
    problem: Problem,
    phase: str,
    priors: Priors,
    describe: Callable[[Sequence[str]], str],
) -> list[str]:
    """Delete as many of the incumbent's unprotected paths as possible; the survivors."""
    if problem.current.file_count <= flat_limit(problem):
        return _flat(problem, phase, priors, describe)
    survivors: list[str] = []
    frontier = [""]
    while frontier:
        tree = problem.current
        dirs = [d for d in frontier if not d or tree.is_dir(d)]
        children = [c for d in dirs for c in tree.children(d)]
        units = sorted(
            (c for c in children if not problem.protected(c)),
            key=lambda c: (-tree.size_of(c), c),
        )
        if units:
            survivors += _search(problem, phase, units, priors(tree, units), describe, _present)
        after = problem.current
        frontier = [c for c in children if after.is_dir(c)]
    return survivors


def _flat(
    problem: Problem, phase: str, priors: Priors, describe: Callable[[Sequence[str]], str]
) -> list[str]:
    tree = problem.current
    units = sorted(
        (p for p, e in tree.entries.items() if e.kind != "dir" or not tree.under(p)),
        key=lambda p: (-tree.size_of(p), p),
    )
    units = [u for u in units if not problem.protected(u)]
    if not units:
        return []
    return _search(problem, phase, units, priors(tree, units), describe, lambda t, u: u in t)


def _search(
    problem: Problem,
    phase: str,
    units: list[str],
    priors: list[float],
    describe: Callable[[Sequence[str]], str],
    present: Callable[[Tree, str], bool],
) -> list[str]:
    """One learning search deleting ``units``; ``present`` says which survivors a fold left."""

    def build(remaining: Sequence[str]) -> Tree:
        keep = set(remaining)
        return problem.current.without(u for u in units if u not in keep)

    return learn_delete(
        problem,
        phase,
        units,
        build,
        describe,
        priors,
        sync=lambda kept: [present(problem.current, u) for u in kept],
    )


def _present(tree: Tree, path: str) -> bool:
    return path in tree or tree.is_dir(path)
