"""Rust source as the reference graph reads it: the code without its comments and literals, the
``mod`` declarations (with their ``#[path]`` attributes and enclosing inline modules), the
``include!``-family paths and the string literals; and the one text edit the ``refs`` pass
proposes, a ``mod name;`` declaration removed with the ``use`` items of the same file that
name the module.

:func:`lex` masks the text: comments (``//``, nested ``/* */``) become blanks and every string
literal (``"…"``, ``b"…"``, ``c"…"``, raw ``r#"…"#``) a ``"`` … ``"`` of blanks, with its value
kept by offset; a char literal (``'{'``) becomes blanks, a lifetime stays. Offsets and newlines
are unchanged, so a position in the masked text is the same position in the source. So a
``// mod x;`` or a ``"mod x;"`` is no declaration, and a brace in a literal opens no block.
Everything is linear in the text's length and a pure function of it (memoised).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_START = re.compile(r"""//|/\*|['"]""")
_BLOCK = re.compile(r"/\*|\*/")
_STRING_BODY = re.compile(r'(?:\\.|[^"\\])*"', re.S)
_CHAR = re.compile(r"'(?:[^\\'\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F_]{1,8}\}|[nrt\\0'\"]))'")
_NOT_NEWLINE = re.compile(r"[^\n]")
_ESCAPE = re.compile(r"\\(?:u\{([0-9a-fA-F_]{1,8})\}|x([0-9a-fA-F]{2})|(.))", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "\n": ""}

#: ``mod name;`` / ``mod name {`` with its visibility (attributes are found backwards).
_DECL = re.compile(r"mod\s+(?:r#)?([A-Za-z_]\w*)\s*([;{])|[{}]")
_USE = re.compile(r"use\s+([^;]{1,4096}?)\s*;")
_PATH_ATTR = re.compile(r"\bpath\s*=\s*\"")
_INCLUDE = re.compile(r"include(?:_str|_bytes)?\s*!\s*[(\[{]")
_MANIFEST_DIR = re.compile(r"env\s*!\s*[(\[{]\s*\"")
_MAIN = re.compile(r"fn\s+main\s*\(")
_LITERAL_MAX = 300
#: The longest attribute (``#[…]``) read before a declaration, and macro call read for paths.
_ATTRIBUTE_MAX = 4096
_MACRO_MAX = 4096


@dataclass(frozen=True)
class Lexed:
    """The masked code and the value of each string literal, keyed by its offset."""

    code: str
    values: dict[int, str]


@dataclass(frozen=True)
class ModDecl:
    """One ``mod name;`` (out of line) or ``mod name {`` (inline) declaration.

    ``start``/``end``: the span a removal takes (its attributes, doc comments and the blanks
    before it, up to the ``;``); ``paths``: its ``#[path]`` values (``cfg_attr`` ones too);
    ``inline``: the enclosing inline modules, outermost first, each with its ``#[path]``s.
    """

    name: str
    inline_body: bool
    start: int
    end: int
    paths: tuple[str, ...]
    inline: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Scan:
    mods: tuple[ModDecl, ...]
    #: ``include!``/``include_str!``/``include_bytes!`` paths: (literal, after
    #: ``env!("CARGO_MANIFEST_DIR")``).
    includes: tuple[tuple[str, bool], ...]
    #: The other string literals that could be paths (short, no blank).
    literals: tuple[str, ...]
    defines_main: bool


def _unescape(body: str) -> str:
    def repl(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2)
        if code:
            try:
                return chr(int(code.replace("_", ""), 16))
            except (ValueError, OverflowError):
                return ""
        char = m.group(3)
        return _SIMPLE_ESCAPES.get(char, char)

    return _ESCAPE.sub(repl, body) if "\\" in body else body


def _blank(text: str) -> str:
    return _NOT_NEWLINE.sub(" ", text) if "\n" in text else " " * len(text)


def _block_end(text: str, start: int) -> int:
    """The end of the (nested) block comment opening at ``start``; unclosed: the text's end."""
    close = text.find("*/", start + 2)
    if close < 0:
        return len(text)
    if text.find("/*", start + 2, close) < 0:
        return close + 2
    depth = 0
    for m in _BLOCK.finditer(text, start):
        depth += 1 if m.group(0) == "/*" else -1
        if depth == 0:
            return m.end()
    return len(text)


