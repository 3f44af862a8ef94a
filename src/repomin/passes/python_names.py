"""Which statements of a Python file bind a name that code still present loads.

Deleting ``import re`` while a method still calls ``re.compile``, or ``pos = 0`` while the loop
below reads ``pos``, fails for certain when that code runs. The ``python`` pass's statement
search therefore *holds* such a statement back (``learn_delete``'s ``hold``): it is not put
into a group or re-checked while a load of one of its names is still present and no other
present statement binds that name, and it is tested alone once when nothing else is left to
try. So its users go first, and the statement is tried after they are gone -- not once per
acceptance before. A hold is a hint about order, never evidence: every held survivor is still
tested against the final tree, so the search stays 1-minimal over its units.

A method's ``self.name`` (its first parameter's attributes) counts as a name of its class,
loaded or bound wherever the method is: ``self._rules = []`` in ``__init__`` waits while
another method still reads ``self._rules``, and ``def add`` while one calls ``self.add``.
Names are resolved as Python resolves them, approximately, from ``ast``: a function's
parameters and every name it binds are its locals (unless declared ``global``/``nonlocal``);
a class body's names are not seen by its methods; comprehension variables count as the
enclosing scope's (they can only hide a load, which holds less). A load nothing binds is a
builtin. Loads from other files count for the module's own names: ``from M import name``,
``from P import M`` / ``import P.M [as x]`` with ``M.name`` / ``x.name``, absolute or relative
(``OtherFiles``). Strings, ``getattr``, star imports and ``__all__`` are not loads.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import warnings
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from repomin.passes.python_source import PySource, Unit

#: Files read for cross-file loads are skipped above this size (generated code, vendored blobs).
OTHER_FILE_LIMIT = 1 << 20


@dataclass
class _Scope:
    node: ast.AST | None  # None: the module
    kind: str  # "module", "function" or "class"
    parent: _Scope | None
    start: int  # byte span of the scope's node (the whole file for the module)
    end: int
    bound: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    #: A method's first parameter (``self``, ``cls``): its attributes are the class's names.
    instance: str | None = None


@dataclass(frozen=True, slots=True)
class _Site:
    offset: int
    scope: int  # index into the scopes
    name: str
    store: bool
    #: A load inside a function (or lambda) the resolved scope does not run itself: it runs
    #: only if that function is called, so it does not hold the binding.
    deferred: bool = False


class _Collector:
    """Two walks over a module: the names each scope binds, then every load and store site
    with the scope it resolves to."""

    def __init__(self, src: PySource) -> None:
        self.src = src
        self.scopes: list[_Scope] = [_Scope(None, "module", None, 0, len(src.data))]
        self.of_node: dict[int, int] = {}
        self.sites: list[_Site] = []

    def _at(self, lineno: int | None, col: int | None) -> int:
        """The byte offset of ``(lineno, col)`` (``ast``'s columns are UTF-8 byte offsets)."""
        if lineno is None or not 0 < lineno <= len(self.src.lines):
            return 0
        return self.src.starts[lineno - 1] + (col or 0)

    def offset(self, node: ast.AST) -> int:
        return self._at(getattr(node, "lineno", None), getattr(node, "col_offset", None))

    def end_offset(self, node: ast.AST) -> int:
        lineno = getattr(node, "end_lineno", None) or getattr(node, "lineno", None)
        return self._at(lineno, getattr(node, "end_col_offset", None))

    # -- walk 1: what every scope binds ---------------------------------------------------------

    def declare(self, body: Iterable[ast.AST], scope: int) -> None:
        for node in body:
            self._declare(node, scope)

    def _declare(self, node: ast.AST, scope: int) -> None:
        here = self.scopes[scope]
        if isinstance(node, _SCOPE_NODES):
            if not isinstance(node, ast.Lambda):
                here.bound.add(node.name)
            self.declare(_outside(node), scope)
            inner = self._new_scope(node, scope)
            if not isinstance(node, ast.ClassDef):
                self.scopes[inner].bound.update(a.arg for a in _all_args(node.args))
            self.declare(_inside(node), inner)
            return
        if isinstance(node, ast.Global):
            here.declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            here.declared_nonlocal.update(node.names)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            here.bound.update(_import_binding(a) for a in node.names if a.name != "*")
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            here.bound.add(node.id)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            here.bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            here.bound.add(node.rest)
        for child in ast.iter_child_nodes(node):
            self._declare(child, scope)

    def _new_scope(self, node: ast.AST, parent: int) -> int:
        kind = "class" if isinstance(node, ast.ClassDef) else "function"
        start = self.offset(node)
        for dec in getattr(node, "decorator_list", []):
            start = min(start, self.offset(dec))
        scope = _Scope(node, kind, self.scopes[parent], start, self.end_offset(node))
        args = getattr(node, "args", None)
        if self.scopes[parent].kind == "class" and isinstance(args, ast.arguments):
            positional = [*args.posonlyargs, *args.args]
            scope.instance = positional[0].arg if positional else None
        self.scopes.append(scope)
        self.of_node[id(node)] = len(self.scopes) - 1
        return len(self.scopes) - 1

    # -- walk 2: the sites ----------------------------------------------------------------------

    def resolve(self, name: str, scope: int, store: bool) -> int | None:
        """The scope a name at ``scope`` refers to; None: a builtin (or nothing)."""
        index: int | None = scope
        first = True
        while index is not None:
            here = self.scopes[index]
            if name in here.declared_global:
                return 0 if store or name in self.scopes[0].bound else None
            if name in here.declared_nonlocal:
                first = False
            elif (first or here.kind != "class") and (name in here.bound or (store and first)):
                return index
            first = False
            index = self._index(here.parent)
        return None

    def _index(self, scope: _Scope | None) -> int | None:
        if scope is None:
            return None
        return 0 if scope.node is None else self.of_node[id(scope.node)]

    def collect(self, body: Iterable[ast.AST], scope: int) -> None:
        for node in body:
            self._collect(node, scope)

    def _collect(self, node: ast.AST, scope: int) -> None:
        if isinstance(node, _SCOPE_NODES):
            if not isinstance(node, ast.Lambda):
                self._site(node.name, self.offset(node), scope, store=True)
            self.collect(_outside(node), scope)
            inner = self.of_node[id(node)]
            if not isinstance(node, ast.ClassDef):
                for arg in _all_args(node.args):
                    self._site(arg.arg, self.offset(arg), inner, store=True)
            self.collect(_inside(node), inner)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    self._site(_import_binding(alias), self.offset(node), scope, store=True)
            return
        if isinstance(node, ast.Name):
            self._site(node.id, self.offset(node), scope, not isinstance(node.ctx, ast.Load))
            return
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            self._attribute(node, node.value.id, scope)
        for child in ast.iter_child_nodes(node):
            self._collect(child, scope)

    def _attribute(self, node: ast.Attribute, base: str, scope: int) -> None:
        """``self.name`` in a method: a name of the method's class (a load wherever it is)."""
        method = self.resolve(base, scope, store=False)
        if method is None or self.scopes[method].instance != base:
            return
        parent = self.scopes[method].parent
        owner = self._index(parent)
        if owner is not None:
            store = not isinstance(node.ctx, ast.Load)
            self.sites.append(_Site(self.offset(node), owner, node.attr, store))

    def _site(self, name: str, offset: int, scope: int, store: bool) -> None:
        target = self.resolve(name, scope, store)
        if target is not None:
            deferred = self._runner(scope) != self._runner(target)
            self.sites.append(_Site(offset, target, name, store, deferred))

    def _runner(self, scope: int) -> int:
        """The innermost function (or the module) whose execution runs code at ``scope``."""
        index: int | None = scope
        while index is not None and self.scopes[index].kind == "class":
            index = self._index(self.scopes[index].parent)
        return 0 if index is None else index


_SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_ScopeNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda


def _outside(node: _ScopeNode) -> list[ast.AST]:
    """What a definition evaluates in the enclosing scope: decorators, bases and keywords,
    defaults, annotations."""
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    args = node.args
    parts: list[ast.AST] = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        return parts
    parts += [a.annotation for a in _all_args(args) if a.annotation is not None]
    return [*node.decorator_list, *parts, *([node.returns] if node.returns else [])]


def _inside(node: _ScopeNode) -> list[ast.AST]:
    return [node.body] if isinstance(node, ast.Lambda) else list(node.body)


def _all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


def _import_binding(alias: ast.alias) -> str:
    return alias.asname or alias.name.partition(".")[0]


class NameHolds:
    """The held statements among ``units`` (spans of ``src``) for any set still present.

    ``external``: names of the module that other files load (:func:`loaded_from_elsewhere`);
    each counts as a load outside every unit."""

    def __init__(self, src: PySource, units: Sequence[Unit], external: Collection[str]) -> None:
        collector = _Collector(src)
        collector.declare(src.module.body, 0)
        collector.collect(src.module.body, 0)
        order = sorted(range(len(units)), key=lambda i: units[i].start)
        starts = [units[i].start for i in order]

        def owner(offset: int) -> int | None:
            k = bisect.bisect_right(starts, offset) - 1
            if k >= 0 and offset < units[order[k]].end:
                return order[k]
            return None

        scopes = collector.scopes
        self.binds: list[set[tuple[int, str]]] = [set() for _ in units]
        self.loads: dict[tuple[int, str], list[int | None]] = {}
        self.stores: dict[tuple[int, str], list[int | None]] = {}
        for site in collector.sites:
            key = (site.scope, site.name)
            unit = owner(site.offset)
            if not site.store:
                if not site.deferred:
                    self.loads.setdefault(key, []).append(unit)
                continue
            self.stores.setdefault(key, []).append(unit)
            scope = scopes[site.scope]
            if unit is None:
                continue
            inside = units[unit].start <= scope.start and scope.end <= units[unit].end
            if scope.node is None or not inside:  # a scope the unit does not define
                self.binds[unit].add(key)
        for name in external:
            self.loads.setdefault((0, name), []).append(None)

    def held(self, present: Collection[int]) -> set[int]:
        """Units of ``present`` that bind a name some other present code (or another file)
        loads, with no other present binding of it."""
        alive = set(present)

        def live(owners: Sequence[int | None], unit: int) -> bool:
            return any(o != unit and (o is None or o in alive) for o in owners)

        out: set[int] = set()
        for unit in alive:
            for key in self.binds[unit]:
                if live(self.loads.get(key, ()), unit) and not live(self.stores[key], unit):
                    out.add(unit)
                    break
        return out


# -- loads from other files --------------------------------------------------------------------

#: Per file, ``(module key, name)`` pairs it loads: ``abs:a.b`` for an absolute module name
#: (any file whose dotted path ends so), ``rel:a/b`` for a relative import's exact path.
_Loads = frozenset[tuple[str, str]]
_CACHE: dict[tuple[str, bytes], _Loads | None] = {}
_CACHE_LIMIT = 8192
#: Above this many Python files the other files are not read (a hint is not worth the time).
OTHER_FILES_LIMIT = 500


def _loads_of(path: str, data: bytes) -> _Loads | None:
    key = (path, hashlib.blake2b(data, digest_size=16).digest())
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[key] = _scan_loads(path, data)
    return _CACHE[key]


def _scan_loads(path: str, data: bytes) -> _Loads | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    here = _module_path(path)
    package = here if path.rpartition("/")[2].startswith("__init__.") else here[:-1]
    found: set[tuple[str, str]] = set()
    aliases: dict[str, set[str]] = {}  # a name this file binds to a module -> its keys
    chains: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: max(0, len(package) - (node.level - 1))]
                parts = [*base, *node.module.split(".")] if node.module else list(base)
                key = "rel:" + "/".join(parts)
            else:
                parts = node.module.split(".") if node.module else []
                key = "abs:" + ".".join(parts)
            for alias in node.names:
                if alias.name == "*":
                    continue
                found.add((key, alias.name))
                if node.level:
                    sub = "rel:" + "/".join([*parts, alias.name])
                else:
                    sub = "abs:" + ".".join([*parts, alias.name])
                aliases.setdefault(alias.asname or alias.name, set()).add(sub)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases.setdefault(alias.asname, set()).add("abs:" + alias.name)
                else:
                    aliases.setdefault(alias.name, set()).add("abs:" + alias.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain = _chain(node)
            if chain is not None:
                chains.add(chain)
    for chain in chains:
        for bound, keys in aliases.items():
            if chain.startswith(bound + "."):
                name = chain[len(bound) + 1 :].partition(".")[0]
                found.update((k, name) for k in keys)
    return frozenset(found)


def _chain(node: ast.Attribute) -> str | None:
    parts = [node.attr]
    value: ast.expr = node.value
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    if not isinstance(value, ast.Name):
        return None
    parts.append(value.id)
    return ".".join(reversed(parts))


def _module_path(path: str) -> list[str]:
    """``a/b/c.py`` -> ``[a, b, c]``; ``a/b/__init__.py`` -> ``[a, b]``."""
    parts = path.split("/")
    stem = parts[-1].rpartition(".")[0] or parts[-1]
    return parts[:-1] if stem == "__init__" else [*parts[:-1], stem]


def loaded_from_elsewhere(files: Mapping[str, bytes], path: str) -> frozenset[str]:
    """Names of the module at ``path`` that the other Python files of ``files`` load (none
    when there are more than :data:`OTHER_FILES_LIMIT` of them)."""
    if len(files) > OTHER_FILES_LIMIT:
        return frozenset()
    target = _module_path(path)
    keys = {"abs:" + ".".join(target[k:]) for k in range(len(target))}
    keys.add("rel:" + "/".join(target))
    found: set[str] = set()
    for other, data in files.items():
        if other == path or len(data) > OTHER_FILE_LIMIT:
            continue
        loads = _loads_of(other, data)
        if loads:
            found.update(name for key, name in loads if key in keys)
    return frozenset(found)


# -- bindings freed by deleted readers ---------------------------------------------------------


def loaded_names(module: ast.Module) -> frozenset[str]:
    """Every name ``module`` loads anywhere (in any scope, run now or later), every attribute
    name it reads or writes (``self.size``), and the strings of an ``__all__`` list: what
    might still read a binding of that name."""
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            names.update(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    return frozenset(names)


def one_line_bindings(
    src: PySource, units: Sequence[Unit] | None = None
) -> list[tuple[Unit, frozenset[str]]]:
    """The one-line units of ``src`` (``PySource.one_line_units``, or those of ``units``)
    that bind a name, with the names they bind (none when the walk cannot read the file)."""
    lines = [
        u
        for u in (src.one_line_units() if units is None else units)
        if u.end - u.start == len(src.line(u.line))
    ]
    try:
        binds = NameHolds(src, lines, ()).binds
    except RecursionError:  # an expression nested deeper than the walk goes
        return []
    return [
        (u, frozenset(name for _, name in keys))
        for u, keys in zip(lines, binds, strict=True)
        if keys
    ]


def bindings_read(src: PySource, units: Sequence[Unit], loaded: Collection[str]) -> set[bytes]:
    """The text of the one-line units of ``units`` that bind a name ``loaded`` holds."""
    return {
        src.data[u.start : u.end]
        for u, names in one_line_bindings(src, units)
        if names & set(loaded)
    }
