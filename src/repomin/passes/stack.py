"""The ``stack`` pass: keep the Python files on the failing stack and what they import.

A Python failure raised at call time names, in its traceback, every file the failing call went
through; pytest prints the same as ``path.py:12: in helper`` lines. The traced run keeps every
file the command *imported*: with a test runner that is every module a conftest, a
``--doctest-modules`` collection or a plugin touched, although the failure needs only the files
on its stack and what those import. So this pass proposes, once, one candidate: every Python
file deleted except

- the files on the failing stack (the baseline's first reproducing run),
- what they reach through the reference graph (imports, ``__init__`` chains, literal module
  names: :mod:`repomin.analysis.refs`),
- the ``conftest.py`` files of their directories and the directories above (their fixtures),
  with what those reach, and ``setup.py``,
- protected paths (``--keep``).

Files that are not Python are left to the other passes. The oracle decides as for any
candidate; when it is accepted the cuts follow at once. It costs one candidate decision.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from repomin.analysis.loadframes import in_tree
from repomin.analysis.refs.graph import RefGraph
from repomin.failure.normalise import strip_ansi
from repomin.passes.cuts import FromFailures, follow
from repomin.search.problem import Problem
from repomin.tree import Tree

_FRAME = re.compile(r'^[\s|]*File "(?P<path>[^"\n]+\.py)", line \d+', re.M)
_PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:][^\s:]*\.py):\d+: ", re.M)
_ALWAYS = ("setup.py",)


def stack_files(output: str, workdir: str, tree: Tree) -> list[str]:
    """The tree's Python files named on the failing stacks of ``output``, each once."""
    text = strip_ansi(output)
    found: list[str] = []
    for pattern in (_FRAME, _PYTEST_LOCATION):
        for match in pattern.finditer(text):
            rel = in_tree(match["path"], workdir, tree)
            if rel is not None and rel not in found:
                found.append(rel)
    return found


def conftests(paths: Sequence[str], tree: Tree) -> set[str]:
    """The ``conftest.py`` files in the directories of ``paths`` and every directory above."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(len(parts) + 1):
            candidate = "/".join([*parts[:depth], "conftest.py"])
            if candidate in tree.entries:
                found.add(candidate)
    return found


def kept_files(tree: Tree, stack: Sequence[str], protected: Sequence[str]) -> set[str]:
    """The stack, its conftests and ``setup.py``, and everything those reach."""
    graph = RefGraph(tree)
    sources = {*stack, *conftests(stack, tree), *(p for p in _ALWAYS if p in tree.entries)}
    sources |= set(protected)
    kept: set[str] = set()
    todo = sorted(sources)
    while todo:
        path = todo.pop()
        if path in kept:
            continue
        kept.add(path)
        todo += [p for p in graph.edges(path) if p not in kept]
        if path.endswith(".py"):
            todo += [p for p in conftests([path], tree) if p not in kept]
    return kept


class StackCut(FromFailures):
    """Proposes the stack candidate once (see the module docstring)."""

    name: ClassVar[str] = "stack"

    def run(self, problem: Problem) -> None:
        if not self.first_run():
            return
        tree = problem.current
        stack = self.gather(lambda output, workdir: stack_files(output, workdir, tree))
        if not stack:
            return
        python = [p for p, e in tree.entries.items() if e.kind == "file" and p.endswith(".py")]
        protected = [p for p in python if problem.protected(p)]
        keep = kept_files(tree, stack, protected)
        gone = [p for p in python if p not in keep]
        if not gone:
            return
        candidate = tree.without(gone)
        description = (
            f"keep the Python files on the failing stack ({len(stack)}) and what they import"
        )
        if problem.try_first(self.name, iter([(candidate, description)])) is not None:
            follow(problem, self.cuts, self.name)
