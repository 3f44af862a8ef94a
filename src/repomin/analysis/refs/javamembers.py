"""Java members nothing names: the methods, fields and nested types of the tree's classes that
no code left in the tree mentions, and the imports only they used.

The Java analogue of :mod:`repomin.analysis.refs.rustitems`, one level below the file cut of
:mod:`repomin.analysis.refs.java`. :func:`members` splits a file's code (tokens of
:mod:`repomin.analysis.javalex`: no comments, no literal contents) into the members of every
class body, nested ones included: a member runs from its first annotation or modifier to its
``;`` or to the ``}`` that closes its body (a field's initializer may hold braces). Each member
has the names it declares (a field declaration may declare several) and is *deletable* or
*pinned*. Pinned, so never cut but counted as a mention of their names: constructors,
initializer blocks, enum constants, abstract methods (a lambda may implement one), ``main``,
the methods the JVM calls by name (serialization's ``readObject`` and kin), members with an
annotation other than ``@Deprecated``, ``@SuppressWarnings``, ``@SafeVarargs`` (``@Override``
and a test framework's ``@Test`` mark methods something calls without naming them), members
of annotation types, and the methods of a class that extends or implements a type the tree does
not declare (they may implement a library's interface).

:func:`dead_members` then finds, over a set of files, every deletable member whose names occur
nowhere outside itself and the other dead members, as a fixpoint: once the emptied bodies of
the ``coverage`` pass name nothing, the helpers only they called are dead too, and then the
types only those helpers' signatures named. Overloads share a name, so one mention keeps them
all; a name spelled in a string (reflection) does not count, one in a comment neither. A
single-type or static import whose simple name the file no longer mentions goes with them (an
unused import of a class the file cut then deletes would not compile). The result
under-approximates what can go; every cut is a proposal the oracle decides.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from repomin.analysis.javalex import (
    IDENTIFIER,
    KEYWORDS,
    TYPE_KEYWORDS,
    assigns,
    java_tokens,
    parameters,
    params_start,
)

#: Annotations that change nothing a caller could depend on.
HARMLESS_ANNOTATIONS = frozenset({"Deprecated", "SuppressWarnings", "SafeVarargs"})
#: Methods and fields called or read without being named: by the JVM (``main``,
#: serialization) or through ``Object`` (string concatenation calls ``toString``).
JVM_NAMES = frozenset(
    {
        "main",
        "toString",
        "equals",
        "hashCode",
        "clone",
        "finalize",
        "readObject",
        "writeObject",
        "readObjectNoData",
        "readResolve",
        "writeReplace",
        "serialPersistentFields",
    }
)
#: Rounds of the fixpoint at most (each round frees what the previous one's deletions named).
MAX_ROUNDS = 64
#: Type bodies nested deeper than this make the file unparsed (left whole).
MAX_NESTING = 48
#: A name mentioned more often than this counts as mentioned (bounds each round's work).
MAX_OCCURRENCES = 4096
#: A call's argument list longer than this many tokens is not counted (any arity fits).
MAX_ARGUMENT_TOKENS = 20_000

Token = tuple[int, bytes]


@dataclass(frozen=True, slots=True)
class Member:
    """A member of a class body: ``[start, end)`` in bytes, its kind (``method``, ``field``,
    ``type``, ``other``), the names it declares and whether it may be cut."""

    start: int
    end: int
    kind: str
    names: tuple[str, ...]
    deletable: bool
    #: A method's parameter count (-1: not a method, or not known) and whether its last
    #: parameter is variable (``String... rest``).
    arity: int = -1
    varargs: bool = False
    #: The span of its ``@Override`` when that alone pins it: cut only once its class's
    #: ``implements`` list goes (``dead_members``'s ``dropped``), the annotation with the list.
    override: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Import:
    """A single-type or static import statement ``[start, end)`` and the simple name it brings."""

    start: int
    end: int
    name: str


@dataclass(frozen=True, slots=True)
class Dead:
    """What can go of one file: member spans (outermost), import statements and
    ``implements`` lists."""

    members: tuple[tuple[int, int], ...]
    imports: tuple[tuple[int, int], ...]
    clauses: tuple[tuple[int, int], ...] = ()

    @property
    def spans(self) -> list[tuple[int, int]]:
        return sorted(self.members + self.imports + self.clauses)


@dataclass(frozen=True, slots=True)
class Body:
    """A class body's ``[start, end)`` in bytes, its type's name and the supertypes it names;
    for a class, enum or record with an ``implements`` list, that list's span (from the word to
    the body's brace) and the simple names it lists."""

    start: int
    end: int
    name: str
    supers: frozenset[str]
    implements: tuple[int, int] | None = None
    interfaces: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class JavaFile:
    """A file's tokens, members, imports and the simple names of the types it declares."""

    tokens: tuple[Token, ...]
    members: tuple[Member, ...]
    imports: tuple[Import, ...]
    declared: frozenset[str]
    bodies: tuple[Body, ...]


