"""Python-aware reduction through ``ast``: statements, definitions, wrappers, decorators, imports.

Edits use exact byte spans (``ast`` offsets are UTF-8 byte offsets) and always whole lines, so
everything else in the file keeps its formatting. Per Python file, largest first:

1. **Statements, hierarchically.** The module body is reduced with ddmin, then the bodies of
   the surviving compound statements (functions, classes, ``if``/``for``/``while``/``with``/
   ``try``/``match``), breadth first. Definitions, imports and docstrings are statements like
   any other. A body emptied completely becomes ``pass``, so "simplify this body to ``pass``" is
   the first candidate tried at every level. Statements sharing a line (``a; b``, or a body on
   its header's line) move as one unit or not at all.
2. **Unwrapping.** A compound statement replaced by its dedented body (``try:``, ``with``,
   ``if``, loops), outermost first.
3. **Decorators**, with ddmin.
4. **Names of multi-name imports** (``from m import a, b`` -> ``from m import a``), with ddmin.

Every candidate is compiled before it is proposed (the syntax guard of
:mod:`repomin.passes.textedit`); files that do not compile to begin with, are not UTF-8 or
start with a byte-order mark are left to the generic passes.
"""

from __future__ import annotations

import ast
import warnings
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from repomin.passes.base import Problem, ddmin_delete
from repomin.passes.textedit import (
    Guard,
    compiles,
    describe_spans,
    indentation,
    is_python,
    line_starts,
    newline_of,
    propose,
    splice,
    text_files,
)
from repomin.tree import Tree

#: One step from a body to a nested body: (statement index, field, handler/case index or -1).
Step = tuple[int, str, int]
Loc = tuple[Step, ...]

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


@dataclass(frozen=True, slots=True)
class _Unit:
    """Whole lines ``[start, end)`` holding one statement group (or decorator, import)."""

    start: int
    end: int
    line: int
    indent: bytes


class _Source:
    """One parsed version of a file: bytes, line table and module."""

    def __init__(self, data: bytes, module: ast.Module) -> None:
        self.data = data
        self.module = module
        self.starts = line_starts(data)
        self.lines = data.splitlines(keepends=True)
        self.eol = newline_of(data)

    @classmethod
    def parse(cls, data: bytes) -> _Source | None:
        if data.startswith(b"\xef\xbb\xbf"):
            return None
        try:
            data.decode("utf-8")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return None
        return cls(data, module)

    def line(self, lineno: int) -> bytes:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else b""

    def whole_lines(self, first: int, last: int) -> tuple[int, int]:
        return self.starts[first - 1], self.starts[last]

    def alone(self, first: int, col: int, last: int, end_col: int, *, prefix: bytes = b"") -> bool:
        """Are lines ``first..last`` only this construct (plus whitespace, ``;``, a comment)?"""
        head = self.line(first)[:col].strip()
        tail = self.line(last)[end_col:].lstrip(b" \t;").rstrip(b"\r\n")
        return head == prefix.strip() and (not tail.strip() or tail.lstrip().startswith(b"#"))

    # -- statements ------------------------------------------------------------------------

    @staticmethod
    def first_line(node: ast.stmt) -> int:
        decorators: list[ast.expr] = getattr(node, "decorator_list", None) or []
        return min([node.lineno, *(d.lineno for d in decorators)])

    def stmt_alone(self, group: Sequence[ast.stmt]) -> bool:
        head, tail = group[0], group[-1]
        first = self.first_line(head)
        decorators = getattr(head, "decorator_list", None) or []
        end_line = tail.end_lineno or tail.lineno
        end_col = tail.end_col_offset if tail.end_col_offset is not None else 0
        if decorators and decorators[0].lineno == first:
            return self.alone(first, decorators[0].col_offset, end_line, end_col, prefix=b"@")
        return self.alone(first, head.col_offset, end_line, end_col)

    def units(self, body: Sequence[ast.stmt]) -> tuple[list[_Unit], bool]:
        """Deletable units of ``body`` and whether some statements are fixed (share a line)."""
        groups: list[list[ast.stmt]] = []
        for stmt in body:
            if groups and self.first_line(stmt) <= (groups[-1][-1].end_lineno or 0):
                groups[-1].append(stmt)
            else:
                groups.append([stmt])
        units: list[_Unit] = []
        fixed = False
        for group in groups:
            if not self.stmt_alone(group):
                fixed = True
                continue
            first = self.first_line(group[0])
            start, end = self.whole_lines(first, group[-1].end_lineno or first)
            units.append(_Unit(start, end, first, indentation(self.line(first))))
        return units, fixed

    def body_at(self, loc: Loc) -> list[ast.stmt] | None:
        body: list[ast.stmt] = self.module.body
        for index, field, sub in loc:
            if index >= len(body):
                return None
            value = getattr(body[index], field, None)
            if not isinstance(value, list):
                return None
            if sub >= 0:
                if sub >= len(value):
                    return None
                value = getattr(value[sub], "body", None)
                if not isinstance(value, list):
                    return None
            body = value
        return body

    def is_elif(self, body: Sequence[ast.stmt]) -> bool:
        return (
            len(body) == 1
            and isinstance(body[0], ast.If)
            and self.line(body[0].lineno).lstrip().startswith(b"elif")
        )


