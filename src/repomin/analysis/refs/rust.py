"""Rust references: the module tree rustc loads, from the crate roots ``Cargo.toml`` declares.

* A ``Cargo.toml`` reaches the crate roots of the target kinds the command builds (see
  :mod:`repomin.analysis.refs.cargo`: ``cargo build`` builds the library, the binaries and the
  build script, not tests, examples or benches), its workspace members' manifests and its
  ``path`` dependencies' manifests. A Rust file under no package that defines ``fn main`` (or
  is a ``lib.rs``) is a root of its own (``rustc x.rs``).
* ``mod name;`` reaches ``name.rs`` and ``name/mod.rs`` in the declaring file's module
  directory: a ``mod.rs`` file's own directory; ``a.rs``'s directory ``a/`` (the 2018 layout);
  for a crate root, a ``lib.rs``/``main.rs``/``build.rs`` or a file loaded through ``#[path]``
  or ``include!``, both (where rustc's choice depends on how the file is loaded). An enclosing
  inline module ``mod m { … }`` adds ``m/`` (or its ``#[path]``).
* ``#[path = "p"] mod name;`` reaches ``p`` relative to the file's directory (inside inline
  modules: relative to their module directory), and the default files too (a
  ``#[cfg_attr(…, path = …)]`` applies only sometimes). ``#[cfg(…)]`` modules are edges.
* ``include!``, ``include_str!``, ``include_bytes!`` reach their literal path, relative to the
  file's directory (after ``env!("CARGO_MANIFEST_DIR")``: to the package's directory).
* Every other short string literal that is a path of the tree reaches that file (a build
  script's ``cc::Build::file("src/x.c")``, a test harness's ``"tests/ui/x.rs"``).

Comments and literals never declare a module (:mod:`repomin.analysis.refs.rustsrc`). No path
leaving the tree (``..`` above the root, absolute) is followed.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from repomin.analysis.refs.cargo import KINDS, command_kinds, linked_manifests, parse, targets
from repomin.analysis.refs.context import Context
from repomin.analysis.refs.rustsrc import ModDecl, scan
from repomin.analysis.refs.text import ancestors, join, parent, resolve_token

_OWN_DIR_NAMES = frozenset({"lib.rs", "main.rs", "build.rs"})


def _candidates(bases: list[str], decl: ModDecl, own: str) -> set[str]:
    """The files ``decl`` may load, with ``bases`` its module directories and ``own`` the
    declaring file's directory (where an outer ``#[path]`` is relative to)."""
    for name, paths in decl.inline:
        bases = [d for b in bases for p in (paths or (name,)) if (d := join(b, p)) is not None]
    found: set[str | None] = set()
    for b in bases:
        found |= {join(b, f"{decl.name}.rs"), join(b, f"{decl.name}/mod.rs")}
    for p in decl.paths:
        found |= {join(b, p) for b in (bases if decl.inline else [own])}
    return {f for f in found if f}


class RustIndex:
    def __init__(self, ctx: Context, command: str = "") -> None:
        self.ctx = ctx
        self.paths = ctx.of_kind("rust")
        self.kinds = command_kinds(command)

    # -- manifests ---------------------------------------------------------------------------

    @cached_property
    def manifests(self) -> dict[str, dict[str, Any]]:
        """Every ``Cargo.toml`` of the tree that is TOML, by path."""
        out: dict[str, dict[str, Any]] = {}
        for path in sorted(self.ctx.by_basename.get("Cargo.toml", ())):
            if self.ctx.is_text(path):
                data = parse(self.ctx.text(path))
                if data is not None:
                    out[path] = data
        return out

    def manifest_edges(self, path: str) -> set[str] | None:
        """What a manifest reaches (None when ``path`` is no manifest that parses)."""
        data = self.manifests.get(path)
        if data is None:
            return None
        directory = parent(path)
        found = targets(directory, data, self.ctx.files, self.kinds)
        return found | linked_manifests(directory, data, self.ctx.files, self.ctx.dirs)

    @cached_property
    def package_dirs(self) -> frozenset[str]:
        return frozenset(parent(p) for p, data in self.manifests.items() if "package" in data)

    def package_of(self, path: str) -> str | None:
        """The directory of the innermost package ``path`` lies in."""
        return next((d for d in ancestors(path) if d in self.package_dirs), None)

    @cached_property
    def crate_roots(self) -> frozenset[str]:
        """Every crate root of every kind (whatever the command builds), and the orphans."""
        found: set[str] = set(self.orphan_roots)
        for path, data in self.manifests.items():
            found |= targets(parent(path), data, self.ctx.files, KINDS)
        return frozenset(found)

    @cached_property
    def orphan_roots(self) -> frozenset[str]:
        """Rust files under no package that define ``fn main`` or are a ``lib.rs``."""
        return frozenset(
            p
            for p in self.paths
            if self.package_of(p) is None
            and (p.rpartition("/")[2] == "lib.rs" or scan(self.ctx.text(p)).defines_main)
        )

    # -- modules -----------------------------------------------------------------------------

    @cached_property
    def attached(self) -> frozenset[str]:
        """Files some ``#[path]`` or ``include!`` of the tree may load (rustc reads their
        ``mod`` declarations as a ``mod.rs`` file's, or the includer's)."""
        found: set[str] = set()
        for path in self.paths:
            found |= self._includes(path)
            for decl in scan(self.ctx.text(path)).mods:
                if decl.paths:
                    found |= _candidates(self._both_dirs(path), decl, parent(path))
        return frozenset(found)

    def _both_dirs(self, path: str) -> list[str]:
        stem = join(parent(path), path.rpartition("/")[2].removesuffix(".rs"))
        return [parent(path)] + ([stem] if stem is not None else [])

    def module_dirs(self, path: str) -> list[str]:
        """Where the ``mod name;`` declarations of ``path`` (outside inline modules) look."""
        name = path.rpartition("/")[2]
        if name == "mod.rs":
            return [parent(path)]
        both = self._both_dirs(path)
        if name in _OWN_DIR_NAMES or path in self.crate_roots or path in self.attached:
            return both
        return both[1:]

    def is_crate_root(self, path: str) -> bool:
        return path in self.crate_roots or path.rpartition("/")[2] in ("lib.rs", "main.rs")

    def declared(self, path: str, decl: ModDecl) -> set[str]:
        """The files of the tree an out-of-line ``decl`` of ``path`` may load."""
        if decl.inline_body:
            return set()
        return _candidates(self.module_dirs(path), decl, parent(path)) & self.ctx.files

    def _includes(self, path: str) -> set[str]:
        package = self.package_of(path)
        found: set[str | None] = set()
        for value, manifest_dir in scan(self.ctx.text(path)).includes:
            if manifest_dir and package is not None:
                found.add(join(package, value.lstrip("/")))
            else:
                found.add(join(parent(path), value))
        return {f for f in found if f} & self.ctx.files

    def edges(self, path: str) -> set[str]:
        found: set[str] = set()
        for decl in scan(self.ctx.text(path)).mods:
            found |= self.declared(path, decl)
        found |= self._includes(path)
        package = self.package_of(path)
        for literal in scan(self.ctx.text(path)).literals:
            found |= resolve_token(literal, parent(path), self.ctx.files)
            if package:
                found |= resolve_token(literal, package, self.ctx.files)
        found.discard(path)
        return found