@lru_cache(maxsize=8192)
def parse(data: bytes) -> JavaFile | None:
    """The members and imports of ``data``, or None when it does not lex or its braces do not
    balance (the file is then left whole, and its words still count)."""
    tokens = java_tokens(data)
    if tokens is None:
        return None
    match = _match_braces(tokens)
    if match is None:
        return None
    parser = _Parser(tokens, match)
    imports = parser.imports()
    parser.top_level()
    if parser.failed:
        return None
    return JavaFile(
        tuple(tokens),
        tuple(parser.members),
        tuple(imports),
        frozenset(parser.declared),
        tuple(parser.bodies),
    )


_WORD = re.compile(rb"[A-Za-z_$][\w$]*")


def mentions_only(data: bytes) -> JavaFile:
    """A file :func:`parse` refused, as mentions only: every word of it counts (comments and
    literals included) and nothing of it is cut."""
    tokens = tuple((m.start(), m.group()) for m in _WORD.finditer(data))
    return JavaFile(tokens, (), (), frozenset(), ())


def _match_braces(tokens: Sequence[Token]) -> dict[int, int] | None:
    stack: list[int] = []
    out: dict[int, int] = {}
    for k, (_, text) in enumerate(tokens):
        if text == b"{":
            stack.append(k)
        elif text == b"}":
            if not stack:
                return None
            out[stack.pop()] = k
    return out if not stack else None


