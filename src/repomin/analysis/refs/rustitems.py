"""Rust items nothing names: the top-level items of a file (and the methods of its inherent
``impl`` blocks) whose name no other code of the crate mentions.

:func:`items` splits masked code (see :mod:`repomin.analysis.refs.rustsrc`: no comments, no
literal contents) into items at brace depth 0: an item ends at its ``;`` or at the ``}`` that
closes its body (``const``/``static``/``type``/``use`` items at their ``;``). Each item has a
kind and a name read from its head: ``fn``, ``struct``, ``enum``, ``union``, ``trait``,
``type``, ``const``, ``static``, ``macro_rules!``, an inline ``mod``, or an ``impl`` (named by
its self type, with its trait); anything else is of kind ``other`` and never cut.

:func:`dead_spans` finds, given the word counts of every reachable Rust file's code, what can
go: an item whose name occurs nowhere outside the item and the ``impl`` blocks of it in the same
file (a struct goes with its impls, a trait with the impls of it); a method or associated
``const`` of an inherent ``impl`` whose name occurs nowhere else; and, when the command builds
no tests, every ``#[cfg(test)]`` item (when it does, none). Never cut: ``main``,
``#[no_mangle]``/``#[export_name]``/``#[macro_use]`` items, members of trait impls, out-of-line
``mod name;`` (the ``mod`` cut's). A name mentioned only in a macro, a ``use`` or another dead
item still counts as mentioned (the cut under-approximates; the oracle decides every cut).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from repomin.analysis.refs.rustsrc import item_span, lex

_DELIMS = re.compile(r"[{}()\[\];]")
_WORD = re.compile(r"[A-Za-z_]\w*")
_PATH_LITERAL = re.compile(r"[A-Za-z_][\w:]*")
_FORMAT_ARG = re.compile(r"\{([A-Za-z_]\w*)")
_VIS = r"(?:pub\s*(?:\([^)]*\))?\s*)?"
_FN = re.compile(
    _VIS + r"(?:(?:const|async|unsafe|default)\s+|extern\s*(?:\"[^\"]*\"\s*)?)*fn\s+(?:r#)?(\w+)"
)
_NAMED = re.compile(
    _VIS + r"(?:(?:unsafe|auto)\s+)*(struct|enum|union|trait|type|mod)\s+(?:r#)?(\w+)"
)
_VALUE = re.compile(_VIS + r"(const|static)\s+(?:mut\s+)?(?:r#)?(\w+)\s*:")
_MACRO = re.compile(r"macro_rules\s*!\s*(\w+)")
_IMPL = re.compile(r"(?:unsafe\s+)?impl\b")
_FOR = re.compile(r"for(?![\w$])")
_ENDS_AT_SEMICOLON = re.compile(
    _VIS + r"(?:const|static|type|use|let)\b"
    r"(?!\s+(?:(?:unsafe|async)\s+|extern\s*(?:\"[^\"]*\"\s*)?)*fn\b)"
)
_PINNED_ATTRS = re.compile(
    r"\b(?:no_mangle|export_name|used|link_section|macro_use|proc_macro\w*)\b"
)
_CFG_TEST = re.compile(r"\bcfg\s*\(\s*test\s*\)")
_MAX_ITEMS = 4000
_TYPE_KINDS = frozenset({"struct", "enum", "union", "type"})


@dataclass(frozen=True)
class Item:
    kind: str
    #: The item's name; an ``impl``'s self type name ("" when it has none, e.g. ``[u8]``).
    name: str
    #: An ``impl``'s trait name ("" for an inherent impl).
    trait: str
    #: The span a removal takes (attributes, doc comments, the rest of its line).
    start: int
    end: int
    #: Inside the braces of an ``impl`` (its members), else None.
    body: tuple[int, int] | None
    pinned: bool
    cfg_test: bool


def _split_attributes(head: str) -> tuple[str, str]:
    """(the outer attributes, the rest) of an item's head."""
    i = 0
    while True:
        while i < len(head) and head[i].isspace():
            i += 1
        if not head.startswith("#", i) or "[" not in head[i : i + 3]:
            return head[:i], head[i:]
        depth, j = 0, head.index("[", i)
        while j < len(head):
            depth += {"[": 1, "]": -1}.get(head[j], 0)
            if depth == 0:
                break
            j += 1
        i = j + 1


def _last_name(path: str) -> str:
    """The type name of ``path``: ``fmt::Debug`` -> ``Debug``, ``Map<T>`` -> ``Map``."""
    path = path.strip().lstrip("&").strip()
    path = re.sub(r"^(?:mut|dyn|const)\s+", "", path)
    depth, cut = 0, len(path)
    for i, ch in enumerate(path):
        if ch == "<" and depth == 0:
            cut = i
            break
        depth += 1 if ch in "([" else -1 if ch in ")]" else 0
    words = _WORD.findall(path[:cut])
    return words[-1] if words and re.fullmatch(r"[\w:\s]*", path[:cut]) else ""


