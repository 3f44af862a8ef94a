"""C functions and file-scope variables nothing reachable names.

The C analogue of :mod:`repomin.analysis.refs.javamembers`, one level below the include graph
of :mod:`repomin.analysis.refs.c`. The linker resolves calls by name, so a function of a
library that no code left in the tree names can go with its prototypes, and then the
functions only it called.

:func:`parse` splits a C file (``.c`` or ``.h``) into its top-level *items*, on tokens with
comments dropped and each literal one token:

* a function definition: from its first token to the ``}`` of its body, ANSI or K&R (``int
  f(a) int a; {``, as zlib still writes them); its name is the identifier before the last
  parenthesised list of its head (``CJSON_PUBLIC(cJSON *) cJSON_Parse(const char *v)`` is
  ``cJSON_Parse``; an ``__attribute__`` list does not count);
* a declaration ending in ``;``: a prototype declares the tree's functions among its words
  outside parentheses (``ZEXTERN int ZEXPORT deflate OF((z_streamp, int));`` declares
  ``deflate`` once the tree defines it); a variable declaration or definition its declarators'
  names (``static const config table[10] = {...};`` declares ``table``). ``typedef``s, tags
  and declarations with no name of their own are not items.

Preprocessor lines are not code; ``extern "C" {`` is transparent. Brackets are matched on
the first branch of every ``#if`` (as ctags reads them: zlib opens a brace in both branches of
an ``#ifdef``); each ``#else``/``#elif`` branch at the top level whose brackets balance is read
for items on its own (zlib declares ``gzseek`` there when it does not rename it). A file whose
comment or literal does not end or whose brackets do not balance is left whole, and so is a
file larger than :data:`MAX_PARSE_BYTES`; their words all count as mentions. A file that holds
C++ (``::``, ``namespace``, ``template``, ``class``) is not read here: the ``refs`` pass reads
it with :mod:`repomin.analysis.refs.cppfunctions` (its function definitions, the same walk).

:func:`dead_items` then finds every item of the editable files no *live* code names: the
words outside any candidate item (types, ``#if`` conditions, the words of files left whole)
are live, and so is every item that a live word names, and everything it mentions in turn (a
reachability walk, so two functions that only call each other go together). A ``#define``'s
body is a use once its name is (zlib's ``gzgetc`` macro keeps ``gzgetc_`` only where code
calls ``gzgetc``); its own name and the macro an ``#ifdef``/``defined`` tests are no use, nor
are the words of ``#pragma``, ``#error`` and ``#line``, nor a prototype's own name (a kept
prototype does not keep its function). A ``static`` item of a ``.c`` file (or one declared
with a macro defined as ``static``, zlib's ``local``) is named only from its own file or a
header's macro: another file's namesake is another function. A string literal that is one
identifier (``dlsym(h, "name")``) names it. Pinned, never cut: ``main``, the entries a loader
looks up by name (``PyInit_*``, ``Java_*``, ``JNI_OnLoad``, ``napi_register_module_v*``),
functions with a ``constructor``/``destructor``/``used`` attribute, and items whose name a
``##`` paste could form (a fragment pasted in a ``#define`` occurs in it). Only C and C++
files, assembly and linker scripts count: a linker version script that lists every exported
function does not keep them (the oracle decides, as always). The result under-approximates
what can go; every cut is a proposal the oracle decides.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

#: Files larger than this are left whole (their words still count).
MAX_PARSE_BYTES = 2_000_000
#: Parentheses and brackets nested deeper than this make the file unparsed (left whole).
MAX_NESTING = 256
#: More distinct ``##`` fragments than this in a tree and nothing is cut (bounds the check).
MAX_PASTED = 512
#: The suffixes whose files are parsed; other C/C++ files only mention.
PARSED_SUFFIXES = (".c", ".h")
#: C and C++ files: their words are the mentions.
C_SUFFIXES = (
    *(".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++", ".inc"),
    *(".s", ".asm", ".ld", ".lds"),  # assembly (``.S`` too) and linker scripts name C symbols
)

#: C's reserved words and the compilers' spellings of them (never a declared name).
KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while _Bool _Complex _Atomic _Noreturn
    _Thread_local _Alignas _Alignof _Static_assert bool __inline __inline__ __restrict
    __restrict__ __extension__ __const __volatile__ __signed__""".split()  # noqa: SIM905
)
CXX_TOKENS = frozenset({b"namespace", b"template", b"class", b"::"})
_ATTRIBUTES = frozenset({b"__attribute__", b"__attribute", b"__declspec", b"__asm__", b"asm"})
_PINNING_ATTRIBUTES = frozenset({b"constructor", b"destructor", b"used"})
#: Functions a loader looks up by name: Python's and Node's extension entries, JNI's.
LOADED = re.compile(r"PyInit_\w+|Java_\w+|JNI_On(?:Load|Unload)|napi_register_module_v\d+|main")
#: A literal that is one identifier (``dlsym(h, "name")``) names it.
_NAME_LITERAL = re.compile(rb'"([A-Za-z_][\w]*)"')
_TAGS = frozenset({b"struct", b"union", b"enum"})
#: Directives whose words are no use of a function or variable.
_SILENT_DIRECTIVES = frozenset({"pragma", "error", "warning", "line", "ident", "sccs"})