class _Parser:
    def __init__(self, tokens: Sequence[Token], match: Mapping[int, int]) -> None:
        self.tokens = tokens
        self.match = match
        self.members: list[Member] = []
        self.declared: set[str] = set()
        #: Each class body's byte range, its type's name and the supertypes its header names.
        self.bodies: list[Body] = []
        self.failed = False

    def imports(self) -> list[Import]:
        """The single-type and static imports before the first type declaration."""
        out: list[Import] = []
        toks = self.tokens
        k = 0
        while k < len(toks) and toks[k][1] in (b"package", b"import", b";"):
            end = k
            while end < len(toks) and toks[end][1] != b";":
                end += 1
            if end >= len(toks):
                break
            words = [t for _, t in toks[k + 1 : end]]
            if toks[k][1] == b"import" and words and words[-1] != b"*":
                name = words[-1].decode("utf-8", "replace")
                if IDENTIFIER.fullmatch(name):
                    out.append(Import(toks[k][0], toks[end][0] + 1, name))
            k = end + 1
        return out

    def top_level(self) -> None:
        """Walk the top-level type declarations and every class body inside them."""
        k = 0
        toks = self.tokens
        header: list[bytes] = []
        while k < len(toks):
            text = toks[k][1]
            if text == b"{":
                close = self.match[k]
                kind, name = _type_header(header)
                if kind:
                    self.declared.add(name)
                    self._body(k, close, kind, name, _supertypes(header), 1)
                k = close + 1
                header = []
            elif text == b";":
                header = []
                k += 1
            else:
                header.append(text)
                k += 1

    def _override(self, first: int, end: int) -> tuple[int, int] | None:
        """The span of the ``@Override`` (or ``@java.lang.Override``) among the tokens
        ``first..end``."""
        toks = self.tokens
        for k in range(first, end):
            if toks[k][1] != b"@":
                continue
            j = k + 1
            while j + 2 < end and toks[j + 1][1] == b"." and toks[j + 2][1] != b"@":
                j += 2
            if toks[j][1] == b"Override":
                return toks[k][0], toks[j][0] + len(toks[j][1])
        return None

    def _implements(self, open_: int) -> tuple[tuple[int, int] | None, frozenset[str]]:
        """The ``implements`` list before the brace ``open_`` (span, simple names)."""
        toks = self.tokens
        k = open_ - 1
        depth = 0
        while k >= 0 and toks[k][1] not in (b";", b"{", b"}"):
            text = toks[k][1]
            if text == b">":
                depth += 1
            elif text == b"<":
                depth -= 1
            elif text == b"implements" and depth == 0:
                names: set[str] = set()
                angle = 0
                for j in range(k + 1, open_):
                    word = toks[j][1]
                    angle += (word == b"<") - (word == b">")
                    following = toks[j + 1][1] if j + 1 < open_ else b""
                    if (angle == 0 and following in (b",", b"{", b"<")) or j + 1 == open_:
                        name = word.decode("utf-8", "replace")
                        if IDENTIFIER.fullmatch(name):
                            names.add(name)
                return (toks[k][0], toks[open_][0]), frozenset(names)
            k -= 1
        return None, frozenset()

    def _body(
        self, open_: int, close: int, kind: str, name: str, supers: frozenset[str], depth: int
    ) -> None:
        """The members between the braces ``open_`` and ``close`` of a type named ``name``."""
        if depth > MAX_NESTING:
            self.failed = True
            return
        clause, interfaces = self._implements(open_) if kind != "interface" else (None, frozenset())
        self.bodies.append(
            Body(self.tokens[open_][0], self.tokens[close][0], name, supers, clause, interfaces)
        )
        toks = self.tokens
        k = open_ + 1
        if kind == "enum":  # the constants, up to the first ';' at this depth
            while k < close and toks[k][1] != b";":
                k = self.match[k] + 1 if toks[k][1] == b"{" else k + 1
            k += 1
        while k < close:
            first = k
            header: list[bytes] = []
            end = -1
            member_kind = ""
            names: tuple[str, ...] = ()
            shape = (-1, False)
            while k < close:
                text = toks[k][1]
                if text == b";":
                    if not header:
                        first = k + 1
                        k += 1
                        continue
                    end = k
                    member_kind, names = _semicolon_member(header)
                    break
                if text == b"{":
                    inner = self.match[k]
                    type_kind, type_name = _type_header(header)
                    if type_kind:
                        self.declared.add(type_name)
                        member_kind, names, end = "type", (type_name,), inner
                        supers_of = _supertypes(header)
                        self._body(k, inner, type_kind, type_name, supers_of, depth + 1)
                        break
                    if assigns(header):  # an initializer with braces: on to the ';'
                        header.append(b"{")
                        k = inner + 1
                        continue
                    member_kind, names = _brace_member(header, name)
                    end = inner
                    shape = parameters(header) if member_kind == "method" else (-1, False)
                    break
                header.append(text)
                k += 1
            if end < 0:
                break
            deletable = member_kind in ("method", "field", "type") and not _pinned(header, names)
            override = None
            if member_kind == "method" and not deletable and not _pinned(header, names, True):
                override = self._override(first, end)  # pinned by @Override alone
                deletable = override is not None
            if kind == "annotation":
                deletable = False
            if member_kind == "method" and supers:
                member_kind = "override?"  # dead_members decides once the tree's types are known
            self.members.append(
                Member(
                    toks[first][0],
                    toks[end][0] + 1,
                    member_kind,
                    names,
                    deletable,
                    *shape,
                    override,
                )
            )
            k = end + 1


def _type_header(header: Sequence[bytes]) -> tuple[str, str]:
    """(``class``/``interface``/``enum``/``record``/``annotation``, name) when ``header``
    declares a type, else ("", "")."""
    for k, word in enumerate(header[:-1]):
        text = word.decode("utf-8", "replace")
        if text in TYPE_KEYWORDS and (k == 0 or header[k - 1] != b"."):
            name = header[k + 1].decode("utf-8", "replace")
            if IDENTIFIER.fullmatch(name) and name not in KEYWORDS:
                annotation = text == "interface" and k > 0 and header[k - 1] == b"@"
                return ("annotation" if annotation else text, name)
    return ("", "")


