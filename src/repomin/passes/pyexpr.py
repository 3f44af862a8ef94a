"""Expression-level Python edits that line and statement passes cannot make (``pyexpr``).

Per Python file (smallest first, files that compile only), one candidate per edit, re-parsed
after every accepted one:

1. **Elements**: delete one element of a list, tuple or set display, one ``key: value`` pair
   of a dict display, one argument (positional or keyword) of a call, with one adjacent comma
   (``["add 1 2", "root 16"]`` -> ``["root 16"]``).
2. **Hoisting**: replace a conditional expression by one branch, a boolean operation by one
   operand, ``not x``/``-x`` by ``x`` (not arithmetic: a side of ``a + b`` changes a value far
   more often than it removes a dependency; measured on the generated cases, every such
   candidate was rejected)
   (``REGISTRY[() if False else name]`` -> ``REGISTRY[name]``).
3. **Unwrapping definitions**: a ``def`` or ``class`` (with its decorators) replaced by its
   body, dedented one level -- the statement-level hoist: a failing call inside a function that
   an import-time call reaches then fails at import, and the definitions that only led to it
   can go (mock 1.0.1's tests: 2 files, 501 -> 77 bytes). The ``python`` pass unwraps only
   ``if``/``try``/``with``/loops; a definition's unwrapping fails far more often (its
   parameters and ``self`` become undefined names), so it waits here for the stall.
4. **Joining bodies**: a compound statement whose body is only simple one-line statements
   gets them on its header's line (``def f():\\n    return x`` -> ``def f(): return x``); all
   such joins of the file first as one candidate, then one by one.

The files' candidates go out in one stream, file after file (re-parsed after every accepted
one), so whatever the search keeps in flight beside a file's last candidate is the next file's
first. Every candidate passes the syntax guard (it must compile). Each
file content is swept once: a later round skips a file this pass already left unchanged, as
``tokens`` does. Nodes inside f-strings are never edited. The driver runs it only when the
other passes stall (it is in :data:`repomin.passes.STALL_ONLY`, before ``tokens``).
"""

from __future__ import annotations

import ast
import hashlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from repomin.passes.python_ast import unwrap_edit
from repomin.passes.python_source import PySource
from repomin.passes.textedit import compiles, is_python, line_starts, splice, text_files
from repomin.search.problem import Problem
from repomin.tree import Tree

#: Files larger than this are left to the statement and line passes.
MAX_BYTES = 32 * 1024

_SIMPLE = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Return,
    ast.Pass,
    ast.Raise,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Delete,
    ast.Assert,
    ast.Break,
    ast.Continue,
)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_JOINABLE = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
)


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace bytes ``[start, end)`` by ``text``; ``what`` describes it."""

    start: int
    end: int
    text: bytes
    what: str


class _Spans:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts = line_starts(data)

    def of(self, node: ast.AST) -> tuple[int, int] | None:
        lineno = getattr(node, "lineno", None)
        end_lineno = getattr(node, "end_lineno", None)
        col = getattr(node, "col_offset", None)
        end_col = getattr(node, "end_col_offset", None)
        if lineno is None or end_lineno is None or col is None or end_col is None:
            return None
        if end_lineno > len(self.starts) - 1:
            return None
        return self.starts[lineno - 1] + col, self.starts[end_lineno - 1] + end_col


def parse(data: bytes) -> ast.Module | None:
    if data.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        data.decode("utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _nodes(module: ast.Module) -> Iterator[ast.AST]:
    """Every node outside f-strings, in source order of a depth-first walk."""
    pending: list[ast.AST] = [module]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.JoinedStr):
            continue
        pending.extend(reversed(list(ast.iter_child_nodes(node))))


def _items(node: ast.AST) -> list[ast.AST] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return list(node.elts)
    if isinstance(node, ast.Call):
        return [*node.args, *node.keywords]
    return None


def element_edits(data: bytes, module: ast.Module) -> list[Edit]:
    spans = _Spans(data)
    out: list[Edit] = []
    for node in _nodes(module):
        groups: list[tuple[int, int]] = []
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                k = spans.of(key) if key is not None else None
                v = spans.of(value)
                if k is not None and v is not None:
                    groups.append((k[0], v[1]))
        else:
            items = _items(node)
            if not items:
                continue
            for item in items:
                span = spans.of(item)
                if span is not None:
                    groups.append(span)
        groups.sort()
        kind = type(node).__name__.lower()
        for i, (start, end) in enumerate(groups):
            if i + 1 < len(groups):
                cut = (start, groups[i + 1][0])
            elif i > 0:
                cut = (groups[i - 1][1], end)
            else:
                cut = (start, _after_comma(data, end))
            shown = data[start:end].decode("utf-8", "replace")[:40]
            out.append(Edit(cut[0], cut[1], b"", f"delete {kind} element {shown!r}"))
    return out


def _after_comma(data: bytes, end: int) -> int:
    """``end`` extended over blanks and one comma that follow it, if a comma does."""
    pos = end
    while pos < len(data) and data[pos : pos + 1] in (b" ", b"\t"):
        pos += 1
    return pos + 1 if data[pos : pos + 1] == b"," else end


def hoist_edits(data: bytes, module: ast.Module) -> list[Edit]:
    spans = _Spans(data)
    out: list[Edit] = []
    for node in _nodes(module):
        parts: list[ast.AST] = []
        if isinstance(node, ast.IfExp):
            parts = [node.orelse, node.body]
        elif isinstance(node, ast.BoolOp):
            parts = list(node.values)
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        whole = spans.of(node) if parts else None
        if whole is None:
            continue
        for part in parts:
            span = spans.of(part)
            if span is None:
                continue
            text = data[span[0] : span[1]]
            shown = data[whole[0] : whole[1]].decode("utf-8", "replace")[:40]
            what = f"replace {shown!r} by {text.decode('utf-8', 'replace')[:30]!r}"
            out.append(Edit(whole[0], whole[1], text, what))
    return out


def unwrap_edits(data: bytes, module: ast.Module) -> list[Edit]:
    """Definitions (``def``, ``class``, decorators and all) replaced by their dedented bodies,
    outermost first."""
    src = PySource(data, module)
    out: list[Edit] = []
    for node in _nodes(module):
        if not isinstance(node, _DEFINITIONS):
            continue
        edit = unwrap_edit(src, node)
        if edit is not None:
            what = f"unwrap {_definition_keyword(node)} {node.name} at line {node.lineno}"
            out.append(Edit(*edit, what))
    return out


def _definition_keyword(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        return "class"
    return "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"


def join_edits(data: bytes, module: ast.Module) -> list[Edit]:
    """Bodies of simple one-line statements moved onto their header's line."""
    spans = _Spans(data)
    lines = data.splitlines(keepends=True)
    out: list[Edit] = []
    for node in _nodes(module):
        if not isinstance(node, _JOINABLE) or getattr(node, "orelse", None):
            continue
        body: list[ast.stmt] = node.body
        if not all(isinstance(s, _SIMPLE) and s.lineno == s.end_lineno for s in body):
            continue
        first = body[0].lineno
        if first <= node.lineno or any(s.lineno != first + i for i, s in enumerate(body)):
            continue
        header = lines[first - 2].rstrip(b"\r\n")
        if not header.rstrip().endswith(b":") or b"#" in header:
            continue
        texts = []
        for stmt in body:
            span = spans.of(stmt)
            if span is None:
                break
            texts.append(data[span[0] : span[1]])
        else:
            start = spans.starts[first - 2] + len(header.rstrip())
            end = spans.starts[body[-1].lineno - 1] + len(lines[body[-1].lineno - 1].rstrip())
            joined = b" " + b"; ".join(texts)
            if end - start > len(joined):
                out.append(Edit(start, end, joined, f"join the body of line {node.lineno}"))
    return out


