"""Java source as tokens: the lexer the Java analyses share (coverage, the member cut).

Not a parser: :func:`java_tokens` splits code into identifiers (and numbers), single
punctuation characters and one ``"`` token per string, character or text-block literal, each
with its byte offset; comments and whitespace are dropped. A file whose comment or literal
does not end gives None (the callers then leave the file alone). Non-ASCII bytes count as
identifier characters (Java allows them in names). The small readers of a member's header
(its tokens up to ``{`` or ``;``) that the Java analyses share live here too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Java's reserved words (never a declared name).
KEYWORDS = frozenset(
    [
        "abstract",
        "assert",
        "boolean",
        "break",
        "byte",
        "case",
        "catch",
        "char",
        "class",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extends",
        "final",
        "finally",
        "float",
        "for",
        "goto",
        "if",
        "implements",
        "import",
        "instanceof",
        "int",
        "interface",
        "long",
        "native",
        "new",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "short",
        "static",
        "strictfp",
        "super",
        "switch",
        "synchronized",
        "this",
        "throw",
        "throws",
        "transient",
        "try",
        "void",
        "volatile",
        "while",
    ]
)
#: The words that declare a type.
TYPE_KEYWORDS = ("class", "interface", "enum", "record")
#: A Java identifier.
IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def java_tokens(data: bytes) -> list[tuple[int, bytes]] | None:
    """The code tokens of ``data`` (identifiers, numbers, single punctuation) with their
    offsets; comments and literals are skipped (a literal counts as one ``"`` token). None
    when a comment or literal does not end."""
    out: list[tuple[int, bytes]] = []
    i, n = 0, len(data)
    while i < n:
        c = data[i : i + 1]
        if c in b" \t\r\n\f":
            i += 1
        elif data.startswith(b"//", i):
            end = data.find(b"\n", i)
            i = n if end < 0 else end + 1
        elif data.startswith(b"/*", i):
            end = data.find(b"*/", i + 2)
            if end < 0:
                return None
            i = end + 2
        elif data.startswith(b'"""', i):
            end = i + 3
            while True:
                end = data.find(b'"""', end)
                if end < 0:
                    return None
                if not _escaped(data, end):
                    break
                end += 1
            out.append((i, b'"'))
            i = end + 3
        elif c in (b'"', b"'"):
            end = i + 1
            while end < n and data[end : end + 1] != c:
                if data[end : end + 1] == b"\n":
                    return None
                end += 2 if data[end : end + 1] == b"\\" else 1
            if end >= n:
                return None
            out.append((i, b'"'))
            i = end + 1
        elif c.isalnum() or c in (b"_", b"$") or c[0] >= 0x80:
            end = i + 1
            while end < n and (
                data[end : end + 1].isalnum() or data[end] in b"_$" or data[end] >= 0x80
            ):
                end += 1
            out.append((i, data[i:end]))
            i = end
        else:
            out.append((i, c))
            i += 1
    return out


def _escaped(data: bytes, at: int) -> bool:
    slashes = 0
    while at - slashes - 1 >= 0 and data[at - slashes - 1] == ord("\\"):
        slashes += 1
    return slashes % 2 == 1


# -- a member's header (its tokens up to its ``{`` or ``;``) ------------------------------------


def assigns(header: Sequence[bytes]) -> bool:
    """Is there an ``=`` outside parentheses and brackets (a field's initializer, not an
    annotation's argument)?"""
    depth = 0
    for word in header:
        if word in (b"(", b"["):
            depth += 1
        elif word in (b")", b"]"):
            depth -= 1
        elif word == b"=" and depth == 0:
            return True
    return False


def params_start(header: Sequence[bytes]) -> int | None:
    """Index of the ``(`` of the parameter list: the last top-level parenthesis group,
    before an optional ``throws`` clause."""
    end = len(header)
    if b"throws" in header:
        end = len(header) - 1 - list(reversed(header)).index(b"throws")
    if end == 0 or header[end - 1] != b")":
        return None
    depth = 0
    for k in range(end - 1, -1, -1):
        if header[k] == b")":
            depth += 1
        elif header[k] == b"(":
            depth -= 1
            if depth == 0:
                return k
    return None


def parameters(header: Sequence[bytes]) -> tuple[int, bool]:
    """(parameter count, whether the last is variable: ``String... rest``) of a method's
    header; (-1, False) when it has no parameter list."""
    start = params_start(header)
    if start is None:
        return -1, False
    depth, count, any_token, dots = 0, 1, False, 0
    varargs = False
    for word in header[start + 1 :]:
        if word in (b"(", b"<", b"["):
            depth += 1
        elif word in (b")", b">", b"]"):
            if depth == 0:
                break
            depth -= 1
        elif word == b"," and depth == 0:
            count += 1
            varargs = False
        if word == b".":
            dots += 1
            varargs = varargs or dots >= 3
        else:
            dots = 0
        any_token = True
    return (count if any_token else 0), varargs


__all__ = [
    "IDENTIFIER",
    "KEYWORDS",
    "TYPE_KEYWORDS",
    "assigns",
    "java_tokens",
    "parameters",
    "params_start",
]