def _supertypes(header: Sequence[bytes]) -> frozenset[str]:
    """The simple names after ``extends``/``implements`` in a type's header (type arguments
    and qualifiers skipped: ``java.util.AbstractList<E>`` gives ``AbstractList``)."""
    out: set[str] = set()
    inside = False
    depth = 0
    last = ""
    for word in header:
        if word in (b"extends", b"implements", b"permits"):
            if last:
                out.add(last)
            inside, last = word != b"permits", ""
            continue
        if not inside:
            continue
        if word == b"<":
            if depth == 0 and last:
                out.add(last)
                last = ""
            depth += 1
        elif word == b">":
            depth -= 1
        elif depth == 0 and word == b",":
            if last:
                out.add(last)
            last = ""
        elif depth == 0 and word != b".":
            last = word.decode("utf-8", "replace")
    if inside and last:
        out.add(last)
    return frozenset(n for n in out if IDENTIFIER.fullmatch(n))


def _method_name(header: Sequence[bytes]) -> str | None:
    if assigns(header):
        return None
    params = params_start(header)
    if params is None or params == 0:
        return None
    name = header[params - 1].decode("utf-8", "replace")
    if not IDENTIFIER.fullmatch(name) or name in KEYWORDS:
        return None
    if params >= 2 and header[params - 2] == b"@":
        return None  # an annotation's arguments, not a method
    return name


def _brace_member(header: Sequence[bytes], owner: str) -> tuple[str, tuple[str, ...]]:
    """What ``header {`` opens in a class body: a method, a constructor or an initializer."""
    name = _method_name(header)
    if name is None:
        return "other", ()
    if name == owner:
        return "other", (name,)  # a constructor
    return "method", (name,)


def _semicolon_member(header: Sequence[bytes]) -> tuple[str, tuple[str, ...]]:
    """What ``header ;`` declares: an abstract method (pinned) or fields."""
    if _method_name(header) is not None:
        return "abstract", ()
    names: list[str] = []
    depth = angle = 0
    in_init = False
    previous = b""
    for word in [*header, b";"]:
        if word in (b"(", b"[", b"{"):
            depth += 1
        elif word in (b")", b"]", b"}"):
            depth -= 1
        elif not in_init and word == b"<":
            angle += 1
        elif not in_init and word == b">":
            angle -= 1
        elif depth == 0 and angle == 0 and word in (b"=", b",", b";"):
            if not in_init:
                text = previous.decode("utf-8", "replace")
                if not IDENTIFIER.fullmatch(text) or text in KEYWORDS:
                    return "other", ()
                names.append(text)
            in_init = word == b"="
        if word not in (b"[", b"]"):
            previous = word
    return ("field", tuple(names)) if names else ("other", ())


def _pinned(header: Sequence[bytes], names: Sequence[str], override_ok: bool = False) -> bool:
    """Is the member never cut (see the module docstring)? ``override_ok``: as if
    ``@Override`` were harmless."""
    harmless = HARMLESS_ANNOTATIONS | ({"Override"} if override_ok else set())
    if any(n in JVM_NAMES for n in names):
        return True
    for k, word in enumerate(header[:-1]):
        if word == b"@" and header[k + 1] != b"interface":
            # the annotation's last simple name (``@org.junit.Test`` is ``Test``)
            j = k + 1
            while j + 2 < len(header) and header[j + 1] == b"." and header[j + 2] != b"@":
                j += 2
            if header[j].decode("utf-8", "replace") not in harmless:
                return True
    return False


# -- over the tree ----------------------------------------------------------------------------


