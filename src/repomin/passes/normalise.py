"""Normalisation: comments, blank lines and docstrings out, in batches over every file.

Only edits that do not change what a program does in the usual case, and only in languages
whose comments are known exactly:

* Python (via ``tokenize``): comments and blank lines, except a shebang, a coding cookie, and
  lines inside multi-line strings; the result must compile. Separately (its own unit per
  file), docstrings (via ``ast``): the leading string statement of the module and of every
  class and function, deleted with its lines when nothing else shares them; a body left empty
  becomes ``pass``. A docstring is data to a program that reads ``__doc__`` (doctests, help
  texts): then the oracle rejects the unit and the file keeps its docstrings.
* C-like languages (the :mod:`~repomin.passes.brackets` lexer): ``//`` and ``/* */`` comments
  and blank lines outside strings.
* ``#``-comment languages (shell, YAML, TOML, INI, Makefile, Dockerfile, ...): whole-line
  comments (not a first-line shebang or Dockerfile parser directive) and blank lines.
* JSON: blank lines.

Other files are left alone. Each proposal still goes through the oracle: the units (a file's
comments, a Python file's docstrings) are deleted with ddmin, so one candidate normalises
every file at once and only a rejection splits the batch.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from collections.abc import Sequence
from typing import ClassVar

from repomin.passes.brackets import CLIKE_SUFFIXES, lex
from repomin.passes.textedit import (
    JSON_SUFFIXES,
    compiles,
    is_blank,
    is_python,
    parses_as_json,
    text_files,
)
from repomin.search.deletion.ddmin import ddmin_delete
from repomin.search.problem import Problem
from repomin.tree import Tree

HASH_SUFFIXES = (
    ".sh", ".bash", ".zsh", ".ksh", ".yaml", ".yml", ".toml", ".cfg", ".conf", ".ini", ".r",
    ".rb", ".pl", ".pm", ".mk", ".cmake", ".tcl", ".properties", ".gitignore", ".dockerignore",
)  # fmt: skip
HASH_NAMES = (
    "Makefile", "GNUmakefile", "makefile", "Dockerfile", "Containerfile", "CMakeLists.txt",
    "Gemfile", "Rakefile", "requirements.txt", ".gitignore", ".dockerignore", ".gitattributes",
)  # fmt: skip

_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")


def normalised(path: str, data: bytes) -> bytes | None:
    """``data`` without comments and blank lines, or None (unknown language, no change, or the
    result would not parse)."""
    name = path.rpartition("/")[2]
    if is_python(path, data):
        new = _python(data)
        ok = new is not None and compiles(new, path)
    elif path.endswith(CLIKE_SUFFIXES):
        new = _clike(data, path)
        ok = new is not None
    elif path.endswith(HASH_SUFFIXES) or name in HASH_NAMES or name.startswith("Dockerfile"):
        new = _hash(data, dockerfile=name.startswith(("Dockerfile", "Containerfile")))
        ok = True
    elif path.endswith(JSON_SUFFIXES):
        new = _drop_blank(data.splitlines(keepends=True), set())
        ok = parses_as_json(new) or not parses_as_json(data)
    else:
        return None
    if not ok or new is None or new == data:
        return None
    return new


def without_docstrings(data: bytes) -> bytes | None:
    """Python ``data`` without its docstrings (see the module docstring), or None (no
    docstring that stands on lines of its own, or ``data`` does not parse)."""
    try:
        data.decode("utf-8")  # ``ast`` offsets are UTF-8 byte offsets
        module = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = data.splitlines(keepends=True)
    edits: list[tuple[int, int, bytes]] = []  # first line, last line (0-based), replacement
    for node in ast.walk(module):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = node.body
        doc = body[0] if body else None
        if not (
            isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
            and doc.end_lineno is not None
            and doc.end_col_offset is not None
        ):
            continue
        first, last = doc.lineno - 1, doc.end_lineno - 1
        head = lines[first][: doc.col_offset]
        tail = lines[last][doc.end_col_offset :]
        if head.strip() or tail.strip() or (len(body) > 1 and body[1].lineno - 1 <= last):
            continue  # shares a line with code: left alone
        if not isinstance(node, ast.Module) and node.lineno - 1 >= first:
            continue  # on its header's line
        empty = len(body) == 1 and node is not module
        fill = head + b"pass" + _ending(lines[last]) if empty else b""
        if len(fill) < sum(len(line) for line in lines[first : last + 1]):
            edits.append((first, last, fill))
    if not edits:
        return None
    for first, last, fill in sorted(edits, reverse=True):
        lines[first : last + 1] = [fill] if fill else []
    new = b"".join(lines)
    return new if compiles(new) else None


def _ending(line: bytes) -> bytes:
    return line[len(line.rstrip(b"\r\n")) :] or b"\n"


def _drop_blank(lines: Sequence[bytes], protected: set[int]) -> bytes:
    return b"".join(line for n, line in enumerate(lines, 1) if n in protected or not is_blank(line))


def _python(data: bytes) -> bytes | None:
    try:
        toks = list(tokenize.tokenize(io.BytesIO(data).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, LookupError):
        return None
    encoding = toks[0].string if toks and toks[0].type == tokenize.ENCODING else "utf-8"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    if text.encode(encoding) != data:
        return None
    lines = text.splitlines(keepends=True)
    protected: set[int] = set()
    cuts: dict[int, int] = {}  # line -> column where a comment starts
    for tok in toks:
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            protected.update(range(tok.start[0] + 1, tok.end[0] + 1))
        elif tok.type == tokenize.COMMENT:
            row, col = tok.start
            shebang = row == 1 and tok.string.startswith("#!")
            if shebang or (row <= 2 and _is_coding(tok.string)):
                protected.add(row)
                continue
            cuts[row] = col
    out: list[str] = []
    for n, line in enumerate(lines, 1):
        if n in cuts:
            ending = line[len(line.rstrip("\r\n")) :]
            line = line[: cuts[n]].rstrip() + ending
        if n in protected or line.strip():
            out.append(line)
    return "".join(out).encode(encoding)


def _is_coding(comment: str) -> bool:
    return _CODING.match(comment.encode("utf-8", "replace")) is not None


def _clike(data: bytes, path: str) -> bytes | None:
    lexed = lex(data, path)
    if lexed is None:
        return None
    pieces: list[bytes] = []
    pos = 0
    for start, end in lexed.comments:
        pieces.append(data[pos:start])
        before = data[start - 1 : start]
        after = data[end : end + 1]
        mid_line = before not in (b"", b" ", b"\t", b"\n") and after not in (b"", b" ", b"\n")
        pieces.append(b" " if mid_line else b"")
        pos = end
    pieces.append(data[pos:])
    text = b"".join(pieces)
    # Lines inside multi-line strings (template literals, raw strings) keep their blank lines.
    protected: set[int] = set()
    relexed = lex(text, path)
    if relexed is None:
        return None
    for start, end in relexed.opaque.items():
        first = text.count(b"\n", 0, start) + 1
        last = first + text.count(b"\n", start, end)
        protected.update(range(first + 1, last + 1))
    lines = text.splitlines(keepends=True)
    stripped = [
        line if n in protected else line[: len(line.rstrip())] + line[len(line.rstrip(b"\r\n")) :]
        for n, line in enumerate(lines, 1)
    ]
    return _drop_blank(stripped, protected)


def _hash(data: bytes, *, dockerfile: bool) -> bytes:
    lines = data.splitlines(keepends=True)
    out: list[bytes] = []
    for n, line in enumerate(lines, 1):
        body = line.lstrip()
        if body.startswith(b"#"):
            keep = n == 1 and (body.startswith(b"#!") or (dockerfile and b"=" in body))
            if not keep:
                continue
        if is_blank(line):
            continue
        out.append(line)
    return b"".join(out)


#: What a unit of the pass drops from one file.
COMMENTS = "comments and blank lines"
DOCSTRINGS = "docstrings"

#: A unit: (path, what it drops).
Unit = tuple[str, str]


def _variants(path: str, data: bytes) -> dict[frozenset[str], bytes]:
    """``data`` with each non-empty set of the droppable kinds dropped (only the valid ones)."""
    out: dict[frozenset[str], bytes] = {}
    plain = normalised(path, data)
    if plain is not None:
        out[frozenset({COMMENTS})] = plain
    if not is_python(path, data):
        return out
    bare = without_docstrings(data)
    if bare is None:
        return out
    out[frozenset({DOCSTRINGS})] = bare
    both = normalised(path, bare) if plain is not None else None
    if both is not None:
        out[frozenset({COMMENTS, DOCSTRINGS})] = both
    elif plain is not None:
        del out[frozenset({DOCSTRINGS})]  # the two must compose: the comments unit stays
    return out


class Normalise:
    """The ``normalise`` pass (see the module docstring).

    A unit whose deletion was rejected is not proposed again until its file's content changes
    (the fixpoint would otherwise re-test it every round against a slightly different tree);
    a file's variants are computed once per content (every round reads every text file).
    """

    name: ClassVar[str] = "normalise"

    def __init__(self) -> None:
        #: (path, content digest) -> the kinds whose deletion was rejected there
        self._refused: dict[tuple[str, str], set[str]] = {}
        #: (path, content digest) -> that content's variants (the current contents only)
        self._found: dict[tuple[str, str], dict[frozenset[str], bytes]] = {}

    def run(self, problem: Problem) -> None:
        variants: dict[str, dict[frozenset[str], bytes]] = {}
        units: list[Unit] = []
        found: dict[tuple[str, str], dict[frozenset[str], bytes]] = {}
        for path in text_files(problem):
            data = problem.current[path].data
            key = (path, hashlib.sha256(data).hexdigest())
            known = self._found.get(key)
            found[key] = known if known is not None else _variants(path, data)
            kinds = sorted({k for ks in found[key] for k in ks} - self._refused.get(key, set()))
            if kinds:
                variants[path] = found[key]
                units += [(path, kind) for kind in kinds]
        self._found = found
        if not units:
            return

        def build(remaining: Sequence[Unit]) -> Tree:
            keep = set(remaining)
            dropped: dict[str, set[str]] = {}
            for unit in units:
                if unit not in keep:
                    dropped.setdefault(unit[0], set()).add(unit[1])
            tree = problem.current
            for path, kinds in dropped.items():
                if path in tree:
                    tree = tree.replace(path, variants[path][frozenset(kinds)])
            return tree

        def describe(chunk: Sequence[Unit]) -> str:
            parts = []
            for kind in (COMMENTS, DOCSTRINGS):
                paths = [path for path, k in chunk if k == kind]
                if paths:
                    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
                    parts.append(f"{kind} in {', '.join(paths[:3])}{more}")
            return "drop " + "; ".join(parts)

        for path, kind in ddmin_delete(problem, self.name, units, build, describe):
            entry = problem.current.entries.get(path)
            if entry is not None:
                key = (path, hashlib.sha256(entry.data).hexdigest())
                self._refused.setdefault(key, set()).add(kind)
