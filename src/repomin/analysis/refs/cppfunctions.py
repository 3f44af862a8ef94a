"""C++ function definitions nothing reachable names.

The C member cut (:mod:`repomin.analysis.refs.cfunctions`) reads C files into items and keeps
what live code names; a file with C++ in it (``::``, ``namespace``, ``template``, ``class``)
is only mentions there. This module reads C++ files (``.cc``, ``.cpp``, ``.cxx``, ``.hpp``,
… and a ``.h`` holding C++) into the same :class:`~repomin.analysis.refs.cfunctions.CFile`,
with the same lexer (comments dropped, each literal one token, preprocessor lines apart, the
first branch of every ``#if``), so that :func:`~repomin.analysis.refs.cfunctions.dead_items`
walks C and C++ files together. Its items are **function definitions** only, at namespace
scope, inside ``namespace`` and ``extern "C"`` blocks and inside class, struct and union
bodies, nested at any depth (a header-only library's member functions are where its code is):

* a definition is a head with a parameter list -- the last parenthesised group before any
  constructor initializer list, not one after ``decltype``, ``sizeof``, ``noexcept``,
  ``throw``, ``alignas`` or an attribute -- followed only by qualifiers (``const``,
  ``noexcept``, ``override``, ``&``, a trailing return type, an initializer list whose braces
  follow a name) and then its body ``{...}``; the item runs from the head's first token
  (``template <...>`` included; a macro alone on its line before it, such as RapidJSON's
  ``RAPIDJSON_NAMESPACE_BEGIN``, is not part of it) to the body's ``}``;
* its name is the word before the parameter list (``Writer::Flush`` is ``Flush``: a word
  names every overload and every class's member of that name);
* pinned, never cut: ``main``, constructors (the class's own name), destructors (``~``),
  operators (``operator`` in the head; the language calls them without their name) and the
  definitions in a ``#define`` (they are not code here).

Everything else -- class heads, data members, member declarations, ``using``, typedefs,
enumerators, variable initializers -- is live code: its words keep the definitions they
name, so a function declared in its class and defined outside it stays (the declaration's
words are live). Implicit calls the words do not show (a range ``for`` calls ``begin``, a
standard container calls ``swap`` or ``hash``, a virtual call through a base's name) are the
oracle's to find: a rejected cut is split by item, as the C cut's is. A file this reader
cannot follow (a comment or literal that does not end, unbalanced brackets, a raw string
literal, more than :data:`~repomin.analysis.refs.cfunctions.MAX_PARSE_BYTES`) is mentions
only, as in the C cut.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from repomin.analysis.refs.cfunctions import (
    CXX_TOKENS,
    LOADED,
    MAX_PARSE_BYTES,
    CFile,
    Item,
    Token,
    TokenView,
    lex,
    match_brackets,
    mentions_only,
)

#: C++ source and header suffixes (a ``.h`` file is read as C++ when it holds C++).
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp")
#: Words before a parenthesised group that is not a parameter list.
_NOT_HEAD = frozenset(
    b"""decltype sizeof alignof alignas noexcept throw __attribute__ __attribute __declspec
    static_assert if for while switch catch return typeid new delete co_await""".split()
)
#: Words a definition's tail may hold between its parameter list and its body.
_QUALIFIERS = frozenset(
    b"const volatile noexcept override final throw mutable try & && * requires".split()
)
#: Words of a definition's tail that take arguments.
_TAIL_CALLS = frozenset({b"noexcept", b"throw", b"requires", b"alignas"})
_CLASS_KEYS = frozenset({b"class", b"struct", b"union"})
_ACCESS = frozenset({b"public", b"private", b"protected"})
#: A macro alone on its line before a definition (``RAPIDJSON_NAMESPACE_BEGIN``).
_MACRO = re.compile(rb"[A-Z_][A-Z0-9_]{2,}")
#: A raw string literal (``R"(...)"``): the shared lexer does not read them.
_RAW_STRING = re.compile(rb'(?:\b|(?<=[uUL8]))R"[^\s()\\]{0,16}\(')


def _tail_word(t: bytes) -> bool:
    """An attribute or a macro in a definition's tail (``__attribute__``,
    ``_GLIBCXX_NOEXCEPT``, ``RAPIDJSON_NOEXCEPT``)."""
    return t.startswith(b"__") or _MACRO.fullmatch(t) is not None  # _MACRO allows a leading _


def is_cxx(path: str, data: bytes) -> bool:
    """Is ``path`` a C++ file: a C++ suffix, or a ``.h``/``.inc`` file with C++ in its code."""
    lower = path.lower()
    if lower.endswith(CXX_SUFFIXES):
        return True
    return lower.endswith((".h", ".inc")) and _holds_cxx(data)


@lru_cache(maxsize=4096)
def _holds_cxx(data: bytes) -> bool:
    """C++ tokens (``::``, ``namespace``, ``template``, ``class``) in the code of ``data``
    (the refs pass asks again for every unchanged header whenever a C or C++ file changed)."""
    if len(data) > MAX_PARSE_BYTES:
        return False
    lexed = lex(data)
    return lexed is not None and any(text in CXX_TOKENS for _, text in lexed.code)


@lru_cache(maxsize=4096)
def parse(data: bytes) -> CFile:
    """The function definitions of a C++ file (see the module docstring), with its words;
    mentions only when this reader cannot follow it."""
    if len(data) > MAX_PARSE_BYTES or _RAW_STRING.search(data):
        return mentions_only(data)
    lexed = lex(data)
    if lexed is None:
        return mentions_only(data)
    match = match_brackets(lexed.code)
    if match is None:
        return mentions_only(data)
    items = _Reader(lexed.code, match, data).items()
    macros = tuple((name, tuple(body)) for name, body in lexed.macros)
    return CFile(tuple(lexed.words), tuple(items), frozenset(lexed.pasted), frozenset(), macros)


class _Segment:
    """What one declaration or definition read so far says about itself."""

    __slots__ = (
        "angle",
        "assigned",
        "class_at",
        "colon",
        "enum",
        "groups",
        "last",
        "namespace",
        "operator",
    )

    def __init__(self) -> None:
        self.groups: list[int] = []  # top-level '(' before an initializer list
        self.angle = 0  # template argument lists open
        self.assigned = False  # a top-level '=': an initializer (or = default, = 0)
        self.colon = False  # a constructor's initializer list
        self.operator = False  # after 'operator', before its parameter list
        self.enum = self.namespace = False
        #: The groups before the last class key (-1: none): a class head has none after it.
        self.class_at = -1
        self.last = b""

    @property
    def class_key(self) -> bool:
        """A class, struct or union head (``class X : public Y<T> {``), not a function that
        returns one (``struct tm f() {``: a parameter list after the key)."""
        return self.class_at == len(self.groups)

    def read(self, t: bytes, after_word: bool) -> None:
        """One top-level token that is not a bracket, ``{`` or the ending ``;``."""
        if self.operator:
            pass  # an operator's symbols: operator=, operator<, operator>>
        elif t == b"operator":
            self.operator = True
        elif t == b"<" and (self.last == b"template" or after_word) and not self.assigned:
            self.angle += 1
        elif t == b">" and self.angle > 0:
            self.angle -= 1
        elif self.angle == 0:
            if t == b"=":
                self.assigned = True
            elif t == b":" and self.groups and not self.assigned:
                self.colon = True  # (a bit field's ':' has no group before it)
            elif t in _CLASS_KEYS:
                self.class_at = len(self.groups)
            elif t == b"enum":
                self.enum = True
            elif t == b"namespace":
                self.namespace = True
        self.last = t


class _Reader(TokenView):
    """Reads a scope's tokens into definitions, entering namespaces and class bodies."""

    def __init__(self, code: Sequence[Token], match: Mapping[int, int], data: bytes) -> None:
        super().__init__(code, match)
        self.data = data
        self.out: list[Item] = []

    def items(self) -> list[Item]:
        self.scope(0, len(self.code), None)
        self.out.sort(key=lambda item: item.start)
        return self.out

    def scope(self, lo: int, hi: int, owner: bytes | None) -> None:
        """The definitions among tokens ``[lo, hi)``: a namespace's, or the body of the class
        named ``owner``."""
        k = lo
        while k < hi:
            t = self.text(k)
            if t == b";":
                k += 1
            elif t in _ACCESS and self.text(k + 1) == b":":
                k += 2  # public:
            else:
                k = self.segment(k, hi, owner)

    def segment(self, start: int, hi: int, owner: bytes | None) -> int:
        """Read one declaration or definition from ``start``; the index after it."""
        state = _Segment()
        k = start
        while k < hi:
            t = self.text(k)
            if t == b";" and state.angle == 0:
                return k + 1
            if t == b"(" or t == b"[":
                if t == b"(" and state.angle == 0 and not state.colon and not state.assigned:
                    state.groups.append(k)
                state.operator = False  # operator() and operator[] end with their brackets
                k = self.match[k] + 1
                continue
            if t == b"{":
                body = self.brace(start, k, owner, state)
                if body is not None:
                    return body
                k = self.match[k] + 1
                continue
            state.read(t, self.is_word(k - 1))
            k += 1
        return hi

    def brace(self, start: int, k: int, owner: bytes | None, state: _Segment) -> int | None:
        """A ``{`` at token ``k`` of the segment from ``start``: the index after the segment
        when the brace ends it (a definition, a namespace), None when the segment goes on
        after the braces (an initializer, a class body and its declarators)."""
        close = self.match[k]
        before = self.text(k - 1)
        if state.assigned:
            return None  # an initializer: = {...}, a lambda's body
        if state.namespace or (before == b'"' and self.text(k - 2) == b"extern"):
            self.scope(k + 1, close, None)
            return close + 1
        if state.enum:
            return None
        if state.class_key:
            self.scope(k + 1, close, self.class_name(start, k))
            return None  # the declarators after the body, to the ';'
        head = self.head(start, state.groups)
        if head is None:
            return close + 1 if before == b")" else None
        if state.colon and (self.is_word(k - 1) or before == b">"):
            return None  # a member's brace initializer in the initializer list
        if not state.colon and not self.tail_ok(self.match[head] + 1, k):
            return close + 1  # a body after a head this reader does not follow: no item
        close = self.handlers(close)
        self.definition(start, head, close, owner)
        return close + 1

    def handlers(self, close: int) -> int:
        """The last ``}`` of a function-try-block's ``catch (...) {...}`` handlers after the
        body that ends at ``close`` (``close`` itself when none follow)."""
        while self.text(close + 1) == b"catch" and self.text(close + 2) == b"(":
            body = self.match[close + 2] + 1
            if self.text(body) != b"{":
                break
            close = self.match[body]
        return close

    def head(self, start: int, groups: Sequence[int]) -> int | None:
        """The parameter list among a segment's top-level groups: the last one after a name
        (or after an operator's symbol)."""
        for g in reversed(groups):
            before = self.text(g - 1)
            if before in _NOT_HEAD:
                continue
            if self.is_word(g - 1) and before not in _CLASS_KEYS:
                return g
            if any(self.text(i) == b"operator" for i in range(start, g)):
                return g
            return None
        return None

    def tail_ok(self, lo: int, hi: int) -> bool:
        """Only qualifiers (and a trailing return type) between a parameter list and a body:
        ``const``, ``noexcept(...)``, ``override``, ``&``, an attribute or a macro such as
        ``_GLIBCXX_NOEXCEPT`` or ``RAPIDJSON_NOEXCEPT``, with or without arguments."""
        k = lo
        while k < hi:
            t = self.text(k)
            if t == b"-" and self.text(k + 1) == b">":
                return True  # -> a trailing return type, to the body
            if t == b"(":
                before = self.text(k - 1)
                if before not in _TAIL_CALLS and not _tail_word(before):
                    return False
                k = self.match[k] + 1
                continue
            if t != b"[" and t not in _QUALIFIERS and not _tail_word(t):
                return False
            k = self.match[k] + 1 if t == b"[" else k + 1  # [[nodiscard]]
        return True

    def class_name(self, start: int, brace: int) -> bytes | None:
        """The name after a class key, if any (``class RAPIDJSON_EXPORT X : public Y {``)."""
        name: bytes | None = None
        k = start
        while k < brace:
            t = self.text(k)
            if t in _CLASS_KEYS:
                name = None
                j = k + 1
                while j < brace and self.is_word(j) and self.text(j) not in _ACCESS:
                    name = self.text(j)
                    j += 1
            elif t == b":" and name is not None:
                break
            k = self.match[k] + 1 if t in (b"(", b"[") else k + 1
        return name

    def definition(self, start: int, head: int, close: int, owner: bytes | None) -> None:
        name = self.text(head - 1)
        heads = {self.text(i) for i in range(start, head)}
        pinned = (
            b"operator" in heads
            or self.text(head - 2) == b"~"
            or (owner is not None and name == owner)
            or (self.text(head - 2) == b"::" and self.text(head - 3) == name)
            or LOADED.fullmatch(name.decode("utf-8", "replace")) is not None
        )
        first = start
        while first < head - 1:
            after = self._macro_line(first)
            if after is None or after >= head - 1:
                break
            first = after
        words = tuple(
            self.text(i).decode("utf-8", "replace")
            for i in range(first, head - 1)
            if self.is_word(i)
        )
        at = self.code[first][0]
        end = self.code[close][0] + 1
        label = name.decode("utf-8", "replace") if self.is_word(head - 1) else "operator"
        offset = self.code[head - 1][0]
        self.out.append(Item(at, end, "function", (label,), pinned, (offset,), words))

    def _macro_line(self, k: int) -> int | None:
        """The index after a macro use that starts at token ``k`` and ends its line (a word
        alone, or a word and its arguments: ``RAPIDJSON_DIAG_OFF(effc++)``), None if there is
        none: it is not part of the definition after it."""
        if not _MACRO.fullmatch(self.text(k)):
            return None
        last = self.match[k + 1] if self.text(k + 1) == b"(" else k
        if last + 1 >= len(self.code):
            return None
        gap = self.data[self.code[last][0] : self.code[last + 1][0]]
        return last + 1 if b"\n" in gap else None


__all__: Sequence[str] = ("CXX_SUFFIXES", "is_cxx", "parse")