class PythonExpressions:
    """The ``pyexpr`` pass (see the module docstring)."""

    name: ClassVar[str] = "pyexpr"

    def __init__(self) -> None:
        self._done: set[tuple[str, str]] = set()

    def run(self, problem: Problem) -> None:
        files = text_files(problem, lambda p, d: len(d) <= MAX_BYTES and is_python(p, d))
        self._stream(problem, list(reversed(files)))

    def _stream(self, problem: Problem, files: list[str]) -> None:
        """The open files' candidates in one ``try_first`` call, file after file. The files
        before the accepted candidate's are done (all of theirs were rejected); the next call
        starts with that file, re-parsed: the order of a file-by-file sweep, with nothing
        between one file's last candidate and the next file's first."""
        while True:
            open_: list[tuple[str, bytes, ast.Module, tuple[str, str]]] = []
            for path in files:
                entry = problem.current.entries.get(path)
                if entry is None:
                    continue
                key = (path, hashlib.sha256(entry.data).hexdigest())
                if key in self._done or not compiles(entry.data, path):
                    continue
                module = parse(entry.data)
                if module is None:
                    self._done.add(key)
                    continue
                open_.append((path, entry.data, module, key))
            if not open_:
                return
            owners: list[int] = []

            def candidates(
                open_: list[tuple[str, bytes, ast.Module, tuple[str, str]]] = open_,
                owners: list[int] = owners,
            ) -> Iterator[tuple[Tree, str]]:
                for k, (path, data, module, _) in enumerate(open_):
                    for candidate in self._candidates(problem, path, data, module):
                        owners.append(k)
                        yield candidate

            won = problem.try_first(self.name, candidates())
            for *_, key in open_[: len(open_) if won is None else owners[won]]:
                self._done.add(key)
            if won is None:
                return

    def _candidates(
        self, problem: Problem, path: str, data: bytes, module: ast.Module
    ) -> Iterator[tuple[Tree, str]]:
        joins = join_edits(data, module)
        singles = [
            *element_edits(data, module),
            *hoist_edits(data, module),
            *unwrap_edits(data, module),
            *joins,
        ]
        if len(joins) > 1:
            edits = [(e.start, e.end, e.text) for e in joins]
            yield self._candidate(problem, path, splice(data, edits), f"join bodies in {path}")
        for edit in singles:
            new = splice(data, [(edit.start, edit.end, edit.text)])
            yield self._candidate(problem, path, new, f"{edit.what} in {path}")

    @staticmethod
    def _candidate(problem: Problem, path: str, new: bytes, what: str) -> tuple[Tree, str]:
        current = problem.current
        if len(new) >= len(current[path].data) or not compiles(new, path):
            return current, what  # a no-op for the driver (no oracle run)
        return current.replace(path, new), what