def dead_members(
    files: Mapping[str, JavaFile],
    editable: Collection[str] | None = None,
    keep: Collection[tuple[str, int]] = (),
    dropped: Collection[tuple[str, int]] = (),
) -> dict[str, Dead]:
    """Per path of ``editable`` (default: every path), what can go: the dead members
    (outermost only) and the imports no code left in the file mentions. The members ``keep``
    names (by path and start) stay, and so does everything they mention. The ``implements``
    lists of the class bodies ``dropped`` names (by path and body start) go: they mention
    nothing, and their classes implement nothing."""
    candidates, clauses = _candidates(files, editable, keep, dropped)
    where = _mentions(files, candidates, clauses)
    dead = _fixpoint(files, candidates, where)
    out: dict[str, Dead] = {}
    for path, parsed in files.items():
        spans = dead[path]
        cut = tuple(sorted(clauses.get(path, ())))
        if not spans and not cut:
            continue
        gone = _merge(spans, cut)
        left = Counter(
            text.decode("utf-8", "replace")
            for offset, text in parsed.tokens
            if not _inside(gone, offset) and text[:1] != b'"'
        )
        imports = [
            (imp.start, imp.end) for imp in parsed.imports if left[imp.name] <= 1
        ]  # mentioned only by the import itself
        out[path] = Dead(tuple(spans), tuple(imports), cut)
    return out


Candidates = list[tuple[str, Member]]
Mentions = dict[str, list[tuple[str, int, int | None]]]


def _candidates(
    files: Mapping[str, JavaFile],
    editable: Collection[str] | None,
    keep: Collection[tuple[str, int]],
    dropped: Collection[tuple[str, int]],
) -> tuple[Candidates, dict[str, list[tuple[int, int]]]]:
    """The members that may be cut, and per path the ``implements`` lists (with their
    classes' ``@Override`` annotations) that ``dropped`` makes go."""

    def supers_of(path: str, body: Body) -> frozenset[str]:
        if (path, body.start) in dropped:
            return body.supers - body.interfaces
        return body.supers

    supers: dict[str, set[str]] = {}
    clauses: dict[str, list[tuple[int, int]]] = {}
    for path, parsed in files.items():
        for body in parsed.bodies:
            supers.setdefault(body.name, set()).update(supers_of(path, body))
            if (path, body.start) in dropped and body.implements is not None:
                clauses.setdefault(path, []).append(body.implements)
                clauses[path] += [
                    m.override
                    for m in parsed.members
                    if m.override is not None and _enclosing(parsed, m) == body
                ]
    known = _known_types(supers)
    candidates: Candidates = []
    for path, parsed in files.items():
        for member in parsed.members:
            if not member.deletable or not member.names:
                continue
            if (editable is not None and path not in editable) or (path, member.start) in keep:
                continue
            body = _enclosing(parsed, member)
            if member.override is not None and (path, body.start) not in dropped:
                continue  # it implements its class's interface, which stays
            if member.kind == "override?" and not supers_of(path, body) <= known:
                continue  # it may implement a method of a type the tree does not declare
            candidates.append((path, member))
    return candidates, clauses


def _mentions(
    files: Mapping[str, JavaFile],
    candidates: Candidates,
    clauses: Mapping[str, list[tuple[int, int]]],
) -> Mentions:
    """Per candidate name, its occurrences (path, offset, call arity) that may keep it: not
    in a dropped list, not a candidate's own declaration (two unused overloads of one arity do
    not keep each other; a pinned member's declaration does)."""
    wanted = {n for _, m in candidates for n in m.names}
    declarations: set[tuple[str, int]] = set()
    for path, member in candidates:
        tokens = files[path].tokens
        k = bisect.bisect_left(tokens, (member.start, b""))
        pending = set(member.names)
        while pending and k < len(tokens) and tokens[k][0] < member.end:
            name = tokens[k][1].decode("utf-8", "replace")
            if name in pending:
                pending.discard(name)
                declarations.add((path, tokens[k][0]))
            k += 1
    where: Mentions = {}
    for path, parsed in files.items():
        tokens = parsed.tokens
        gone = sorted(clauses.get(path, ()))
        for k, (offset, text) in enumerate(tokens):
            if text[:1] == b'"' or _inside(gone, offset) or (path, offset) in declarations:
                continue
            name = text.decode("utf-8", "replace")
            if name in wanted:
                where.setdefault(name, []).append((path, offset, _call_arity(tokens, k)))
    return where


