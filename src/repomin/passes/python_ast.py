"""Python-aware reduction through ``ast``: statements, definitions, wrappers, decorators, imports.

Edits use exact byte spans (``ast`` offsets are UTF-8 byte offsets) and always whole lines, so
everything else in the file keeps its formatting. Per Python file, largest first:

1. **Statements, hierarchically.** The module body is reduced with the learning deletion
   search (:mod:`repomin.search.deletion.learning`; with ``--jobs``, batches of disjoint parts;
   a statement binding a name that code still present loads is held back until that code is
   gone: :mod:`repomin.passes.python_names`), then the bodies of the surviving compound
   statements (functions, classes, ``if``/``for``/``while``/``with``/``try``/``match``),
   breadth first. Definitions, imports and docstrings are statements like any other. A body
   emptied completely becomes ``pass``. Statements sharing a line (``a; b``, or a body on its
   header's line) move as one unit or not at all.
2. **Unwrapping.** A compound statement replaced by its dedented body (``try:``, ``with``,
   ``if``, loops), and an ``if`` or loop by its dedented ``else`` block (the branch that ran
   when the other is a never-run ``...``), outermost first.
3. **Decorators**, with the same search.
4. **Names of multi-name imports** (``from m import a, b`` -> ``from m import a``), likewise.

Every candidate is compiled before it is proposed (the syntax guard of
:mod:`repomin.passes.textedit`); files that do not compile to begin with, are not UTF-8 or
start with a byte-order mark are left to the generic passes.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from repomin.passes.python_names import (
    NameHolds,
    bindings_read,
    loaded_from_elsewhere,
    loaded_names,
    one_line_bindings,
)
from repomin.passes.python_source import Loc, PySource, Unit, child_locs
from repomin.passes.textedit import (
    Guard,
    compiles,
    describe_spans,
    indentation,
    is_python,
    propose,
    splice,
    text_files,
)
from repomin.search.deletion.learning import Hold, first_batch, learn_delete
from repomin.search.problem import Problem, Spare
from repomin.tree import Tree

_UNWRAPPABLE = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
)


class PythonReduce:
    """The ``python`` pass (see the module docstring)."""

    name: ClassVar[str] = "python"

    def run(self, problem: Problem) -> None:
        for path in text_files(problem, is_python):
            entry = problem.current.entries.get(path)
            if entry is None or not compiles(entry.data, path):
                continue
            _FileReducer(problem, path, self.name).reduce()

    def first_trees(self, problem: Problem, path: str, k: int) -> list[Tree]:
        """What :meth:`run` proposes first for ``path``, up to ``k`` trees (its module body's
        first batch: ``search.problem.Lookahead``, for ``passes.ordered``)."""
        entry = problem.current.entries.get(path)
        if entry is None or not is_python(path, entry.data) or not compiles(entry.data, path):
            return []
        return _FileReducer(problem, path, self.name).first_trees(k)


class _FileReducer:
    def __init__(self, problem: Problem, path: str, phase: str) -> None:
        self.problem = problem
        self.path = path
        self.phase = phase
        self._parsed: PySource | None = None
        self.guard: Guard = lambda data: compiles(data, path)
        #: The text of the one-line binding statements a level kept while the file loaded
        #: one of their names (:meth:`_freed`).
        self.read: set[bytes] = set()

    def source(self) -> PySource | None:
        entry = self.problem.current.entries.get(self.path)
        if entry is None:
            return None
        if self._parsed is None or self._parsed.data != entry.data:
            self._parsed = PySource.parse(entry.data)
        return self._parsed

    def reduce(self) -> None:
        self.statements()
        self.unwrap()
        self.decorators()
        self.imports()

    def _candidate(self, data: bytes) -> Tree:
        return propose(self.problem, self.path, data, self.guard)

    # -- 1. statements -----------------------------------------------------------------------

    def statements(self) -> None:
        """Level by level (as hierarchical delta debugging does): one search over the units
        of every body at the same depth, so that ``--jobs`` batches span sibling bodies
        instead of one small body at a time; then the bodies one level down. With slots
        left idle by a level's last batch, the next level's first batch runs in them."""
        level: list[Loc] = [()]
        while level:
            src = self.source()
            if src is None:
                return
            bodies = self._bodies(src, level)
            if bodies:
                survivors = self._reduce_bodies(
                    src, bodies, functools.partial(self._next_batch, level)
                )
                if self.problem.miss_rate == 0:  # only a deterministic oracle frees (_freed)
                    self.read.update(bindings_read(src, survivors, self._loaded(src)))
                src = self.source()
                if src is None:
                    return
            # The search deleted statements of this level only: the locations stay valid.
            level = self._below(src, level)
        self._freed()

    def _loaded(self, src: PySource) -> frozenset[str]:
        """Every name the file loads anywhere (also in bodies that run later, and as an
        attribute), and the names other Python files load from it."""
        return loaded_names(src.module) | self._external()

    def _external(self) -> frozenset[str]:
        """The names of this module that the other Python files of the incumbent load."""
        python = {
            p: e.data
            for p, e in self.problem.current.entries.items()
            if e.kind == "file" and e.text and is_python(p, e.data)
        }
        return loaded_from_elsewhere(python, self.path)

    def _freed(self) -> None:
        """Upward, once the levels are done: a one-line statement binding names that a level
        kept while the file still loaded one of them, and whose names nothing loads now (the
        readers were in bodies below, deleted since), is tried again. Without this the line
        search (which leaves one-line statements to this pass) or the next round would be the
        first to try it on the tree without its readers."""
        src = self.source()
        if src is None or not self.read or self.problem.miss_rate > 0:
            return  # a flaky oracle: the line search tries one-line bindings (``lines``)
        loaded = self._loaded(src)
        units = [
            u
            for u, names in one_line_bindings(src)
            if src.data[u.start : u.end] in self.read and not names & loaded
        ]
        self._delete_units(src.data, units, "delete statements")

    def _delete_units(self, data: bytes, units: Sequence[Unit], what: str) -> None:
        """One learning search deleting whole-line ``units`` of ``data`` (described as
        ``what`` at their lines)."""
        if not units:
            return

        def build(remaining: Sequence[Unit]) -> Tree:
            keep = set(remaining)
            return self._candidate(
                splice(data, [(u.start, u.end, b"") for u in units if u not in keep])
            )

        def describe(chunk: Sequence[Unit]) -> str:
            return describe_spans(what, self.path, [u.line for u in chunk])

        learn_delete(self.problem, self.phase, units, build, describe)

    @staticmethod
    def _bodies(src: PySource, level: Sequence[Loc]) -> list[tuple[list[Unit], bool]]:
        bodies: list[tuple[list[Unit], bool]] = []
        for loc in level:
            body = src.body_at(loc)
            if body is None:
                continue
            units, fixed = src.units(body)
            if units:
                bodies.append((units, bool(loc) and not fixed and not src.is_elif(body)))
        return bodies

    @staticmethod
    def _below(src: PySource, level: Sequence[Loc]) -> list[Loc]:
        below: list[Loc] = []
        for loc in level:
            body = src.body_at(loc)
            if body is not None:
                below.extend(child_locs(body, loc))
        return below

    def _next_batch(self, level: list[Loc], k: int) -> list[Tree]:
        """Up to ``k`` trees of the level below ``level``'s first search if the incumbent stays
        as it is (the ``then`` of the level's search); after the last level, what whoever runs
        this pass proposes next (``problem.after``)."""
        src = self.source()
        trees = self.first_trees(k, self._below(src, level)) if src is not None else []
        return trees or self.problem.after(k)

    def first_trees(self, k: int, level: Sequence[Loc] = ((),)) -> list[Tree]:
        """The first batch of the search over ``level``'s bodies (the module body: the first
        of :meth:`statements`) on this file as it is."""
        src = self.source()
        bodies = self._bodies(src, level) if src is not None else []
        if src is None or not bodies:
            return []
        everything, build, _ = self._level(src, bodies)
        return first_batch(everything, build, k, self.problem.current.digest)

    def _level(
        self, src: PySource, bodies: list[tuple[list[Unit], bool]]
    ) -> tuple[list[Unit], Callable[[Sequence[Unit]], Tree], Callable[[Sequence[Unit]], str]]:
        """The units of ``bodies`` ((units, needs_pass) each) and how to build and describe a
        deletion: a body emptied completely becomes ``pass`` when it needs a statement."""
        data = src.data
        owner = {u: k for k, (units, _) in enumerate(bodies) for u in units}
        everything = [u for units, _ in bodies for u in units]

        def build(remaining: Sequence[Unit]) -> Tree:
            keep = set(remaining)
            alive = {owner[u] for u in keep}
            edits = {u.start: (u.start, u.end, b"") for u in everything if u not in keep}
            for k, (units, needs_pass) in enumerate(bodies):
                if needs_pass and k not in alive:
                    first = units[0]
                    edits[first.start] = (first.start, first.end, first.indent + b"pass" + src.eol)
            return self._candidate(splice(data, edits.values()))

        def describe(chunk: Sequence[Unit]) -> str:
            units, needs_pass = bodies[owner[chunk[0]]]
            if needs_pass and set(chunk) == set(units):
                return f"replace the body at line {units[0].line} of {self.path} with pass"
            return describe_spans("delete statements", self.path, sorted(u.line for u in chunk))

        return everything, build, describe

    def _reduce_bodies(
        self, src: PySource, bodies: list[tuple[list[Unit], bool]], then: Spare | None = None
    ) -> list[Unit]:
        """One learning search over the units of ``bodies`` (:meth:`_level`); a statement
        binding a name that code still present loads waits for that code to go
        (:mod:`repomin.passes.python_names`)."""
        everything, build, describe = self._level(src, bodies)
        try:
            hold: Hold | None = NameHolds(src, everything, self._external()).held
        except RecursionError:  # an expression nested deeper than the walk goes: no hint
            hold = None
        return learn_delete(
            self.problem, self.phase, everything, build, describe, then=then, hold=hold
        )

    # -- 2. unwrapping -----------------------------------------------------------------------

    def unwrap(self) -> None:
        position = 0
        while True:
            src = self.source()
            if src is None:
                return
            nodes = sorted(
                (n for n in ast.walk(src.module) if isinstance(n, _UNWRAPPABLE)),
                key=lambda n: (n.lineno, n.col_offset),
            )
            parts = [(n, f) for n in nodes for f in _unwrap_fields(src, n)]
            if position >= len(parts):
                return

            def candidates(
                src: PySource = src,
                parts: Sequence[tuple[ast.stmt, str]] = parts,
                base: int = position,
            ) -> Iterable[tuple[Tree, str]]:
                for node, field in parts[base:]:
                    data = _unwrapped(src, node, field)
                    tree = self.problem.current if data is None else self._candidate(data)
                    what = _keyword(node) if field == "body" else f"{_keyword(node)}'s else"
                    yield tree, f"unwrap {what} at line {node.lineno} of {self.path}"

            won = self.problem.try_first(self.phase, candidates())
            if won is None:
                return
            position += won

    # -- 3. decorators -----------------------------------------------------------------------

    def decorators(self) -> None:
        src = self.source()
        if src is None:
            return
        units: list[Unit] = []
        for node in ast.walk(src.module):
            for dec in getattr(node, "decorator_list", None) or []:
                last = dec.end_lineno or dec.lineno
                end_col = dec.end_col_offset if dec.end_col_offset is not None else 0
                if src.alone(dec.lineno, dec.col_offset, last, end_col, prefix=b"@"):
                    start, end = src.whole_lines(dec.lineno, last)
                    units.append(Unit(start, end, dec.lineno, b""))
        units.sort(key=lambda u: u.start)
        self._delete_units(src.data, units, "delete decorators")

    # -- 4. import names ---------------------------------------------------------------------

    def imports(self) -> None:
        src = self.source()
        if src is None:
            return
        statements: list[tuple[ast.Import | ast.ImportFrom, Unit]] = []
        for node in ast.walk(src.module):
            if not isinstance(node, ast.Import | ast.ImportFrom) or len(node.names) < 2:
                continue
            if not src.stmt_alone([node]):
                continue
            start, end = src.whole_lines(node.lineno, node.end_lineno or node.lineno)
            indent = indentation(src.line(node.lineno))
            statements.append((node, Unit(start, end, node.lineno, indent)))
        statements.sort(key=lambda s: s[1].start)
        names = [(k, i) for k, (node, _) in enumerate(statements) for i in range(len(node.names))]
        if not names:
            return
        data, eol = src.data, src.eol

        def build(remaining: Sequence[tuple[int, int]]) -> Tree:
            kept: dict[int, list[int]] = {k: [] for k in range(len(statements))}
            for k, i in remaining:
                kept[k].append(i)
            edits: list[tuple[int, int, bytes]] = []
            for k, (node, unit) in enumerate(statements):
                if len(kept[k]) == len(node.names):
                    continue
                if not kept[k]:
                    edits.append((unit.start, unit.end, b""))
                    continue
                aliases = [node.names[i] for i in kept[k]]
                smaller: ast.Import | ast.ImportFrom
                if isinstance(node, ast.Import):
                    smaller = ast.Import(names=aliases)
                else:
                    smaller = ast.ImportFrom(module=node.module, names=aliases, level=node.level)
                text = unit.indent + ast.unparse(smaller).encode() + eol
                edits.append((unit.start, unit.end, text))
            return self._candidate(splice(data, edits))

        def describe(chunk: Sequence[tuple[int, int]]) -> str:
            dropped = [statements[k][0].names[i].name for k, i in chunk]
            head = ", ".join(dropped[:3]) + (
                f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
            )
            return f"drop imported names {head} from {self.path}"

        learn_delete(self.problem, self.phase, names, build, describe)


def _keyword(node: ast.stmt) -> str:
    return {
        "If": "if",
        "For": "for",
        "AsyncFor": "async for",
        "While": "while",
        "With": "with",
        "AsyncWith": "async with",
        "Try": "try",
        "TryStar": "try",
    }.get(type(node).__name__, type(node).__name__)


def unwrap_edit(
    src: PySource, node: ast.stmt, field: str = "body"
) -> tuple[int, int, bytes] | None:
    """The edit that replaces ``node`` (with its decorators) by its own body -- or its ``else``
    block, ``field="orelse"`` -- dedented one level, as ``(start, end, text)``; None if unsafe."""
    body: list[ast.stmt] = getattr(node, field, [])
    if not body or not src.stmt_alone([node]):
        return None
    first = src.first_line(body[0])
    if src.line(first)[: body[0].col_offset].strip():
        return None  # the body sits on the header's line
    outer = indentation(src.line(src.first_line(node)))
    inner = indentation(src.line(first))
    if len(inner) <= len(outer) or not inner.startswith(outer):
        return None
    last = body[-1].end_lineno or body[-1].lineno
    # Lines indented less than the body (continuations, string contents) are left as they are.
    lines = [
        outer + line[len(inner) :] if line.startswith(inner) else line
        for line in src.lines[first - 1 : last]
    ]
    start, end = src.whole_lines(src.first_line(node), node.end_lineno or node.lineno)
    return start, end, b"".join(lines)


def _unwrapped(src: PySource, node: ast.stmt, field: str = "body") -> bytes | None:
    """The file with ``node`` replaced by its own body (or ``else`` block), dedented one level;
    None if unsafe."""
    edit = unwrap_edit(src, node, field)
    return None if edit is None else splice(src.data, [edit])


def _unwrap_fields(src: PySource, node: ast.stmt) -> list[str]:
    """What ``node`` can be replaced by: its body, and an ``if``'s or loop's ``else`` block (an
    ``elif`` is none: its text starts with ``elif``; a ``try``'s ``else`` needs its body)."""
    orelse: list[ast.stmt] = getattr(node, "orelse", None) or []
    if not orelse or isinstance(node, ast.Try | ast.TryStar):
        return ["body"]
    first = orelse[0]
    if isinstance(first, ast.If) and src.line(first.lineno)[first.col_offset :].startswith(b"elif"):
        return ["body"]
    return ["body", "orelse"]
