"""The ``shortcut`` pass: load the failing module straight from the entry point.

When a failure is raised while a module is being *loaded* (its top-level code is on the
failing stack: :mod:`repomin.analysis.loadframes`), everything the run did before it loaded
that module -- a CLI parsing its options, a plugin loader finding a config file, a package's
``__init__`` -- only leads there. Deleting that code cannot shortcut it: the call that loads
the module is an expression like ``require(env.modulePath)``. So this pass proposes, for the
entry file the command names, one candidate per such module, innermost first: the entry's
whole content replaced by one statement that loads the module (``require("../lib/x.js");``
for JavaScript, ``import pkg.mod`` for Python). The oracle decides as for any candidate;
the first accepted one wins, and the cuts follow at once (the re-traced run and the
reference cut drop what the new entry no longer loads).

gulp 3.9.1 on Node 20 (its ``node_modules``, 1,590 files) dies in ``graceful-fs/fs.js``'s top
level, which its CLI reaches through ``liftoff``, the gulpfile and ``vinyl-fs``: the entry
becomes ``require("../../graceful-fs/fs.js");`` and the tree a few files.

It runs once per reduction, from the failing output of the baseline (the first run that
reproduced), and costs at most one run per module-level frame.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator, Sequence
from typing import ClassVar

from repomin.analysis.loadframes import module_frames
from repomin.analysis.refs.graph import command_tokens
from repomin.passes.cuts import FromFailures, follow
from repomin.passes.textedit import compiles
from repomin.search.problem import Problem
from repomin.tree import Tree

_JS = (".js", ".cjs")
_PY = (".py",)
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


class LoadShortcut(FromFailures):
    """Proposes the shortcut candidates once (see the module docstring)."""

    name: ClassVar[str] = "shortcut"

    def __init__(self, command: str = "", failures: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(failures)
        self.command = command

    def run(self, problem: Problem) -> None:
        if not self.first_run():
            return
        tree = problem.current
        frames = self.gather(lambda output, workdir: module_frames(output, workdir, tree))
        if not frames:
            return
        won = problem.try_first(self.name, self._candidates(problem, tree, frames))
        if won is None:
            return
        follow(problem, self.cuts, self.name)

    def _candidates(
        self, problem: Problem, tree: Tree, frames: list[str]
    ) -> Iterator[tuple[Tree, str]]:
        for entry in entries(self.command, tree):
            if problem.protected(entry):
                continue
            for frame in frames:
                text = loader(entry, frame)
                if text is None or len(text) >= len(tree[entry].data):
                    continue
                if entry.endswith(_PY) and not compiles(text, entry):
                    continue
                yield tree.replace(entry, text), f"load {frame} straight from {entry}"


def entries(command: str, tree: Tree) -> list[str]:
    """The JavaScript and Python files of ``tree`` the command names (paths, ``-m`` modules)."""
    out: list[str] = []
    for token in command_tokens(command):
        path = token.removeprefix("./")
        candidates = [path]
        if _DOTTED.match(token) or _IDENTIFIER.match(token):
            candidates.append(token.replace(".", "/") + ".py")
        for path in candidates:
            entry = tree.entries.get(path)
            if entry is None or entry.kind != "file" or path in out:
                continue
            if path.endswith(_JS + _PY):
                out.append(path)
    return out


def loader(entry: str, module: str) -> bytes | None:
    """One statement in ``entry`` that loads ``module`` (None when the languages differ or
    ``module`` cannot be named from ``entry``)."""
    if module == entry:
        return None
    if entry.endswith(_JS) and module.endswith(_JS):
        rel = posixpath.relpath(module, posixpath.dirname(entry) or ".")
        if not rel.startswith("."):
            rel = "./" + rel
        return f"require({json.dumps(rel)});\n".encode()
    if entry.endswith(_PY) and module.endswith(_PY):
        base = posixpath.dirname(entry)
        # A script's own directory is on sys.path; the tree's root is for -m and test runners.
        for root in dict.fromkeys([base, ""]):
            if root and not module.startswith(root + "/"):
                continue
            parts = module[len(root) + 1 if root else 0 : -3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and all(_IDENTIFIER.match(p) for p in parts):
                return f"import {'.'.join(parts)}\n".encode()
    return None