def _fixpoint(
    files: Mapping[str, JavaFile], candidates: Candidates, where: Mentions
) -> dict[str, list[tuple[int, int]]]:
    """Per path, the spans of the members no occurrence outside the dead ones keeps."""
    crowded = {n for n, found in where.items() if len(found) > MAX_OCCURRENCES}
    candidates = [(p, m) for p, m in candidates if not crowded.intersection(m.names)]
    dead: dict[str, list[tuple[int, int]]] = {p: [] for p in files}
    done: set[tuple[str, int]] = set()
    for _ in range(MAX_ROUNDS):
        newly = [
            (path, member)
            for path, member in candidates
            if (path, member.start) not in done
            and not _inside(dead[path], member.start)
            and not any(_mentioned(where.get(n, []), dead, path, member) for n in member.names)
        ]
        if not newly:
            break
        added: dict[str, list[tuple[int, int]]] = {}
        for path, member in newly:
            done.add((path, member.start))
            added.setdefault(path, []).append((member.start, member.end))
        for path, spans in added.items():
            dead[path] = _merge(dead[path], spans)
    return dead


def _known_types(supers: Mapping[str, set[str]]) -> set[str]:
    """The tree's types whose every supertype, transitively, the tree declares."""
    known: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, direct in supers.items():
            if name not in known and direct <= known:
                known.add(name)
                changed = True
    return known


def _enclosing(parsed: JavaFile, member: Member) -> Body:
    """The innermost class body holding ``member``."""
    inside = [b for b in parsed.bodies if b.start < member.start < b.end]
    return max(inside, key=lambda b: b.start)


def _mentioned(
    occurrences: Sequence[tuple[str, int, int | None]],
    dead: Mapping[str, list[tuple[int, int]]],
    path: str,
    member: Member,
) -> bool:
    """Does some occurrence that may mean ``member`` lie outside it and outside every dead
    span? A call (or a declaration's parameter list) with a number of arguments no
    overload of ``member``'s arity accepts does not mean it: Java resolves a call only to a
    method of that many parameters, or a variable-arity one of at most one more."""
    for other, offset, count in occurrences:
        if other == path and member.start <= offset < member.end:
            continue
        if count is not None and member.arity >= 0:
            fits = count >= member.arity - 1 if member.varargs else count == member.arity
            if not fits:
                continue
        if not _inside(dead[other], offset):
            return True
    return False


def _call_arity(tokens: Sequence[Token], k: int) -> int | None:
    """The number of arguments when ``tokens[k]`` is followed by a parenthesized list (a call,
    or a declaration's parameters); None when it is not, or when a ``<`` inside a call makes
    the commas ambiguous (a type argument or a comparison). In a declaration (the name follows
    a type: a word that is no expression keyword, ``>`` or ``]``) angle brackets are types."""
    if k + 1 >= len(tokens) or tokens[k + 1][1] != b"(":
        return None
    before = tokens[k - 1][1] if k > 0 else b""
    declaration = before in (b">", b"]") or (
        IDENTIFIER.fullmatch(before.decode("utf-8", "replace")) is not None
        and before not in _EXPRESSION_WORDS
    )
    depth, count, any_token = 0, 1, False
    for j in range(k + 2, min(len(tokens), k + 2 + MAX_ARGUMENT_TOKENS)):
        text = tokens[j][1]
        if text in (b"(", b"[", b"{") or (declaration and text == b"<"):
            depth += 1
        elif text in (b")", b"]", b"}") or (declaration and text == b">"):
            if depth == 0:
                return count if any_token else 0
            depth -= 1
        elif text == b"<":
            return None
        elif text == b"," and depth == 0:
            count += 1
        any_token = True
    return None


#: Words after which a name followed by ``(`` is a call, not a declaration.
_EXPRESSION_WORDS = frozenset(
    {b"return", b"throw", b"new", b"else", b"case", b"assert", b"yield", b"instanceof", b"do"}
)


def _inside(spans: Sequence[tuple[int, int]], offset: int) -> bool:
    k = bisect.bisect_right(spans, (offset, 1 << 62)) - 1
    return k >= 0 and spans[k][0] <= offset < spans[k][1]


def _merge(
    spans: Sequence[tuple[int, int]], new: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """``spans`` with ``new`` added, nested spans folded into the outer one (sorted)."""
    out: list[tuple[int, int]] = []
    for span in sorted([*spans, *new]):
        if out and span[0] < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], span[1]))
        else:
            out.append(span)
    return out


__all__ = [
    "Body",
    "Dead",
    "Import",
    "JavaFile",
    "Member",
    "dead_members",
    "mentions_only",
    "parse",
]
