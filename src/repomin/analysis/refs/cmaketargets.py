"""The CMake targets a failing build does not need: one candidate that deletes them all.

A CMake project's configure step names every source of every target, so a traced build opens
them all and no file cut can take one: CMake stops when a listed source is missing. What can go
is a *target*: its ``add_executable``/``add_library`` command (or, for targets a ``foreach``
makes from a list, the list's element), the commands about it alone, the names of it in the
dependency lists of the others, and the sources no kept target lists, together.

The failing target comes from the build's own error lines in the baseline's failing output:
make's ``*** [dir/CMakeFiles/NAME.dir/...] Error 1`` and Ninja's ``FAILED: dir/CMakeFiles/
NAME.dir/...``. Kept: the failing targets and every target they link or depend on (literal
names in ``target_link_libraries`` and ``add_dependencies``); targets whose name or list this
reader cannot resolve are kept too. Everything else is one unit of the candidate.

What is read: every ``CMakeLists.txt`` of the tree (:mod:`repomin.analysis.cmakelex`);
``set(LIST ...)`` and ``list(APPEND LIST ...)`` of literal words; ``foreach(v ${LIST})``,
``foreach(v IN LISTS LIST)``, ``foreach(v IN ITEMS ...)`` and ``foreach(v a b ...)`` with
``${v}`` in the target commands of its body. Sources are the arguments of the target command
that name a file of the tree (relative to the directory, or after
``${CMAKE_CURRENT_SOURCE_DIR}/``). Bounds: files of at most :data:`MAX_BYTES`, and what
:mod:`repomin.analysis.cmakelex` reads; anything else is left alone. The oracle decides the
candidate; the caller splits it when it is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from repomin.analysis.cmakelex import Arg, Command, commands
from repomin.analysis.refs.text import without_spans
from repomin.failure.normalise import strip_ansi
from repomin.tree import Tree

#: CMakeLists files larger than this are not read.
MAX_BYTES = 1_000_000

_TARGET_COMMANDS = {b"add_executable", b"add_library"}
_TARGET_KEYWORDS = {
    b"STATIC",
    b"SHARED",
    b"MODULE",
    b"OBJECT",
    b"INTERFACE",
    b"EXCLUDE_FROM_ALL",
    b"WIN32",
    b"MACOSX_BUNDLE",
    b"IMPORTED",
    b"ALIAS",
    b"GLOBAL",
    b"UNKNOWN",
}
#: Commands whose arguments may name other targets (a deleted name is dropped from them).
_NAMING = {
    b"add_dependencies",
    b"add_custom_target",
    b"target_link_libraries",
    b"install",
}
#: Of those, the commands CMake refuses when no target is left in them.
_NEEDS_ONE = {b"add_dependencies", b"install"}
_FAILED = re.compile(
    r"(?:\*\*\* \[|^FAILED: )(?:[^\s\[\]]*/)?CMakeFiles/(?P<name>[^/\s\]]+)\.dir/", re.M
)
_VAR = re.compile(rb"\$\{([A-Za-z_][A-Za-z0-9_.+-]*)\}")


@dataclass(slots=True)
class Target:
    """One target of the tree and what deleting it takes."""

    name: str
    #: (CMakeLists path, start, end) spans that go with it.
    spans: list[tuple[str, int, int]] = field(default_factory=list)
    #: (path, start, end, names): a command that goes whole once every target it names goes.
    groups: list[tuple[str, int, int, frozenset[str]]] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)


def _lists(cmds: Sequence[Command]) -> dict[bytes, list[Arg]]:
    """Literal lists: ``set(NAME words...)`` and ``list(APPEND NAME words...)``."""
    lists: dict[bytes, list[Arg]] = {}
    for cmd in cmds:
        args = cmd.args
        if cmd.name == b"set" and len(args) > 1 and not args[0].quoted and _words(args[1:]):
            lists[args[0].text] = list(args[1:])
        elif (
            cmd.name == b"list"
            and len(args) > 2
            and args[0].text == b"APPEND"
            and args[1].text in lists
            and _words(args[2:])
        ):
            lists[args[1].text] = [*lists[args[1].text], *args[2:]]
    return lists


def _literal(text: bytes) -> bool:
    return bool(text) and b"$" not in text and b";" not in text and b"\\" not in text


def _words(args: Iterable[Arg]) -> bool:
    """Are all of ``args`` unquoted literal words (no variable, list or escape)?"""
    return all(not a.quoted and _literal(a.text) for a in args)


def _loops(
    cmds: Sequence[Command], lists: dict[bytes, list[Arg]]
) -> list[tuple[int, int, bytes, list[Arg]]]:
    """``(first, last, variable, items)`` per ``foreach`` whose items are literal words."""
    out: list[tuple[int, int, bytes, list[Arg]]] = []
    stack: list[tuple[int, bytes, list[Arg] | None]] = []
    for k, cmd in enumerate(cmds):
        if cmd.name == b"foreach" and cmd.args:
            var, rest = cmd.args[0].text, list(cmd.args[1:])
            items: list[Arg] | None = None
            if len(rest) == 1 and (m := _VAR.fullmatch(rest[0].text)) and m.group(1) in lists:
                items = lists[m.group(1)]
            elif rest and rest[0].text == b"IN" and len(rest) > 2 and rest[1].text == b"LISTS":
                names = [a.text for a in rest[2:]]
                if all(n in lists for n in names):
                    items = [a for n in names for a in lists[n]]
            elif rest and rest[0].text == b"IN" and len(rest) > 1 and rest[1].text == b"ITEMS":
                items = list(rest[2:]) if _words(rest[2:]) else None
            elif rest and _words(rest):
                items = rest
            stack.append((k, var, items))
        elif cmd.name == b"endforeach" and stack:
            first, var, items = stack.pop()
            if items is not None:
                out.append((first, k, var, items))
    return out


def targets(tree: Tree) -> tuple[dict[str, Target], set[str]]:
    """The targets the reader resolved, by name, and the names it saw but could not place.
    Every file's targets are read before any file's mentions of them (a top-level ``install``
    may name a target of a subdirectory)."""
    found: dict[str, Target] = {}
    unsure: set[str] = set()
    files: list[tuple[str, bytes, list[Command]]] = []
    for path, entry in sorted(tree.entries.items()):
        if path.rsplit("/", 1)[-1] != "CMakeLists.txt" or entry.kind != "file":
            continue
        if len(entry.data) > MAX_BYTES:
            continue
        cmds = commands(entry.data)
        if cmds is not None:
            files.append((path, entry.data, cmds))
    for path, data, cmds in files:
        _definitions(tree, path, data, cmds, found, unsure)
    for path, data, cmds in files:
        _mentions(path, data, cmds, found)
    return found, unsure


def _definitions(
    tree: Tree,
    path: str,
    data: bytes,
    cmds: list[Command],
    found: dict[str, Target],
    unsure: set[str],
) -> None:
    base = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    lists = _lists(cmds)
    loops = _loops(cmds, lists)
    inside = {k: loop for loop in loops for k in range(loop[0] + 1, loop[1])}
    for k, cmd in enumerate(cmds):
        if cmd.name not in _TARGET_COMMANDS or not cmd.args:
            continue
        loop = inside.get(k)
        if _literal(cmd.args[0].text):
            name = cmd.args[0].text.decode("utf-8", "replace")
            target = found.setdefault(name, Target(name))
            target.spans.append((path, cmd.start, cmd.end))
            target.sources |= _sources(tree, base, cmd.args[1:], {})
        elif loop is not None and cmd.args[0].text == b"${" + loop[2] + b"}":
            for item in loop[3]:
                name = item.text.decode("utf-8", "replace")
                target = found.setdefault(name, Target(name))
                target.spans.append((path, _spaced(data, item.start), item.end))
                target.sources |= _sources(tree, base, cmd.args[1:], {loop[2]: item.text})
        else:
            unsure.add(cmd.args[0].text.decode("utf-8", "replace"))


def _mentions(path: str, data: bytes, cmds: list[Command], found: dict[str, Target]) -> None:
    """The commands about one target go with it; a target's name goes from the dependency
    lists of others, and a list that names only deleted targets (``add_dependencies(x a)``,
    ``install(TARGETS a ...)``: CMake refuses them empty) goes whole."""
    for cmd in cmds:
        if not cmd.args or cmd.name in _TARGET_COMMANDS:
            continue
        owner = found.get(cmd.args[0].text.decode("utf-8", "replace"))
        if owner is not None and cmd.name in {b"target_link_libraries", b"add_dependencies"}:
            owner.links |= {a.text.decode("utf-8", "replace") for a in cmd.args[1:]}
        if owner is not None and _about_one(cmd):
            owner.spans.append((path, cmd.start, cmd.end))
            continue
        if cmd.name not in _NAMING:
            continue
        named: list[Target] = []
        for arg in cmd.args[1:]:
            target = found.get(arg.text.decode("utf-8", "replace"))
            if target is not None and not arg.quoted:
                target.spans.append((path, _spaced(data, arg.start), arg.end))
                named.append(target)
        if named and cmd.name in _NEEDS_ONE:
            group = frozenset(t.name for t in named)
            for target in named:
                target.groups.append((path, cmd.start, cmd.end, group))


def _spaced(data: bytes, start: int) -> int:
    """``start`` moved back over the spaces before a word (a deleted word leaves none)."""
    while start > 0 and data[start - 1 : start] in (b" ", b"\t"):
        start -= 1
    return start


def _about_one(cmd: Command) -> bool:
    """Is ``cmd`` about its first argument's target alone (it goes with the target)?"""
    if cmd.name == b"set_target_properties":
        return len(cmd.args) > 1 and cmd.args[1].text == b"PROPERTIES"
    return cmd.name.startswith((b"target_", b"add_dependencies"))


