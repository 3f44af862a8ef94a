"""Which files' *module-level* code is on the failing stack: the failure happened while they
were being loaded.

Node prints an uncaught error's stack with the top-level code of a CommonJS module as
``at Object.<anonymous> (/abs/path/file.js:LINE:COL)``; Python's traceback marks it as
``File "/abs/path/file.py", line N, in <module>``. A file in that list fails *when it is
loaded*, whoever loads it, so a run that loads it directly is a candidate for the same
failure (``repomin.passes.shortcut``). Paths are mapped to the tree: a path under the
sample's working directory loses that prefix; any other absolute path is matched by its
longest suffix that is a file of the tree (a copy of the tree elsewhere, a symlinked
workdir). Frames outside the tree (Node's own, the standard library) are dropped.
"""

from __future__ import annotations

import re

from repomin.tree import Tree

_NODE = re.compile(r"^\s*at Object\.<anonymous> \((?P<path>/[^()\n]+?):\d+:\d+\)\s*$", re.M)
_PYTHON = re.compile(r'^\s*File "(?P<path>/[^"\n]+)", line \d+, in <module>\s*$', re.M)


def module_frames(output: str, workdir: str, tree: Tree) -> list[str]:
    """Tree paths of the files whose module-level code is on the failing stack, innermost
    first, each once."""
    frames: list[str] = [m.group("path") for m in _NODE.finditer(output)]
    # Python prints the outermost frame first; a chained traceback repeats frames.
    frames += reversed([m.group("path") for m in _PYTHON.finditer(output)])
    out: list[str] = []
    for path in frames:
        rel = in_tree(path, workdir, tree)
        if rel is not None and rel not in out:
            out.append(rel)
    return out


def in_tree(path: str, workdir: str, tree: Tree) -> str | None:
    """The tree path an absolute ``path`` from a sample's output names, if any."""
    root = workdir.rstrip("/") + "/" if workdir else ""
    if root and path.startswith(root):
        rel = path[len(root) :]
        return rel if _is_file(tree, rel) else None
    parts = path.strip("/").split("/")
    for k in range(len(parts)):
        rel = "/".join(parts[k:])
        if _is_file(tree, rel):
            return rel
    return None


def _is_file(tree: Tree, path: str) -> bool:
    entry = tree.entries.get(path)
    return entry is not None and entry.kind == "file"
