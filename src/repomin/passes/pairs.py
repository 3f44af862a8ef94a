"""Two-part edits (``pairs``): two deletions proposed together, for small residues.

At a fixpoint every single deletion was refused, yet two together may go: a statement and the
definition or import only it uses (deleting the definition alone breaks the use; the use alone
may be what keeps an import's side effects needed), an import and the module file it loads (the
file alone: ``ImportError``; the import alone: a later use breaks). The pass links units by
names and proposes each linked pair once per tree:

- units are Python statements that sit alone on their lines (any depth, whole lines) and files;
- a statement *defines* the names it binds (``def``/``class``, import aliases, assignment
  targets) and *uses* the names it loads; a pair is (a statement, a statement of the same file
  defining a name the first uses), or (an import, a file it can load: ``a/b.py`` or
  ``a/b/__init__.py`` for ``import a.b`` / ``from a import b`` / relative forms);
- only when the tree is small (:data:`MAX_FILES` files, :data:`MAX_BYTES` bytes of Python) and
  at most :data:`MAX_PAIRS` pairs per tree, larger removals first; every edited file must
  still compile.

The driver runs it only when the others stall (``STALL_ONLY``, after ``pyexpr``).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from repomin.passes.pyexpr import parse
from repomin.passes.textedit import compiles, is_python, line_starts, splice
from repomin.search.problem import Problem
from repomin.tree import Tree

MAX_FILES = 64
MAX_BYTES = 16 * 1024
MAX_PAIRS = 100


@dataclass(frozen=True, slots=True)
class Unit:
    """A statement (``path`` + whole-line byte span) or a whole file (``span`` None)."""

    path: str
    span: tuple[int, int] | None
    line: int
    defines: frozenset[str]
    uses: frozenset[str]
    modules: tuple[str, ...]  # files an import statement may load

    @property
    def label(self) -> str:
        return self.path if self.span is None else f"line {self.line} of {self.path}"


def _bound(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, ast.Import):
        return {a.asname or a.name.split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.ImportFrom):
        return {a.asname or a.name for a in stmt.names if a.name != "*"}
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _module_files(path: str, stmt: ast.stmt) -> tuple[str, ...]:
    """Files of the tree an import statement may load (candidates; existence checked later)."""
    names: list[str] = []
    if isinstance(stmt, ast.Import):
        names = [a.name for a in stmt.names]
    elif isinstance(stmt, ast.ImportFrom):
        base = stmt.module or ""
        if stmt.level:
            package = posixpath.dirname(path).split("/") if posixpath.dirname(path) else []
            keep = len(package) - (stmt.level - 1)
            if keep < 0:
                return ()
            prefix = ".".join(package[:keep])
            base = ".".join(p for p in (prefix, base) if p)
        names = [base] if base else []
        names += [f"{base}.{a.name}" if base else a.name for a in stmt.names if a.name != "*"]
    out: list[str] = []
    for name in names:
        stem = name.replace(".", "/")
        out += [f"{stem}.py", f"{stem}/__init__.py"]
    return tuple(out)


def statement_units(path: str, data: bytes) -> list[Unit]:
    module = parse(data)
    if module is None:
        return []
    starts = line_starts(data)
    lines = data.splitlines(keepends=True)
    out: list[Unit] = []
    for stmt in (n for n in ast.walk(module) if isinstance(n, ast.stmt)):
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
        last = stmt.end_lineno or stmt.lineno
        head = lines[first - 1][: stmt.col_offset].strip() if first == stmt.lineno else b""
        tail = lines[last - 1][stmt.end_col_offset or 0 :].strip()
        if head or (tail and not tail.startswith(b"#")):
            continue  # shares a line with another statement
        uses = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
        out.append(
            Unit(
                path,
                (starts[first - 1], starts[last]),
                first,
                frozenset(_bound(stmt)),
                frozenset(uses),
                _module_files(path, stmt),
            )
        )
    return out


def linked_pairs(tree: Tree, protected: set[str]) -> list[tuple[Unit, Unit]]:
    """Every linked pair of units of ``tree`` (see the module docstring), larger removals first."""
    by_file: dict[str, list[Unit]] = {}
    for path, entry in tree.entries.items():
        if entry.kind == "file" and path not in protected and is_python(path, entry.data):
            by_file[path] = statement_units(path, entry.data)
    files = {
        p: Unit(p, None, 0, frozenset(), frozenset(), ())
        for p, e in tree.entries.items()
        if e.kind == "file" and p not in protected
    }
    pairs: list[tuple[Unit, Unit]] = []
    for units in by_file.values():
        for user in units:
            for giver in units:
                if giver is user or not (user.uses & (giver.defines - user.defines)):
                    continue
                if _overlap(user, giver):
                    continue
                pairs.append((user, giver))
            for module in user.modules:
                if module in files and module != user.path:
                    pairs.append((user, files[module]))

    def removed(pair: tuple[Unit, Unit]) -> int:
        return sum(_size(tree, u) for u in pair)

    pairs.sort(key=lambda pair: (-removed(pair), pair[0].label, pair[1].label))
    return pairs


def _overlap(a: Unit, b: Unit) -> bool:
    if a.path != b.path or a.span is None or b.span is None:
        return a.path == b.path and (a.span is None or b.span is None)
    return a.span[0] < b.span[1] and b.span[0] < a.span[1]


def _size(tree: Tree, unit: Unit) -> int:
    if unit.span is None:
        return tree.size_of(unit.path)
    return unit.span[1] - unit.span[0]


def apply_pair(tree: Tree, pair: tuple[Unit, Unit]) -> Tree | None:
    """The tree without both units, or None when an edited file would not compile."""
    cuts: dict[str, list[tuple[int, int, bytes]]] = {}
    gone: list[str] = []
    for unit in pair:
        if unit.span is None:
            gone.append(unit.path)
        else:
            cuts.setdefault(unit.path, []).append((unit.span[0], unit.span[1], b""))
    result = tree
    for path, edits in cuts.items():
        if path in gone:
            continue
        data = splice(tree.entries[path].data, edits)
        if not compiles(data, path):
            return None
        result = result.replace(path, data)
    return result.without(gone) if gone else result


class TwoPartEdits:
    """The ``pairs`` pass (see the module docstring)."""

    name: ClassVar[str] = "pairs"

    def __init__(self) -> None:
        self._done: set[str] = set()

    def run(self, problem: Problem) -> None:
        while True:
            tree = problem.current
            python_bytes = sum(
                e.size for p, e in tree.entries.items() if e.kind == "file" and p.endswith(".py")
            )
            if tree.digest in self._done or tree.file_count > MAX_FILES:
                return
            if python_bytes > MAX_BYTES:
                return
            self._done.add(tree.digest)
            protected = {p for p in tree.entries if problem.protected(p)}
            pairs = linked_pairs(tree, protected)[:MAX_PAIRS]

            def candidates(
                tree: Tree = tree, pairs: list[tuple[Unit, Unit]] = pairs
            ) -> Iterator[tuple[Tree, str]]:
                for pair in pairs:
                    candidate = apply_pair(tree, pair)
                    what = f"delete {pair[0].label} together with {pair[1].label}"
                    yield (tree if candidate is None else candidate), what

            if problem.try_first(self.name, candidates()) is None:
                return
