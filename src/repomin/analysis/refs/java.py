"""Java references: package and type names, resolved over every ``.java`` file of the tree.

A file's references are found by tokens, not by a parser, so that a file which does not
compile is still read (conservatively):

* every dotted name ``a.b.C.m`` (in code and in string literals, for reflection) is tried
  prefix by prefix as a fully-qualified type (``a.b.C``, ``a.b.C.m``; nested classes live in
  their outer class's file, so ``a.b.Outer.Inner`` reaches ``a/b/Outer.java``);
* every identifier of the code (not of its string literals: a message's words name no type,
  and reflection by a simple name is impossible) is tried as a simple type name in the file's
  own package and in every package it imports with a wildcard (``import a.b.*;``), unless a
  single-type import names it (``import java.util.Objects;`` shadows a same-package
  ``Objects``, as in Java); single-type and static imports are dotted names, so they resolve
  by the first rule;
* each file reaches its package's ``package-info.java``;
* ``Class.forName(expr)`` / ``loadClass(expr)`` with a computed name adds no edge: the file is
  listed in :attr:`JavaIndex.dynamic_loaders`. Which class it loads is named somewhere the
  graph reads (a string literal, a service file, a build file: all scanned for dotted names)
  or nowhere; an edge to every Java file (the earlier rule) made one reachable utility such
  as ``ClassUtils`` keep a whole library and its tests, and the cut is only a proposal that
  the oracle decides (a rejected cut is bisected), so the graph guesses the likely case.

Types are indexed by the names every file declares in its code (``class``, ``interface``,
``enum``, ``record``, ``@interface``; nested ones too, which only over-approximates; a string
such as ``"expected=class org.x.Y"`` declares nothing), under the file's ``package``
declaration. Comments are ignored (Javadoc ``{@link}`` needs no class).
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache

from repomin.analysis.refs.context import Context
from repomin.analysis.refs.text import strip_c_comments, strip_c_literals

_PACKAGE = re.compile(r"^\s*package\s+([\w.\s]+?)\s*;", re.M)
_WILDCARD = re.compile(r"\bimport\s+(?:static\s+)?([\w$.\s]+?)\s*\.\s*\*\s*;")
_SINGLE = re.compile(r"\bimport\s+((?:[\w$]+\s*\.\s*)+[\w$]+)\s*;")
_DECLARES = re.compile(r"\b(?:class|interface|enum|record)\s+([A-Za-z_$][\w$]*)")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_DOTTED_SPACED = re.compile(r"[A-Za-z_$][\w$]*(?:\s*\.\s*[A-Za-z_$][\w$]*)+")
_DYNAMIC = re.compile(r"\b(?:Class\s*\.\s*forName|loadClass)\s*\(\s*(?!\")")
_EXPORTS = re.compile(r"\b(?:exports|opens)\s+([\w.]+)")


@lru_cache(maxsize=65536)
def scan(
    text: str,
) -> tuple[str, tuple[str, ...], tuple[str, ...], frozenset[str], tuple[str, ...], bool]:
    """(package, declared names, wildcard packages, identifiers, dotted names, dynamic)."""
    code = strip_c_comments(text)
    bare = strip_c_literals(text)  # names in code only, for declarations and simple names
    m = _PACKAGE.search(bare)
    package = re.sub(r"\s+", "", m.group(1)) if m else ""
    declared = tuple(dict.fromkeys(_DECLARES.findall(bare)))
    wildcards = tuple(re.sub(r"\s+", "", w) for w in _WILDCARD.findall(bare))
    shadowed = {re.sub(r"\s+", "", i).rpartition(".")[2] for i in _SINGLE.findall(bare)}
    idents = frozenset(_IDENT.findall(bare)) - shadowed
    dotted = tuple({re.sub(r"\s+", "", d) for d in _DOTTED_SPACED.findall(code)})
    dynamic = _DYNAMIC.search(code) is not None
    return package, declared, wildcards, idents, dotted, dynamic


class JavaIndex:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.paths = ctx.of_kind("java")
        #: Files whose edges were read that load a class by a computed name.
        self.dynamic_loaders: set[str] = set()

    def _scan(
        self, path: str
    ) -> tuple[str, tuple[str, ...], tuple[str, ...], frozenset[str], tuple[str, ...], bool]:
        return scan(self.ctx.text(path))

    @cached_property
    def types(self) -> dict[str, set[str]]:
        """Fully-qualified type name -> files declaring it (several: split packages)."""
        out: dict[str, set[str]] = {}
        for path in self.paths:
            package, declared, *_ = self._scan(path)
            stem = path.rpartition("/")[2][: -len(".java")]
            for name in {*declared, stem}:
                fqn = f"{package}.{name}" if package else name
                out.setdefault(fqn, set()).add(path)
        return out

    @cached_property
    def packages(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for path in self.paths:
            out.setdefault(self._scan(path)[0], set()).add(path)
        return out

    @cached_property
    def package_info(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for path in self.paths:
            if path.endswith("package-info.java"):
                out.setdefault(self._scan(path)[0], set()).add(path)
        return out

    def resolve_dotted(self, name: str) -> set[str]:
        """Files of the longest... every prefix of ``name`` that is a known type."""
        found: set[str] = set()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            hit = self.types.get(".".join(parts[:i]))
            if hit:
                found |= hit
        return found

    def edges(self, path: str) -> set[str]:
        package, _declared, wildcards, idents, dotted, dynamic = self._scan(path)
        if dynamic:
            self.dynamic_loaders.add(path)
        found: set[str] = set(self.package_info.get(package, ()))
        for name in dotted:
            found |= self.resolve_dotted(name)
        scopes = [package, *wildcards]
        types = self.types
        for ident in idents:
            for scope in scopes:
                hit = types.get(f"{scope}.{ident}" if scope else ident)
                if hit:
                    found |= hit
        if path.endswith("module-info.java"):
            for exported in _EXPORTS.findall(strip_c_comments(self.ctx.text(path))):
                found |= self.packages.get(exported, set())
        found.discard(path)
        return found