_LEX = re.compile(
    rb"""
    (?P<space>[ \t\r\f\v]+|\\\r?\n)
    |(?P<newline>\n)
    |(?P<comment>//(?:[^\n\\]|\\.)*|/\*.*?\*/)
    |(?P<literal>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<word>[A-Za-z_\x80-\xff][\w\x80-\xff]*)
    |(?P<number>\.?[0-9](?:[eEpP][+-]|[\w.\x80-\xff])*)
    |(?P<paste>\#\#|::)
    |(?P<other>[^\s])
    """,
    re.S | re.X,
)
WORD = re.compile(rb"[A-Za-z_\x80-\xff][\w\x80-\xff]*")

Token = tuple[int, bytes]
Key = tuple[str, int]  # an item: its path and start


@dataclass(frozen=True, slots=True)
class Item:
    """A top-level item ``[start, end)`` in bytes: its kind (``function``, ``prototype``,
    ``variable``), the names it declares (a prototype's: every word outside parentheses; the
    tree's functions among them count) and whether it is pinned."""

    start: int
    end: int
    kind: str
    names: tuple[str, ...]
    pinned: bool = False
    #: Where each of ``names`` is spelled in the item (a prototype's own names are no use).
    offsets: tuple[int, ...] = ()
    #: The words before its first name (``static``, or a macro such as zlib's ``local``).
    head: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CFile:
    """A file's words (offset, name), its items, the fragments its ``##`` pastes and the
    macros it defines as ``static`` (``#define local static``)."""

    words: tuple[tuple[int, str], ...]
    items: tuple[Item, ...]
    pasted: frozenset[str]
    statics: frozenset[str] = frozenset()
    #: Each ``#define``'s name and the words of its body (offset, word).
    macros: tuple[tuple[str, tuple[tuple[int, str], ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class Dead:
    """What can go of one file: the spans of its dead items."""

    members: tuple[tuple[int, int], ...]

    @property
    def spans(self) -> list[tuple[int, int]]:
        return sorted(self.members)


def is_c(path: str) -> bool:
    return path.lower().endswith(C_SUFFIXES)


@lru_cache(maxsize=8192)
def parse(path_suffix: str, data: bytes) -> CFile:
    """The items of ``data`` (a file whose name ends in ``path_suffix``); a file it cannot
    read as C comes back with its words only."""
    if path_suffix not in PARSED_SUFFIXES or len(data) > MAX_PARSE_BYTES:
        return mentions_only(data)
    lexed = lex(data)
    if lexed is None:
        return mentions_only(data)
    code = lexed.code
    if any(text in CXX_TOKENS for _, text in code):
        return mentions_only(data)
    match = match_brackets(code)
    if match is None:
        return mentions_only(data)
    items = _Parser(code, match).items()
    # An #else branch at the top level whose brackets balance: its items too (one inside a
    # function's body is that function's).
    spans = [(item.start, item.end) for item in items]
    starts = [start for start, _ in spans]
    for region in lexed.regions:
        region_match = match_brackets(region)
        if region and region_match is not None and not _within(starts, spans, region[0][0]):
            items += _Parser(region, region_match).items()
    items.sort(key=lambda item: item.start)
    macros = tuple((name, tuple(body)) for name, body in lexed.macros)
    return CFile(
        tuple(lexed.words), tuple(items), frozenset(lexed.pasted), frozenset(lexed.statics), macros
    )


def _within(starts: Sequence[int], spans: Sequence[tuple[int, int]], offset: int) -> bool:
    """Whether ``offset`` lies inside one of ``spans`` (sorted, disjoint; ``starts`` theirs)."""
    k = bisect.bisect_right(starts, offset) - 1
    return k >= 0 and offset < spans[k][1]


def mentions_only(data: bytes) -> CFile:
    """A file :func:`parse` refused: every word of it counts, comments and literals included,
    and nothing of it is cut."""
    words = tuple((m.start(), m.group().decode("utf-8", "replace")) for m in WORD.finditer(data))
    return CFile(words, (), frozenset())


def lex(data: bytes) -> Lexer | None:
    """The lexer after reading ``data`` (see :class:`Lexer`), or None when a comment or
    literal does not end."""
    lexer = Lexer()
    for m in _LEX.finditer(data):
        kind, text = m.lastgroup, m.group()
        if kind == "space" or kind == "comment":
            continue  # a block comment over several lines does not end a directive
        if kind == "newline":
            lexer.end_of_line()
            continue
        if kind == "other" and (text in (b'"', b"'") or data.startswith(b"/*", m.start())):
            return None  # a literal that does not end on its line, or a comment
        named = _NAME_LITERAL.fullmatch(text) if kind == "literal" else None
        if named is not None:
            lexer.words.append((m.start() + 1, named.group(1).decode()))
        lexer.token(m.start(), kind or "", text)
    lexer.end_of_line()
    return lexer


class Lexer:
    """What :func:`lex` found: the code tokens outside preprocessor lines and outside the
    ``#else``/``#elif`` branches (``code``), the words that mention something with their
    offsets (``words``; a macro's body is kept apart in ``macros``, a use only once the macro
    is), the words next to a ``##`` (``pasted``) and the macros defined as ``static``; and
    its state: whether a line starts, the directive being read (its words so far), the
    conditional branches open (True: an ``#else``/``#elif`` branch, whose code does not count
    for the brackets: the first branch alone is read, as ctags does)."""

    def __init__(self) -> None:
        self.code: list[Token] = []
        self.words: list[tuple[int, str]] = []
        self.pasted: set[str] = set()
        self.statics: set[str] = set()
        self.macros: list[tuple[str, list[tuple[int, str]]]] = []
        #: The code of each ``#else``/``#elif`` branch, read on its own for items.
        self.regions: list[list[Token]] = []
        self.line_start = True
        self.directive: list[str] | None = None
        self.branches: list[bool] = []
        self.previous_word = ""
        self.after_paste = False
        self.defined = False

    def end_of_line(self) -> None:
        d = self.directive
        if d is not None and len(d) == 3 and d[0] == "define" and d[2] == "static":
            self.statics.add(d[1])
        self.line_start, self.directive, self.defined = True, None, False

    def token(self, offset: int, kind: str, text: bytes) -> None:
        if self.line_start and text == b"#":
            self.directive = []
        self.line_start = False
        if kind == "paste" and text == b"##":
            if self.previous_word:
                self.pasted.add(self.previous_word)
            self.after_paste = True
            return
        if kind == "word":
            self._word(offset, text.decode("utf-8", "replace"))
        else:
            self.after_paste, self.previous_word = False, ""
        if self.directive is None:
            token = (offset, b'"' if kind == "literal" else text)
            (self.regions[-1] if any(self.branches) else self.code).append(token)

    def _word(self, offset: int, name: str) -> None:
        if self.after_paste:
            self.pasted.add(name)
        self.after_paste, self.previous_word = False, name
        directive = self.directive
        if directive is None:
            self.words.append((offset, name))
            return
        directive.append(name)
        if len(directive) == 1:
            self._conditional(name)
            return  # the directive's own name
        if directive[0] in _SILENT_DIRECTIVES:
            return  # `#pragma map(inflateSync, "INSY")` (an MVS name) uses nothing
        if len(directive) == 2 and directive[0] in ("define", "undef", "ifdef", "ifndef"):
            if directive[0] == "define":
                self.macros.append((name, []))
            return  # the macro a directive defines or tests: not a use
        if directive[0] == "define" and self.macros:
            self.macros[-1][1].append((offset, name))  # a use once the macro is used
            return
        if self.defined:
            self.defined = False
            return
        if name == "defined":
            self.defined = True
            return
        self.words.append((offset, name))

    def _conditional(self, name: str) -> None:
        if name in ("if", "ifdef", "ifndef"):
            self.branches.append(False)
        elif name in ("else", "elif", "elifdef", "elifndef") and self.branches:
            self.branches[-1] = True
            if not any(self.branches[:-1]):
                self.regions.append([])
        elif name == "endif" and self.branches:
            self.branches.pop()


def match_brackets(code: Sequence[Token]) -> dict[int, int] | None:
    """Index of each bracket's partner (both ways), or None when they do not balance."""
    pairs = {b")": b"(", b"]": b"[", b"}": b"{"}
    stack: list[int] = []
    match: dict[int, int] = {}
    for k, (_, text) in enumerate(code):
        if text in (b"(", b"[", b"{"):
            stack.append(k)
            if len(stack) > MAX_NESTING:
                return None
        elif text in pairs:
            if not stack or code[stack[-1]][1] != pairs[text]:
                return None
            opened = stack.pop()
            match[opened], match[k] = k, opened
    return None if stack else match


class TokenView:
    """Code tokens and their brackets' partners (:func:`match_brackets`), read by index:
    the text of a token (empty past either end) and whether it is a word."""

    def __init__(self, code: Sequence[Token], match: Mapping[int, int]) -> None:
        self.code = code
        self.match = match

    def text(self, k: int) -> bytes:
        return self.code[k][1] if 0 <= k < len(self.code) else b""

    def is_word(self, k: int) -> bool:
        return WORD.fullmatch(self.text(k)) is not None


class _Parser(TokenView):
    def __init__(self, code: Sequence[Token], match: Mapping[int, int]) -> None:
        super().__init__(code, match)
        self.out: list[Item] = []

    def end_of(self, k: int) -> int:
        """The byte offset just after token ``k`` (a ``;`` or ``}``)."""
        return self.code[k][0] + len(self.code[k][1])

    def items(self) -> list[Item]:
        code, match = self.code, self.match
        n = len(code)
        transparent: set[int] = set()
        k, start = 0, -1
        groups: list[int] = []  # the top-level '(' of the current segment
        while k < n:
            t = code[k][1]
            if start < 0:
                if t == b";" or k in transparent:
                    k += 1
                    continue
                start, groups = k, []
            if t == b"(" or t == b"[":
                if t == b"(":
                    groups.append(k)
                k = match[k] + 1
            elif t == b"{":
                if self.text(k - 1) == b'"' and self.text(k - 2) == b"extern":
                    transparent.update((k, match[k]))  # extern "C" { ... }
                    k, start = k + 1, -1
                elif self._function_body(k, groups):
                    self._function(start, k, groups)
                    k, start = match[k] + 1, -1
                elif self.text(k - 1) == b")":
                    k, start = match[k] + 1, -1  # a body this reader does not follow: no item
                else:
                    k = match[k] + 1  # a struct, union or enum body, or an initializer
            elif t == b";":
                if self._kr_head(groups) is None:
                    self._declaration(start, k)
                    start = -1
                k += 1  # else one of a K&R definition's parameter declarations
            else:
                k += 1
        return self.out

    # -- function definitions --------------------------------------------------------------

    def _head_group(self, groups: Sequence[int]) -> int | None:
        """The '(' of the parameter list among a head's top-level groups."""
        for g in reversed(groups):
            if self.text(g - 1) in _ATTRIBUTES:
                continue
            return g
        return None

    def _kr_head(self, groups: Sequence[int]) -> int | None:
        """The '(' of a K&R identifier list followed by a declaration, if the segment has one."""
        g = self._head_group(groups)
        if g is None or not self.is_word(g - 1):
            return None
        close = self.match[g]
        inner = [self.text(i) for i in range(g + 1, close)]
        if not inner or not all(
            (x == b"," if i % 2 else WORD.fullmatch(x) is not None and x.decode() not in KEYWORDS)
            for i, x in enumerate(inner)
        ):
            return None
        after = self.text(close + 1)
        return g if self.is_word(close + 1) and after not in _ATTRIBUTES else None

    def _function_body(self, k: int, groups: Sequence[int]) -> bool:
        before = self.text(k - 1)
        if before == b")":
            g = self._head_group(groups)
            return g is not None and self.is_word(g - 1)
        return before == b";" and self._kr_head(groups) is not None

    def _function(self, start: int, brace: int, groups: Sequence[int]) -> None:
        g = self._head_group(groups)
        assert g is not None
        name = self.text(g - 1).decode("utf-8", "replace")
        if name in KEYWORDS:
            return
        pinned = LOADED.fullmatch(name) is not None or any(
            self.text(i) in _PINNING_ATTRIBUTES for i in range(start, brace)
        )
        close = self.match[brace]
        head = self._words(start, g - 1)
        at, end = self.code[start][0], self.end_of(close)
        self.out.append(Item(at, end, "function", (name,), pinned, (self.code[g - 1][0],), head))

    def _words(self, start: int, end: int) -> tuple[str, ...]:
        """The words of tokens ``[start, end)``."""
        return tuple(
            self.text(i).decode("utf-8", "replace") for i in range(start, end) if self.is_word(i)
        )

    # -- declarations ----------------------------------------------------------------------

    def _declaration(self, start: int, semicolon: int) -> None:
        texts = [self.text(i) for i in range(start, semicolon)]
        if b"typedef" in texts or not texts:
            return
        declarators = self._declarators(start, semicolon)
        names: list[tuple[str, int]] = []
        kinds: set[bool] = set()
        for first, last in declarators:
            found, is_prototype = self._declared(first, last)
            kinds.add(is_prototype)
            names += found
        if not names or len(kinds) > 1:
            return  # nothing declared, or functions and variables in one declaration
        kind = "prototype" if kinds == {True} else "variable"
        pinned = any(t in _PINNING_ATTRIBUTES for t in texts)
        start_at, end_at = self.code[start][0], self.end_of(semicolon)
        words, offsets = tuple(n for n, _ in names), tuple(o for _, o in names)
        first = next(i for i in range(start, semicolon) if self.code[i][0] == offsets[0])
        head = self._words(start, first)
        self.out.append(Item(start_at, end_at, kind, words, pinned, offsets, head))

    def _declarators(self, start: int, end: int) -> list[tuple[int, int]]:
        """The top-level comma-separated parts ``[first, last)`` of a declaration."""
        parts: list[tuple[int, int]] = []
        k, first = start, start
        while k < end:
            t = self.text(k)
            if t in (b"(", b"[", b"{"):
                k = self.match[k] + 1
                continue
            if t == b",":
                parts.append((first, k))
                first = k + 1
            k += 1
        parts.append((first, end))
        return parts

    def _declared(self, first: int, last: int) -> tuple[list[tuple[str, int]], bool]:
        """((name, offset) of its names, is a prototype) of one declarator."""
        k = first
        words: list[tuple[str, int]] = []
        prototype = False
        while k < last:
            t = self.text(k)
            if t == b"=":
                break
            if t in (b"(", b"[", b"{"):
                if t == b"(" and self.text(k - 1) in _ATTRIBUTES:
                    k = self.match[k] + 1
                    continue
                if t == b"(" and words:
                    prototype = True
                k = self.match[k] + 1
                continue
            if self.is_word(k) and self.text(k - 1) not in _TAGS:
                name = t.decode("utf-8", "replace")
                if name not in KEYWORDS and t not in _ATTRIBUTES:
                    words.append((name, self.code[k][0]))
            k += 1
        if prototype:
            return words, True  # the tree's functions among them are what it declares
        return words[-1:], False


# -- the dead items of a set of files --------------------------------------------------------


def dead_items(
    files: Mapping[str, CFile],
    editable: Collection[str] | None = None,
    keep: Collection[tuple[str, int]] = (),
) -> dict[str, Dead]:
    """Per path of ``editable`` (default: every path), the spans of the items no live code
    names (see the module docstring). The items ``keep`` names (by path and start) are live,
    and so is everything they mention."""
    functions = {
        n for f in files.values() for i in f.items if i.kind == "function" for n in i.names
    }
    candidates = _candidates(files, editable, keep, functions)
    scope = _Scope(files, candidates)
    spans: dict[str, list[tuple[int, int]]] = {path: [] for path in files}
    for (path, _), item in candidates.items():
        spans[path].append((item.end, item.start))
    for ends in spans.values():
        ends.sort()
    # A prototype's own names are no use of them (a kept prototype does not keep a function).
    own = {
        (path, offset)
        for path, parsed in files.items()
        for item in parsed.items
        if item.kind == "prototype"
        for name, offset in zip(item.names, item.offsets, strict=True)
        if name in functions
    }
    # The words of each candidate, and the words outside every candidate (live from the start).
    inside: dict[tuple[str, int], set[Word]] = {key: set() for key in candidates}
    live_words: set[Word] = set()
    for path, parsed in files.items():
        ends = spans[path]
        for offset, name in parsed.words:
            if not scope.wanted(name) or (path, offset) in own:
                continue
            owner = _owner(ends, offset)
            if owner is None:
                live_words.add((path, name))
            else:
                inside[(path, owner)].add((path, name))
    live = _walk(live_words, scope, inside)
    gone: dict[str, list[tuple[int, int]]] = {}
    for (path, start), item in sorted(candidates.items()):
        if (path, start) not in live:
            gone.setdefault(path, []).append((item.start, item.end))
    return {path: Dead(tuple(members)) for path, members in gone.items()}


Word = tuple[str, str]  # (the path it is spelled in, the name)


class _Scope:
    """What a word spelled in a file names: the candidates of that name for the whole program,
    the ``static`` ones of its own ``.c`` file (a static function of one file is not the
    namesake another file calls; a header's word, a macro's, may name any file's), and the
    bodies of the macros of that name."""

    def __init__(self, files: Mapping[str, CFile], candidates: Mapping[Key, Item]) -> None:
        statics = {"static"}.union(*(f.statics for f in files.values()))
        self.declares: dict[tuple[str, str], list[Key]] = {}
        self.locals_of: dict[str, list[Key]] = {}
        for key, item in candidates.items():
            local = key[0].endswith(".c") and not statics.isdisjoint(item.head)
            for n in item.names:
                self.declares.setdefault((key[0] if local else "", n), []).append(key)
                if local:
                    self.locals_of.setdefault(n, []).append(key)
        self.names = {n for _, n in self.declares}
        self.macros: dict[str, list[Word]] = {}
        for path, parsed in files.items():
            for name, body in parsed.macros:
                self.macros.setdefault(name, []).extend((path, w) for _, w in body)

    def wanted(self, name: str) -> bool:
        return name in self.names or name in self.macros

    def reaches(self, word: Word) -> list[Key]:
        path, name = word
        found = self.declares.get(("", name), [])
        if path.endswith(".c"):
            return found + self.declares.get((path, name), [])
        return found + self.locals_of.get(name, [])


def _candidates(
    files: Mapping[str, CFile],
    editable: Collection[str] | None,
    keep: Collection[tuple[str, int]],
    functions: Collection[str],
) -> dict[tuple[str, int], Item]:
    """The items that may go, by (path, start), each with the names it declares: a
    prototype's are the tree's ``functions`` among its words."""
    pasted = {frag for f in files.values() for frag in f.pasted}
    if len(pasted) > MAX_PASTED:
        return {}  # a tree that pastes this many names: any name may be formed
    candidates: dict[tuple[str, int], Item] = {}
    for path, parsed in files.items():
        if editable is not None and path not in editable:
            continue
        for item in parsed.items:
            names = item.names
            if item.kind == "prototype":
                names = tuple(n for n in names if n in functions)
            if not names or item.pinned or (path, item.start) in keep:
                continue
            if any(_pastes(n, pasted) for n in names):
                continue
            candidates[(path, item.start)] = replace(item, names=names)
    return candidates


def _walk(live_words: set[Word], scope: _Scope, inside: Mapping[Key, set[Word]]) -> set[Key]:
    """The candidates a live word names, and what their words and the bodies of the macros
    they use name in turn."""
    live: set[Key] = set()
    pending = list(live_words)
    seen = set(live_words)
    expanded: set[str] = set()
    while pending:
        word = pending.pop()
        found: set[Word] = set()
        for key in scope.reaches(word):
            if key not in live:
                live.add(key)
                found |= inside[key]
        if word[1] in scope.macros and word[1] not in expanded:
            expanded.add(word[1])
            found.update(scope.macros[word[1]])
        for w in found - seen:
            seen.add(w)
            pending.append(w)
    return live


def _owner(ends: Sequence[tuple[int, int]], offset: int) -> int | None:
    """The start of the span (of ``ends``: (end, start) sorted) holding ``offset``, if any."""
    lo, hi = 0, len(ends)
    while lo < hi:
        mid = (lo + hi) // 2
        if ends[mid][0] <= offset:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(ends) and ends[lo][1] <= offset:
        return ends[lo][1]
    return None


def _pastes(name: str, fragments: Collection[str]) -> bool:
    """Whether a ``##`` paste could form ``name``: one of its fragments occurs in it."""
    return any(f == name or (len(f) >= 3 and f in name) for f in fragments)


__all__ = [
    "CXX_TOKENS",
    "C_SUFFIXES",
    "LOADED",
    "WORD",
    "CFile",
    "Dead",
    "Item",
    "Lexer",
    "TokenView",
    "dead_items",
    "is_c",
    "lex",
    "match_brackets",
    "mentions_only",
    "parse",
]
