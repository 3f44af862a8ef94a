"""One parsed version of a Python file, for the ``python`` pass: bytes, line table, module.

Owns :class:`PySource` (where statements start and end in whole lines, which of them stand
alone on their lines, the body at a location), :class:`Unit` (a deletable group of whole lines)
and the location type :data:`Loc` with :func:`child_locs`. No edits are made here.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from repomin.passes.textedit import indentation, line_starts, newline_of

#: One step from a body to a nested body: (statement index, field, handler/case index or -1).
Step = tuple[int, str, int]
Loc = tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Unit:
    """Whole lines ``[start, end)`` holding one statement group (or decorator, import)."""

    start: int
    end: int
    line: int
    indent: bytes


class PySource:
    """One parsed version of a file: bytes, line table and module."""

    def __init__(self, data: bytes, module: ast.Module) -> None:
        self.data = data
        self.module = module
        self.starts = line_starts(data)
        self.lines = data.splitlines(keepends=True)
        self.eol = newline_of(data)

    @classmethod
    def parse(cls, data: bytes) -> PySource | None:
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

    def units(self, body: Sequence[ast.stmt]) -> tuple[list[Unit], bool]:
        """Deletable units of ``body`` and whether some statements are fixed (share a line)."""
        groups: list[list[ast.stmt]] = []
        for stmt in body:
            if groups and self.first_line(stmt) <= (groups[-1][-1].end_lineno or 0):
                groups[-1].append(stmt)
            else:
                groups.append([stmt])
        units: list[Unit] = []
        fixed = False
        for group in groups:
            if not self.stmt_alone(group):
                fixed = True
                continue
            first = self.first_line(group[0])
            start, end = self.whole_lines(first, group[-1].end_lineno or first)
            units.append(Unit(start, end, first, indentation(self.line(first))))
        return units, fixed

    def one_line_units(self) -> list[Unit]:
        """The units of every body, at any depth, that are each one whole line: the statement
        deletions the ``python`` pass tests alone, each of which deletes exactly that line."""
        found: list[Unit] = []
        level: list[Loc] = [()]
        while level:
            below: list[Loc] = []
            for loc in level:
                body = self.body_at(loc)
                if body is None:
                    continue
                units, _ = self.units(body)
                found.extend(u for u in units if u.end - u.start == len(self.line(u.line)))
                below.extend(child_locs(body, loc))
            level = below
        return sorted(found, key=lambda u: u.start)

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


def child_locs(body: Sequence[ast.stmt], loc: Loc) -> list[Loc]:
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