def _child_locs(body: Sequence[ast.stmt], loc: Loc) -> list[Loc]:
    out: list[Loc] = []
    for i, stmt in enumerate(body):
        for field in ("body", "orelse", "finalbody"):
            value = getattr(stmt, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                out.append((*loc, (i, field, -1)))
        for field in ("handlers", "cases"):
            for k, _ in enumerate(getattr(stmt, field, None) or []):
                out.append((*loc, (i, field, k)))
    return out


class PythonReduce:
    """The ``python`` pass (see the module docstring)."""

    name: ClassVar[str] = "python"

    def run(self, problem: Problem) -> None:
        for path in text_files(problem, is_python):
            entry = problem.current.entries.get(path)
            if entry is None or not compiles(entry.data, path):
                continue
            _FileReducer(problem, path, self.name).reduce()


class _FileReducer:
    def __init__(self, problem: Problem, path: str, phase: str) -> None:
        self.problem = problem
        self.path = path
        self.phase = phase
        self._parsed: _Source | None = None
        self.guard: Guard = lambda data: compiles(data, path)

    def source(self) -> _Source | None:
        entry = self.problem.current.entries.get(self.path)
        if entry is None:
            return None
        if self._parsed is None or self._parsed.data != entry.data:
            self._parsed = _Source.parse(entry.data)
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
        queue: deque[Loc] = deque([()])
        while queue:
            loc = queue.popleft()
            src = self.source()
            if src is None:
                return
            body = src.body_at(loc)
            if body is None:
                continue
            units, fixed = src.units(body)
            if units:
                needs_pass = bool(loc) and not fixed and not src.is_elif(body)
                self._reduce_body(src, units, needs_pass)
                src = self.source()
                if src is None:
                    return
                body = src.body_at(loc)
                if body is None:
                    continue
            queue.extend(_child_locs(body, loc))

    def _reduce_body(self, src: _Source, units: list[_Unit], needs_pass: bool) -> None:
        data = src.data
        first = units[0]
        filler = first.indent + b"pass" + src.eol

        def build(remaining: Sequence[_Unit]) -> Tree:
            keep = set(remaining)
            edits = [(u.start, u.end, b"") for u in units if u not in keep]
            if needs_pass and not remaining:
                edits[0] = (first.start, first.end, filler)
            return self._candidate(splice(data, edits))

        def describe(chunk: Sequence[_Unit]) -> str:
            if needs_pass and len(chunk) == len(units):
                return f"replace the body at line {first.line} of {self.path} with pass"
            return describe_spans("delete statements", self.path, [u.line for u in chunk])

        ddmin_delete(self.problem, self.phase, units, build, describe)

    # -- 2. unwrapping -----------------------------------------------------------------------

    def unwrap(self) -> None:
        position = 0
        while True:
            src = self.source()
            if src is None:
                return
            nodes: list[ast.stmt] = [n for n in ast.walk(src.module) if isinstance(n, _UNWRAPPABLE)]
            nodes.sort(key=lambda n: (n.lineno, n.col_offset))
            if position >= len(nodes):
                return

            def candidates(
                src: _Source = src, nodes: list[ast.stmt] = nodes, base: int = position
            ) -> Iterable[tuple[Tree, str]]:
                for node in nodes[base:]:
                    data = _unwrapped(src, node)
                    tree = self.problem.current if data is None else self._candidate(data)
                    yield tree, f"unwrap {_keyword(node)} at line {node.lineno} of {self.path}"

            won = self.problem.try_first(self.phase, candidates())
            if won is None:
                return
            position += won

    # -- 3. decorators -----------------------------------------------------------------------

    def decorators(self) -> None:
        src = self.source()
        if src is None:
            return
        units: list[_Unit] = []
        for node in ast.walk(src.module):
            for dec in getattr(node, "decorator_list", None) or []:
                last = dec.end_lineno or dec.lineno
                end_col = dec.end_col_offset if dec.end_col_offset is not None else 0
                if src.alone(dec.lineno, dec.col_offset, last, end_col, prefix=b"@"):
                    start, end = src.whole_lines(dec.lineno, last)
                    units.append(_Unit(start, end, dec.lineno, b""))
        units.sort(key=lambda u: u.start)
        if not units:
            return
        data = src.data

        def build(remaining: Sequence[_Unit]) -> Tree:
            keep = set(remaining)
            return self._candidate(
                splice(data, [(u.start, u.end, b"") for u in units if u not in keep])
            )

        def describe(chunk: Sequence[_Unit]) -> str:
            return describe_spans("delete decorators", self.path, [u.line for u in chunk])

        ddmin_delete(self.problem, self.phase, units, build, describe)

    # -- 4. import names ---------------------------------------------------------------------

    def imports(self) -> None:
        src = self.source()
        if src is None:
            return
        statements: list[tuple[ast.Import | ast.ImportFrom, _Unit]] = []
        for node in ast.walk(src.module):
            if not isinstance(node, ast.Import | ast.ImportFrom) or len(node.names) < 2:
                continue
            if not src.stmt_alone([node]):
                continue
            start, end = src.whole_lines(node.lineno, node.end_lineno or node.lineno)
            indent = indentation(src.line(node.lineno))
            statements.append((node, _Unit(start, end, node.lineno, indent)))
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

        ddmin_delete(self.problem, self.phase, names, build, describe)


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


def _unwrapped(src: _Source, node: ast.stmt) -> bytes | None:
    """The file with ``node`` replaced by its own body, dedented one level; None if unsafe."""
    body: list[ast.stmt] = getattr(node, "body", [])
    if not body or not src.stmt_alone([node]):
        return None
    first = src.first_line(body[0])
    if src.line(first)[: body[0].col_offset].strip():
        return None  # the body sits on the header's line
    outer = indentation(src.line(node.lineno))
    inner = indentation(src.line(first))
    if len(inner) <= len(outer) or not inner.startswith(outer):
        return None
    last = body[-1].end_lineno or body[-1].lineno
    # Lines indented less than the body (continuations, string contents) are left as they are.
    lines = [
        outer + line[len(inner) :] if line.startswith(inner) else line
        for line in src.lines[first - 1 : last]
    ]
    start, end = src.whole_lines(node.lineno, node.end_lineno or node.lineno)
    return splice(src.data, [(start, end, b"".join(lines))])