@lru_cache(maxsize=512)
def lex(text: str) -> Lexed:
    out: list[str] = []
    values: dict[int, str] = {}
    pos, n = 0, len(text)
    while pos < n:
        m = _START.search(text, pos)
        if m is None:
            break
        s = m.start()
        out.append(text[pos:s])
        token = m.group(0)
        if token == "//":
            e = text.find("\n", s)
            e = n if e < 0 else e
            out.append(" " * (e - s))
        elif token == "/*":
            e = _block_end(text, s)
            out.append(_blank(text[s:e]))
        elif token == "'":
            c = _CHAR.match(text, s)
            e = c.end() if c else s + 1
            out.append(_blank(text[s:e]) if c else "'")
        else:
            start, hashes = _prefix(text, s, pos)
            del out[-1]
            out.append(text[pos:start])
            e, values[start] = _literal(text, s + 1, hashes)
            masked = '"' + _blank(text[start + 1 : e - 1]) + '"'
            out.append(masked if e - start >= 2 else " " * (e - start))
        pos = e
    out.append(text[pos:])
    return Lexed("".join(out), values)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _prefix(text: str, quote: int, floor: int) -> tuple[int, str | None]:
    """(where the literal whose ``"`` is at ``quote`` starts, its raw ``#``s or None when it is
    not raw): ``b``/``c`` and ``r#…`` prefixes, never before ``floor``."""
    i = quote
    while i > floor and text[i - 1] == "#" and quote - i < 256:
        i -= 1
    if i > floor and text[i - 1] == "r":
        j = i - 1
        if j > floor and text[j - 1] in "bc":
            j -= 1
        if j == 0 or not _is_word(text[j - 1]):
            return j, text[i:quote]
    if (
        i == quote
        and quote > floor
        and text[quote - 1] in "bc"
        and (quote == 1 or not _is_word(text[quote - 2]))
    ):
        return quote - 1, None
    return quote, None


def _literal(text: str, body: int, hashes: str | None) -> tuple[int, str]:
    """(end, value) of the string literal whose body starts at ``body`` (unterminated: to
    the end of the text)."""
    if hashes is not None:
        close = '"' + hashes
        e = text.find(close, body)
        if e < 0:
            return len(text), text[body:]
        return e + len(close), text[body:e]
    m = _STRING_BODY.match(text, body)
    if m is None:
        return len(text), _unescape(text[body:])
    return m.end(), _unescape(text[body : m.end() - 1])


def _opening(code: str, close: int) -> int:
    """The ``[`` that matches the ``]`` at ``close`` (at most ``_ATTRIBUTE_MAX`` back), or -1."""
    floor = max(0, close - _ATTRIBUTE_MAX)
    depth, i = 1, close
    while True:
        j = code.rfind("[", floor, i)
        if j < 0:
            return -1
        depth += code.count("]", j + 1, i) - 1
        if depth == 0:
            return j
        i = j


def _attributes_before(code: str, pos: int) -> int:
    """The start of the outer attributes (``#[…]``) right before ``pos`` in masked code."""
    start = pos
    while True:
        i = start - 1
        while i >= 0 and code[i].isspace():
            i -= 1
        if i < 0 or code[i] != "]":
            return start
        i = _opening(code, i)
        j = i - 1
        while j >= 0 and code[j].isspace():
            j -= 1
        if i < 0 or j < 0 or code[j] != "#":
            return start
        start = j


def item_span(code: str, pos: int, end: int) -> tuple[int, int]:
    """The span a removal of the item at ``pos``..``end`` takes: its attributes, the blanks
    (comments, doc comments) back to the previous token, and, when it stands on lines of its
    own, the rest of its last line (a trailing comment) with the line break."""
    start = _attributes_before(code, pos)
    i = start
    while i > 0 and code[i - 1] in " \t\r\n":
        i -= 1
    newline = code.find("\n", i, start)
    if i > 0 and newline < 0:
        return start, end
    start = newline + 1 if newline >= 0 else 0
    after = code.find("\n", end, end + 256)
    if after >= 0 and not code[end:after].strip():
        return start, after + 1
    return start, end


def _word_before(code: str, pos: int) -> tuple[int, str]:
    """(start, text) of the word that ends right before ``pos``, blanks skipped."""
    i = pos
    while i > 0 and code[i - 1].isspace():
        i -= 1
    j = i
    while j > 0 and i - j < 16 and _is_word(code[j - 1]):
        j -= 1
    return j, code[j:i]


