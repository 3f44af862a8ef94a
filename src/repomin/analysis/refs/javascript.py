"""JavaScript/TypeScript references: ``require``/``import`` specifiers resolved like Node.

* literal specifiers of ``require(...)``, ``require.resolve(...)``, ``import ... from``,
  ``export ... from``, side-effect ``import '...'``, dynamic ``import(...)`` and TypeScript
  ``/// <reference path>``; comments are not skipped (over-approximation only);
* relative specifiers: the file, then the extensions, then a directory (its ``package.json``
  ``main``/``module``/``browser``/``types``/``exports`` targets and ``index.*``); a ``.js``
  specifier also finds the ``.ts``/``.tsx`` source;
* bare specifiers (``pkg``, ``pkg/sub``, ``@scope/pkg``): ``node_modules/pkg`` in the file's
  directory and every directory above it, the nearest one that exists (Node's lookup); a bare
  specifier that no ``node_modules`` holds is also tried from the root and ``src/``
  (``baseUrl``-style aliases);
* ``#name`` specifiers: every target of the nearest ``package.json`` ``imports`` map;
* every file reaches the nearest ``package.json`` above it (Node reads its ``type``);
* a ``require``/``import()`` whose argument is not a literal reaches every JavaScript file of
  the file's own package (the nearest directory with a ``package.json``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from repomin.analysis.refs.context import Context, in_node_modules
from repomin.analysis.refs.text import ancestors, join, parent

_LITERAL = r"""(['"`])([^'"`\n$]*)\1"""
_SPECIFIERS = [
    re.compile(r"\brequire(?:\s*\.\s*resolve)?\s*\(\s*" + _LITERAL + r"\s*[,)]"),
    re.compile(r"\bimport\s*\(\s*" + _LITERAL),
    re.compile(r"\bfrom\s*" + _LITERAL),
    re.compile(r"\bimport\s*" + _LITERAL),
    re.compile(r"///\s*<reference\s+path\s*=\s*" + _LITERAL),
]
_CALL = re.compile(r"\b(?:require(?:\s*\.\s*resolve)?|import)\s*\(\s*")
_STARTS_LITERAL = re.compile(r"""(['"`])[^'"`\n$]*\1\s*[,)]""")

EXTENSIONS = (
    ".js",
    ".mjs",
    ".cjs",
    ".json",
    ".node",
    ".ts",
    ".tsx",
    ".d.ts",
    ".jsx",
    ".mts",
    ".cts",
)
_PACKAGE_FIELDS = ("main", "module", "browser", "types", "typings", "exports", "bin", "imports")


@lru_cache(maxsize=65536)
def scan(text: str) -> tuple[tuple[str, ...], bool]:
    """(literal specifiers, whether a require/import call has a computed argument)."""
    specs: dict[str, None] = {}
    for pattern in _SPECIFIERS:
        for m in pattern.finditer(text):
            specs[m.group(2)] = None
    dynamic = any(not _STARTS_LITERAL.match(text, m.end()) for m in _CALL.finditer(text))
    return tuple(s for s in specs if s), dynamic


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)


@lru_cache(maxsize=16384)
def manifest_targets(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(targets of the entry fields, targets of ``imports``) of a ``package.json``."""
    try:
        data = json.loads(text)
    except ValueError:
        return (), ()
    if not isinstance(data, dict):
        return (), ()
    entry = [t for f in _PACKAGE_FIELDS if f != "imports" for t in _leaves(data.get(f))]
    return tuple(entry), tuple(_leaves(data.get("imports")))


class JavaScriptIndex:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.paths = ctx.of_kind("javascript")

    def _manifest(self, directory: str) -> str | None:
        p = f"{directory}/package.json" if directory else "package.json"
        return p if p in self.ctx.files else None

    def nearest_manifest(self, path: str) -> str | None:
        for d in ancestors(path):
            m = self._manifest(d)
            if m:
                return m
        return None

    def resolve_file(self, target: str) -> set[str]:
        files = self.ctx.files
        if target in files:
            return {target}
        found = {target + ext for ext in EXTENSIONS if target + ext in files}
        stem, dot, ext = target.rpartition(".")
        if dot and ext in ("js", "jsx", "mjs", "cjs"):
            found |= {
                stem + e for e in (".ts", ".tsx", ".mts", ".cts", ".d.ts") if stem + e in files
            }
        if target in self.ctx.dirs or not target:
            found |= self.resolve_package(target)
        return found

    def resolve_package(self, directory: str) -> set[str]:
        found: set[str] = set()
        manifest = self._manifest(directory)
        if manifest:
            found.add(manifest)
            found |= self.manifest_edges(manifest)
        prefix = directory + "/" if directory else ""
        found |= {
            prefix + "index" + e for e in EXTENSIONS if prefix + "index" + e in self.ctx.files
        }
        return found

    def manifest_edges(self, manifest: str) -> set[str]:
        base = parent(manifest)
        entry, imports = manifest_targets(self.ctx.text(manifest))
        found: set[str] = set()
        for target in (*entry, *imports):
            if "*" in target:
                found |= self._pattern(base, target)
                continue
            joined = join(base, target)
            if joined is not None and joined != base:
                found |= self.resolve_file(joined)
        return found

    def _pattern(self, base: str, target: str) -> set[str]:
        head, _star, tail = target.partition("*")
        joined = join(base, head or ".")
        if joined is None:
            return set()
        prefix = joined + "/" if head.endswith("/") and joined else joined
        return {f for f in self.ctx.files if f.startswith(prefix) and f.endswith(tail)}

    def _bare(self, path: str, spec: str) -> set[str]:
        parts = spec.split("/")
        n = 2 if spec.startswith("@") and len(parts) > 1 else 1
        name, sub = "/".join(parts[:n]), "/".join(parts[n:])
        for d in ancestors(path):
            if d.rpartition("/")[2] == "node_modules":
                continue
            pkg = f"{d}/node_modules/{name}" if d else f"node_modules/{name}"
            if pkg in self.ctx.dirs:
                found = self.resolve_package(pkg) if not sub else self.resolve_file(f"{pkg}/{sub}")
                if sub:
                    manifest = self._manifest(pkg)
                    if manifest:
                        found |= {manifest} | self.manifest_edges(manifest)
                return found
        found = set()
        for base in ("", "src"):
            joined = join(base, spec)
            if joined:
                found |= self.resolve_file(joined)
        return found

    def resolve(self, path: str, spec: str) -> set[str]:
        if spec.startswith("node:"):
            return set()
        if spec.startswith("#"):
            manifest = self.nearest_manifest(path)
            return self.manifest_edges(manifest) if manifest else set()
        if spec.startswith((".", "/")):
            joined = join(parent(path), spec)
            return self.resolve_file(joined) if joined is not None else set()
        return self._bare(path, spec)

    def package_root(self, path: str) -> str:
        """``node_modules/name`` (or ``@scope/name``) of the innermost one holding ``path``;
        outside ``node_modules`` the directory of the nearest ``package.json`` (or the root)."""
        parts = path.split("/")
        if "node_modules" in parts[:-1]:
            at = len(parts) - 1 - parts[:-1][::-1].index("node_modules")
            n = 2 if parts[at].startswith("@") else 1
            return "/".join(parts[: min(at + n, len(parts) - 1)])
        manifest = self.nearest_manifest(path)
        return parent(manifest) if manifest else ""

    def _package_files(self, path: str) -> list[str]:
        root = self.package_root(path)
        prefix = root + "/" if root else ""
        return [
            p for p in self.paths if p.startswith(prefix) and not in_node_modules(p[len(prefix) :])
        ]

    def edges(self, path: str) -> set[str]:
        specs, dynamic = scan(self.ctx.text(path))
        found: set[str] = set()
        manifest = self.nearest_manifest(path)
        if manifest:
            found.add(manifest)
        if dynamic:
            found.update(self._package_files(path))
        for spec in specs:
            found |= self.resolve(path, spec)
        found.discard(path)
        return found
