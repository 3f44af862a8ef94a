"""A light JavaScript/TypeScript lexer: bracket pairs outside strings, comments, regular
expression literals and template literals.

``brackets.lex`` handles C-like files, where ``/`` is always an operator; in JavaScript a ``/``
where an expression may start opens a regular expression literal (``/^\\{/``, ``/[)]/``), whose
brackets and quotes do not count. The rule used here is the usual one: after an identifier, a
number, a string, ``)`` or ``]`` a ``/`` divides; after an operator, ``(``, ``[``, ``{``, ``}``,
``,``, ``;``, the start of the file or a keyword that takes an expression (``return``,
``typeof``, ``case``, ...) it starts a regular expression (if it ends on the same line;
otherwise it is taken as an operator). Template literals are opaque as a whole; the code in
their ``${...}`` substitutions is scanned (strings, nested templates, brackets) only to find
where they end. A file that does not balance, or has an unterminated string, comment or
template, gives None (the passes then leave it alone, or use it as a syntax guard: a candidate
of a file that lexes is proposed only if it lexes too -- an unbalanced JavaScript file never
parses, whatever the predicate).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: File suffixes lexed as JavaScript / TypeScript.
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")

#: Keywords after which an expression (so a regular expression literal) may start.
_EXPRESSION_KEYWORDS = frozenset(
    b"return typeof instanceof in of new delete void throw case do else yield await".split()
)

_TOKEN = re.compile(
    rb"""(?P<ws>[ \t\r\n\f\v]+)
    |(?P<line>//[^\n]*)
    |(?P<hashbang>\#![^\n]*)
    |(?P<block>/\*.*?\*/)
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<word>[A-Za-z_$\x80-\xff][\w$\x80-\xff]*)
    |(?P<number>\.?[0-9][\w.]*)
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<tick>`)
    |(?P<slash>/)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_REGEX = re.compile(rb"/(?![*/])(?:[^/\\\[\n]|\\[^\n]|\[(?:[^\]\\\n]|\\[^\n])*\])+/[\w$]*")
_TEMPLATE_TEXT = re.compile(rb"(?:[^`\\$]|\\.|\$(?!\{))*", re.DOTALL)
_MATCH = {ord(")"): ord("("), ord("]"): ord("["), ord("}"): ord("{")}


@dataclass(slots=True)
class Lexed:
    """Bracket pairs (open -> close) and opaque spans (strings, comments, regular expressions,
    templates: start -> end, exclusive) of one file version."""

    pairs: dict[int, int] = field(default_factory=dict)
    opaque: dict[int, int] = field(default_factory=dict)
    comments: list[tuple[int, int]] = field(default_factory=list)


class _Unbalanced(Exception):
    pass


def lex(data: bytes) -> Lexed | None:
    """The bracket pairs and opaque spans of JavaScript ``data``; None when it does not lex."""
    out = Lexed()
    try:
        _scan(data, 0, out, nested=False)
    except (_Unbalanced, RecursionError):
        return None
    return out


def _scan(data: bytes, i: int, out: Lexed | None, *, nested: bool) -> int:
    """Scan code from ``i``: to the end (``nested`` False), or to the ``}`` that closes a
    template substitution (returns its position). Records into ``out`` when given."""
    stack: list[int] = []
    expression = True  # may a regular expression literal start here?
    n = len(data)
    while i < n:
        m = _TOKEN.match(data, i)
        if m is None:  # pragma: no cover - ``other`` matches any byte
            raise _Unbalanced
        kind, end = m.lastgroup, m.end()
        if kind == "ws":
            pass
        elif kind == "hashbang" and i == 0:
            _opaque(out, i, end)  # opaque, but not a comment (normalise must keep it)
        elif kind in ("line", "block"):
            if out is not None:
                out.opaque[i] = end
                out.comments.append((i, end))
        elif kind == "string":
            _opaque(out, i, end)
            expression = False
        elif kind == "tick":
            end = _template_end(data, i)
            _opaque(out, i, end)
            expression = False
        elif kind == "slash" and expression and (r := _REGEX.match(data, i)) is not None:
            end = r.end()
            _opaque(out, i, end)
            expression = False
        elif kind == "open":
            stack.append(i)
            expression = True
        elif kind == "close":
            c = data[i]
            if not stack:
                if nested and c == ord("}"):
                    return i
                raise _Unbalanced
            o = stack.pop()
            if data[o] != _MATCH[c]:
                raise _Unbalanced
            if out is not None:
                out.pairs[o] = i
            expression = c == ord("}")
        elif kind == "word":
            expression = m.group() in _EXPRESSION_KEYWORDS
        elif kind == "number":
            expression = False
        else:  # an operator or punctuation (an unterminated quote or comment lands here)
            if data[i] in b"\"'" or data.startswith(b"/*", i):
                raise _Unbalanced
            expression = True
        i = end
    if nested or stack:
        raise _Unbalanced
    return n


def _opaque(out: Lexed | None, start: int, end: int) -> None:
    if out is not None:
        out.opaque[start] = end


def _template_end(data: bytes, i: int) -> int:
    """End (exclusive) of the template literal whose backtick is at ``i``."""
    j = i + 1
    n = len(data)
    while True:
        j = _TEMPLATE_TEXT.match(data, j).end()  # type: ignore[union-attr]
        if j >= n:
            raise _Unbalanced
        if data[j] == ord("`"):
            return j + 1
        j = _scan(data, j + 2, None, nested=True) + 1  # ``${``: code up to its ``}``


def is_js(path: str) -> bool:
    return path.endswith(JS_SUFFIXES)


__all__ = ["JS_SUFFIXES", "Lexed", "is_js", "lex"]
