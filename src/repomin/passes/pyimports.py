"""Where a Python name is only imported or exported, and the edit that drops it there.

A module-level function nothing calls may still be named by ``from utils import f`` in another
module (or its own package's ``__init__``) and by a string in an ``__all__`` list. Deleting the
function alone is an ``ImportError`` -- another failure -- so the ``coverage`` pass deletes it
together with those names (:class:`NameSites`). Only two shapes count, each standing on lines of
its own:

* ``from M import a, f, b`` (any depth, any ``M``, the name not renamed): the statement is
  written again without ``f`` (``ast.unparse``: its comments and parentheses go), and when no
  name is left it is deleted -- or becomes ``pass`` if it was the only statement of its block;
* ``__all__ = [...]`` or ``(...)`` at module level: the string element ``"f"`` is cut with its
  comma.

Everything else that names ``f`` (a call, ``import M`` then ``M.f``, a string elsewhere) is
counted by the caller and keeps the function. Nothing here is evidence: the edits only shape a
proposal the oracle decides.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from repomin.passes.python_source import PySource
from repomin.passes.textedit import indentation

#: An edit ``(start, end, replacement)`` of a file's bytes.
Edit = tuple[int, int, bytes]


@dataclass(frozen=True)
class _ImportStatement:
    start: int
    end: int
    indent: bytes
    node: ast.ImportFrom
    sole: bool  # the only statement of its block


@dataclass(frozen=True)
class _AllElement:
    start: int
    end: int
    name: str


class NameSites:
    """The import and ``__all__`` sites of some names in some Python files.

    ``files`` maps a path to its bytes; ``names`` are the names looked for; ``skip`` gives, per
    path, byte spans whose contents are about to be replaced anyway (a site inside one is not a
    site). :meth:`count` says how often a name occurs at a site (each occurrence is one bare word
    of the file's code); :meth:`edits` the edits that drop some names from every site.
    """

    def __init__(
        self,
        files: Mapping[str, bytes],
        names: Collection[str],
        skip: Mapping[str, Sequence[tuple[int, int]]] | None = None,
    ) -> None:
        self._data = dict(files)
        self._imports: dict[str, list[_ImportStatement]] = {}
        self._all: dict[str, list[_AllElement]] = {}
        self._counts: dict[str, int] = dict.fromkeys(names, 0)
        wanted = set(names)
        spelled = [n.encode() for n in wanted]
        for path, data in files.items():
            if not any(n in data for n in spelled):
                continue  # no site can be here: spare the parse
            src = PySource.parse(data)
            if src is None:
                continue
            spans = (skip or {}).get(path, ())
            imports = [
                s
                for s in _import_statements(src)
                if not _inside(s.start, s.end, spans)
                and any(a.name in wanted and a.asname in (None, a.name) for a in s.node.names)
            ]
            elements = [
                e
                for e in _all_elements(src)
                if e.name in wanted and not _inside(e.start, e.end, spans)
            ]
            if imports:
                self._imports[path] = imports
            if elements:
                self._all[path] = elements
            for s in imports:
                for alias in s.node.names:
                    if alias.name in wanted and alias.asname in (None, alias.name):
                        self._counts[alias.name] += 1
            for e in elements:
                self._counts[e.name] += 1

    def count(self, name: str) -> int:
        """How many sites name ``name``."""
        return self._counts.get(name, 0)

    @property
    def paths(self) -> list[str]:
        """The files with a site."""
        return sorted(set(self._imports) | set(self._all))

    def edits(self, path: str, gone: Iterable[str]) -> list[Edit]:
        """The edits of ``path``'s bytes that drop every name of ``gone`` from its sites."""
        drop = set(gone)
        if not drop:
            return []
        eol = b"\r\n" if b"\r\n" in self._data[path] else b"\n"
        out: list[Edit] = []
        for s in self._imports.get(path, []):
            kept = [a for a in s.node.names if not (a.name in drop and a.asname in (None, a.name))]
            if len(kept) == len(s.node.names):
                continue
            if kept:
                smaller = ast.ImportFrom(module=s.node.module, names=kept, level=s.node.level)
                out.append((s.start, s.end, s.indent + ast.unparse(smaller).encode() + eol))
            else:
                out.append((s.start, s.end, s.indent + b"pass" + eol if s.sole else b""))
        out += [(e.start, e.end, b"") for e in self._all.get(path, []) if e.name in drop]
        return out


def _inside(start: int, end: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def _import_statements(src: PySource) -> list[_ImportStatement]:
    """``from … import …`` statements (not ``*``) that stand alone on their lines."""
    out: list[_ImportStatement] = []
    for node in ast.walk(src.module):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            for k, stmt in enumerate(block):
                if not isinstance(stmt, ast.ImportFrom) or stmt.names[0].name == "*":
                    continue
                last = stmt.end_lineno or stmt.lineno
                before = block[k - 1].end_lineno if k else None
                after = block[k + 1].lineno if k + 1 < len(block) else None
                if (
                    not src.stmt_alone([stmt])
                    or (before is not None and before >= stmt.lineno)
                    or (after is not None and after <= last)
                ):
                    continue
                start, end = src.whole_lines(stmt.lineno, last)
                indent = indentation(src.line(stmt.lineno))
                out.append(_ImportStatement(start, end, indent, stmt, len(block) == 1))
    return out


def _all_elements(src: PySource) -> list[_AllElement]:
    """The string elements of module-level ``__all__ = [...]`` / ``(...)`` assignments, each
    with the span that removes it and the comma after it (``("a", )`` stays a tuple)."""
    out: list[_AllElement] = []
    for stmt in src.module.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == "__all__"
            and isinstance(stmt.value, ast.List | ast.Tuple)
        ):
            continue
        elts = stmt.value.elts
        if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts):
            continue
        offsets = [_span(src, e) for e in elts]
        if any(o is None for o in offsets):
            continue
        spans = [o for o in offsets if o is not None]
        for k, elt in enumerate(elts):
            assert isinstance(elt, ast.Constant)
            start, end = spans[k]
            if k + 1 < len(elts):
                end = spans[k + 1][0]  # the element, its comma and the space to the next
            else:
                rest = src.data[end:]
                gap = len(rest) - len(rest.lstrip(b" \t"))
                if rest[gap : gap + 1] == b",":
                    end += gap + 1  # the last element and its trailing comma
            out.append(_AllElement(start, end, str(elt.value)))
    return out


def _span(src: PySource, node: ast.expr) -> tuple[int, int] | None:
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    return (
        src.starts[node.lineno - 1] + node.col_offset,
        src.starts[node.end_lineno - 1] + node.end_col_offset,
    )


__all__ = ["NameSites"]
