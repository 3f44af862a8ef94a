"""Text helpers shared by the language scanners: comment stripping, tokens, path resolution.

Everything here is a pure function of its arguments. Resolution helpers take the set of file
paths of a tree (relative POSIX paths) and never look at the disk.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Set

#: C-like comments and string/char literals (text blocks first). Strings are kept, comments
#: become one space, so that names inside strings (reflection, resources) still count.
_C_LIKE = re.compile(
    r'//[^\n]*|/\*.*?\*/|"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
    re.S,
)

_SEPARATORS = re.compile(r"""[\s"'`,;=()\[\]{}<>|&]+""")
_VARIABLE = re.compile(r"\$\([^)]*\)/?|\$\{[^}]*\}/?|@[A-Za-z_]+@/?")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def strip_c_comments(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments blanked; string literals kept."""

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        return " " if s.startswith("/") else s

    return _C_LIKE.sub(repl, text)


def strip_c_literals(text: str) -> str:
    """``text`` with comments blanked and string/char literals emptied (``""``): the code alone,
    where a word is a name and not a word of a message."""

    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        if s.startswith("/"):
            return " "
        return "''" if s.startswith("'") else '""'

    return _C_LIKE.sub(repl, text)


def path_tokens(text: str) -> list[str]:
    """Whitespace/punctuation separated tokens with make/shell variables removed."""
    out: list[str] = []
    for raw in _SEPARATORS.split(text):
        token = _VARIABLE.sub("", raw).strip(":")
        if token and len(token) < 512:
            out.append(token)
    return out


def dotted_names(text: str) -> list[str]:
    """Every ``a.b.c`` identifier chain (Java class names, Python module names) in ``text``."""
    return _DOTTED.findall(text)


def parent(path: str) -> str:
    return path.rpartition("/")[0]


def ancestors(path: str) -> list[str]:
    """The directories above ``path``, innermost first, ending with the root ``""``."""
    out: list[str] = []
    d = parent(path)
    while True:
        out.append(d)
        if not d:
            return out
        d = parent(d)


def join(base: str, rel: str) -> str | None:
    """``base/rel`` normalised, or None when it leaves the tree."""
    if rel.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(base, rel)) if base else posixpath.normpath(rel)
    if joined == ".":
        return ""
    if joined.startswith("../") or joined == "..":
        return None
    return joined


def resolve_token(token: str, base: str, files: Set[str]) -> set[str]:
    """Files ``token`` names, relative to ``base`` or to the root."""
    found: set[str] = set()
    for d in (base, ""):
        p = join(d, token)
        if p and p in files:
            found.add(p)
    return found


def under(directory: str, files: Iterable[str]) -> list[str]:
    prefix = directory + "/" if directory else ""
    return [f for f in files if f.startswith(prefix)]


def without_spans(data: bytes, spans: Iterable[tuple[int, int]]) -> bytes:
    """``data`` with ``spans`` deleted, each with the blank rest of its lines (a member on its
    own lines leaves no empty line behind)."""
    out = bytearray()
    at = 0
    for start, end in sorted(spans):
        line_start = data.rfind(b"\n", 0, start) + 1
        if not data[line_start:start].strip():
            start = line_start
        line_end = data.find(b"\n", end)
        if line_end >= 0 and not data[end:line_end].strip():
            end = line_end + 1
        start = max(start, at)
        out += data[at:start]
        at = max(at, end)
    out += data[at:]
    return bytes(out)