def _keyword_start(code: str, pos: int) -> int | None:
    """Where the item whose keyword (``mod``, ``use``) is at ``pos`` starts, with its
    visibility (``pub``, ``pub(…)``) and ``unsafe``; None when the keyword ends a longer word."""
    if pos > 0 and (_is_word(code[pos - 1]) or code[pos - 1] == "$"):
        return None
    start = pos
    at, word = _word_before(code, start)
    if word == "unsafe":
        start = at
        at, word = _word_before(code, start)
    if word == "pub":
        return at
    i = start
    while i > 0 and code[i - 1].isspace():
        i -= 1
    if i > 0 and code[i - 1] == ")":
        opening = code.rfind("(", max(0, i - 256), i - 1)
        if opening >= 0:
            at, word = _word_before(code, opening)
            if word == "pub":
                return at
    return start


def _attr_paths(code: str, values: dict[int, str], start: int, end: int) -> tuple[str, ...]:
    return tuple(
        values[m.end() - 1] for m in _PATH_ATTR.finditer(code, start, end) if m.end() - 1 in values
    )


def _mods(lexed: Lexed) -> tuple[ModDecl, ...]:
    code, values = lexed.code, lexed.values
    found: list[ModDecl] = []
    stack: list[tuple[str, tuple[str, ...]] | None] = []
    for m in _DECL.finditer(code):
        token = m.group(0)
        if token == "{":
            stack.append(None)
            continue
        if token == "}":
            if stack:
                stack.pop()
            continue
        body = m.group(2) == "{"
        begin = _keyword_start(code, m.start())
        if begin is None:  # ``mod`` ends a longer word
            if body:
                stack.append(None)
            continue
        attrs = _attributes_before(code, begin)
        paths = _attr_paths(code, values, attrs, begin)
        inline = tuple(frame for frame in stack if frame is not None)
        start, end = item_span(code, begin, m.end()) if not body else (begin, m.end())
        found.append(ModDecl(m.group(1), body, start, end, paths, inline))
        if body:
            stack.append((m.group(1), paths))
    return tuple(found)


def _macro_literals(lexed: Lexed, at: int) -> tuple[list[tuple[str, bool]], int]:
    """The string literals in the macro call whose opening bracket ends at ``at`` (each with
    whether ``env!("CARGO_MANIFEST_DIR")`` came before it), and where the call ends."""
    code, values = lexed.code, lexed.values
    depth, i = 1, at
    out: list[tuple[str, bool]] = []
    manifest_dir = False
    while i < len(code) and depth and i - at < _MACRO_MAX:
        ch = code[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == '"' and i in values:
            env = _MANIFEST_DIR.search(code, max(at, i - 16), i + 1)
            if env is not None and env.end() - 1 == i:
                manifest_dir = values[i] == "CARGO_MANIFEST_DIR"
            else:
                out.append((values[i], manifest_dir))
            close = code.find('"', i + 1)
            i = len(code) if close < 0 else close
        i += 1
    return out, i


@lru_cache(maxsize=4096)
def scan(text: str) -> Scan:
    lexed = lex(text)
    code = lexed.code
    includes: list[tuple[str, bool]] = []
    read = 0  # a macro call inside one already read is not read again
    for m in _INCLUDE.finditer(code):
        if m.start() >= read and _keyword_start(code, m.start()) is not None:
            found, read = _macro_literals(lexed, m.end())
            includes += found
    mods = _mods(lexed)
    used = {p for d in mods for p in d.paths} | {v for v, _ in includes}
    literals = tuple(
        v
        for v in lexed.values.values()
        if 0 < len(v) <= _LITERAL_MAX and v not in used and not any(c.isspace() for c in v)
    )
    main = any(_keyword_start(code, m.start()) is not None for m in _MAIN.finditer(code))
    return Scan(mods, tuple(includes), literals, main)


def _use_names(path: str, name: str, crate_root: bool) -> bool:
    """Does the ``use`` path (blanks removed) start at the module ``name`` of this file?"""
    heads = [name, f"self::{name}"] + ([f"crate::{name}"] if crate_root else [])
    return any(path == h or path.startswith(h + "::") for h in heads)


def without_module(text: str, decl: ModDecl, crate_root: bool) -> str:
    """``text`` without ``decl`` and without the ``use`` items (no ``{…}`` groups) whose path
    starts at that module: ``use name::…``, ``use self::name::…``, ``use crate::name::…``
    (``crate`` only where this file is a crate root)."""
    code = lex(text).code
    spans = [(decl.start, decl.end)]
    for m in _USE.finditer(code):
        begin = _keyword_start(code, m.start())
        path = re.sub(r"\s+", "", m.group(1))
        if begin is not None and _use_names(path, decl.name, crate_root):
            spans.append(item_span(code, begin, m.end()))
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:
            continue
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "".join(out)