def _sources(tree: Tree, base: str, args: Iterable[Arg], env: dict[bytes, bytes]) -> set[str]:
    out: set[str] = set()
    for arg in args:
        text = _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), arg.text)
        text = text.replace(b"${CMAKE_CURRENT_SOURCE_DIR}/", b"")
        if text in _TARGET_KEYWORDS or b"$" in text:
            continue
        rel = base + text.decode("utf-8", "replace")
        if tree.entries.get(rel) is not None and tree.entries[rel].kind == "file":
            out.add(rel)
    return out


def failing_targets(outputs: Iterable[str]) -> list[str]:
    """The targets the build's own error lines name, first first (the first output that
    names any)."""
    for output in outputs:
        names = list(dict.fromkeys(m["name"] for m in _FAILED.finditer(strip_ansi(output))))
        if names:
            return names
    return []


def needless(tree: Tree, failures: Iterable[str]) -> list[str]:
    """The names of the targets the failing build does not need (see the module docstring)."""
    found, unsure = targets(tree)
    failing = [n for n in failing_targets(failures) if n in found]
    if not failing:
        return []
    keep: set[str] = set()
    todo = list(failing)
    while todo:
        name = todo.pop()
        if name not in keep:
            keep.add(name)
            todo.extend(n for n in found[name].links if n in found)
    return [n for n in sorted(found) if n not in keep and n not in unsure]


def without_targets(tree: Tree, names: Collection[str], protected: Callable[[str], bool]) -> Tree:
    """``tree`` with the targets ``names`` (those it still has) deleted: their commands, list
    elements and mentions, and the sources no other target lists (none protected). A target
    declared or named in a protected file stays whole."""
    found, _ = targets(tree)
    gone = [
        t
        for n, t in found.items()
        if n in names and not any(protected(path) for path, _, _ in t.spans)
    ]
    names = {t.name for t in gone}
    spans: dict[str, list[tuple[int, int]]] = {}
    for target in gone:
        for path, start, end in target.spans:
            spans.setdefault(path, []).append((start, end))
        for path, start, end, group in target.groups:
            if group <= names:
                spans.setdefault(path, []).append((start, end))
    out = tree
    for path, cut in spans.items():
        out = out.replace(path, without_spans(tree.entries[path].data, cut))
    needed = {s for n, t in found.items() if n not in names for s in t.sources}
    sources = {s for t in gone for s in t.sources} - needed
    return out.without(s for s in sources if not protected(s))


__all__ = [
    "Target",
    "failing_targets",
    "needless",
    "targets",
    "without_targets",
]