def _impl_names(rest: str) -> tuple[str, str]:
    """(self type, trait) of an ``impl`` head (the text after the attributes)."""
    m = _IMPL.search(rest)
    text = (rest[m.end() :] if m else rest).replace("->", "  ").lstrip()
    if text.startswith("<"):
        depth = 0
        for j, ch in enumerate(text):
            depth += 1 if ch == "<" else -1 if ch == ">" else 0
            if depth == 0:
                text = text[j + 1 :]
                break
    text = re.split(r"\bwhere\b", text)[0]
    depth = 0
    for j, ch in enumerate(text):
        depth += 1 if ch == "<" else -1 if ch == ">" else 0
        if depth == 0 and _FOR.match(text, j) and (j == 0 or not _is_word(text[j - 1])):
            return _last_name(text[j + 3 :]), _last_name(text[:j].replace("!", ""))
    return _last_name(text), ""


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _classify(head: str) -> tuple[str, str, str, bool, bool]:
    """(kind, name, trait, pinned, cfg_test) of an item from its head."""
    attrs, rest = _split_attributes(head)
    pinned = _PINNED_ATTRS.search(attrs) is not None
    cfg_test = _CFG_TEST.search(attrs) is not None
    if _IMPL.match(rest):
        name, trait = _impl_names(rest)
        return "impl", name, trait, pinned, cfg_test
    for pattern, kind in ((_FN, "fn"), (_MACRO, "macro")):
        m = pattern.match(rest)
        if m:
            return kind, m.group(1), "", pinned or m.group(1) == "main", cfg_test
    for pattern in (_NAMED, _VALUE):
        m = pattern.match(rest)
        if m:
            return m.group(1), m.group(2), "", pinned, cfg_test
    return "other", "", "", True, cfg_test


def items(code: str, start: int = 0, end: int | None = None) -> list[Item]:
    """The items of masked ``code[start:end]`` at its brace depth 0 (malformed: the ones before
    the first unbalanced bracket)."""
    end = len(code) if end is None else end
    found: list[Item] = []
    depth = 0
    item_start, body = start, -1
    for m in _DELIMS.finditer(code, start, end):
        ch, pos = m.group(0), m.start()
        if ch in "([{":
            if ch == "{" and depth == 0:
                body = pos
            depth += 1
            continue
        if ch in ")]}":
            depth -= 1
            if depth < 0:
                return found
            closing = ch == "}" and depth == 0
            inner = ch == "]" and depth == 0 and code[item_start:pos].lstrip().startswith("#!")
            if not inner and not closing:
                continue
            if closing and _ENDS_AT_SEMICOLON.match(_split_attributes(code[item_start:body])[1]):
                continue
        elif depth:
            continue
        head = code[item_start : body if body >= 0 else pos]
        kind, name, trait, pinned, cfg_test = _classify(head)
        lead = len(head) - len(head.lstrip())
        span = item_span(code, item_start + lead, pos + 1)
        inside = (body + 1, pos) if kind == "impl" and ch == "}" and body >= 0 else None
        found.append(Item(kind, name, trait, span[0], span[1], inside, pinned, cfg_test))
        item_start, body = pos + 1, -1
    return found


def words(text: str) -> Counter[str]:
    """How often each identifier occurs in the code of ``text``: comments left out; of string
    literals only what may name an item (``"{NAME}"`` in a format string, a literal that is a
    path such as ``#[serde(default = "make_x")]``)."""
    lexed = lex(text)
    counts = Counter(_WORD.findall(lexed.code))
    for value in lexed.values.values():
        if len(value) <= 300 and _PATH_LITERAL.fullmatch(value):
            counts.update(_WORD.findall(value))
        elif "{" in value:
            counts.update(_FORMAT_ARG.findall(value))
    return counts


def _count(code: str, spans: list[tuple[int, int]], name: str) -> int:
    """Occurrences of the word ``name`` in ``spans`` (never more than :func:`words` counts)."""
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    return sum(len(pattern.findall(code, s, e)) for s, e in spans)


def dead_spans(text: str, counts: Counter[str], tests_built: bool) -> list[tuple[int, int]]:
    """The spans of ``text`` whose items nothing else names (see the module's doc), given
    ``counts``: the word counts of every reachable Rust file, this one included."""
    code = lex(text).code
    top = items(code)
    if len(top) > _MAX_ITEMS:
        return []  # generated code: left to the other passes (this cut is only a shortcut)
    by_type: dict[str, list[tuple[int, int]]] = {}
    by_trait: dict[str, list[tuple[int, int]]] = {}
    for i in top:
        if i.kind == "impl":
            by_type.setdefault(i.name, []).append((i.start, i.end))
            if i.trait:
                by_trait.setdefault(i.trait, []).append((i.start, i.end))
    spans: list[tuple[int, int]] = []
    for item in top:
        if item.cfg_test:
            if not tests_built:
                spans.append((item.start, item.end))
            continue
        if item.pinned or item.kind in ("impl", "other") or not item.name:
            continue
        if item.kind == "mod" and "{" not in code[item.start : item.end]:
            continue  # an out-of-line ``mod name;``: the module cut's
        group = [(item.start, item.end), *by_trait.get(item.name, [])]
        if item.kind in _TYPE_KINDS:
            group += by_type.get(item.name, [])
        if counts[item.name] - _count(code, group, item.name) <= 0:
            spans += group
    for item in top:
        if item.kind != "impl" or item.trait or item.body is None or item.pinned:
            continue
        for member in items(code, *item.body):
            if member.cfg_test:
                if not tests_built:
                    spans.append((member.start, member.end))
            elif member.kind in ("fn", "const", "type") and not member.pinned:
                own = [(member.start, member.end)]
                if counts[member.name] - _count(code, own, member.name) <= 0:
                    spans.append((member.start, member.end))
    return _outermost(spans)


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(set(spans), key=lambda p: (p[0], -p[1])):
        if out and s < out[-1][1]:
            continue
        out.append((s, e))
    return out


def without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    pos = 0
    for s, e in spans:
        out.append(text[pos:s])
        pos = e
    out.append(text[pos:])
    return "".join(out)
