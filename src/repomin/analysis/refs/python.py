"""Python references: imports, ``__init__`` chains, literal module names.

* ``import a.b.c`` / ``from a.b import c``: the modules ``a``, ``a.b``, ``a.b.c`` (``c`` may be
  a submodule), each as ``x.py``, ``x.pyi`` or ``x/__init__.py``;
* relative imports resolve against the file's own package directory;
* every file reaches the ``__init__.py`` files of its package chain (importing it runs them);
* every string literal that is a dotted name is tried as a module, absolute and relative to
  the file's package (``importlib.import_module("a.b")``, ``__import__("x")``, test-module
  lists, ``__all__``);
* a call of ``import_module`` / ``__import__`` / ``run_module`` / ``run_path`` /
  ``load_source`` / ``spec_from_file_location`` whose first argument is not a literal reaches
  every Python file of the file's top-level package (the whole tree outside a package);
* a file that does not parse is read by tokens: every dotted name and every ``import x`` word.

Absolute names: a file ``R/a/b/c.py`` whose directories ``a`` and ``b`` hold ``__init__.py``
(``R`` does not) is known as ``a.b.c`` and by every longer suffix of its path (``R.a.b.c``:
namespace packages, other ``sys.path`` entries). Shorter suffixes (``b.c``) would need a
package directory on ``sys.path`` and are not indexed.
"""

from __future__ import annotations

import ast
import re
from functools import cached_property, lru_cache

from repomin.analysis.refs.context import Context
from repomin.analysis.refs.text import dotted_names, parent

_NAME = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*$")
#: ``-p name`` / ``-pname`` / ``-p=name`` in a pytest configuration (not ``-p no:name``).
_PLUGIN = re.compile(r"(?:^|[\s\"'=,\[])-p\s*=?\s*([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)(?![\w:])")
#: The files pytest reads its configuration from.
PYTEST_CONFIGS = frozenset({"pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
_TOKEN_IMPORT = re.compile(r"\b(?:import|from)\s+(\.*[\w.]*)")
_DYNAMIC = frozenset(
    {
        "import_module",
        "__import__",
        "run_module",
        "run_path",
        "load_source",
        "load_module",
        "spec_from_file_location",
        "find_spec",
        "SourceFileLoader",
    }
)

#: (absolute names, (level, module or "", names imported from it), literal names, dynamic)
Scan = tuple[tuple[str, ...], tuple[tuple[int, str, tuple[str, ...]], ...], tuple[str, ...], bool]


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


@lru_cache(maxsize=65536)
def scan(text: str) -> Scan:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return _scan_tokens(text)
    absolute: list[str] = []
    relative: list[tuple[int, str, tuple[str, ...]]] = []
    literals: list[str] = []
    dynamic = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            absolute += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = tuple(a.name for a in node.names if a.name != "*")
            relative.append((node.level, node.module or "", names))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value.strip()
            if 0 < len(value) < 200 and _NAME.match(value.lstrip(".")):
                literals.append(value)
        elif isinstance(node, ast.Call) and _call_name(node) in _DYNAMIC:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                if _NAME.match(first.value):
                    absolute.append(first.value)
            else:
                dynamic = True
    return tuple(absolute), tuple(relative), tuple(literals), dynamic


def _scan_tokens(text: str) -> Scan:
    """A file that does not parse: every dotted name and import word counts."""
    words = [w.lstrip(".") for w in _TOKEN_IMPORT.findall(text)]
    names = [w for w in words if w] + dotted_names(text)
    dynamic = any(f in text for f in _DYNAMIC)
    return tuple(names), (), tuple(re.findall(r"[A-Za-z_]\w*", text)), dynamic


class PythonIndex:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.paths = ctx.of_kind("python")
        self.inits = {
            p for p in self.paths if p.rpartition("/")[2] in ("__init__.py", "__init__.pyi")
        }

    def is_package(self, directory: str) -> bool:
        return bool(directory) and (
            f"{directory}/__init__.py" in self.inits or f"{directory}/__init__.pyi" in self.inits
        )

    @cached_property
    def modules(self) -> dict[str, set[str]]:
        """Dotted module name -> files (see the module docstring for which names)."""
        out: dict[str, set[str]] = {}
        for path in self.paths:
            parts = path.split("/")
            stem = parts[-1].rpartition(".")[0]
            parts = parts[:-1] if stem == "__init__" else [*parts[:-1], stem]
            # The package top: the first directory above the file that is not a package.
            top = len(parts) - 1
            while top > 0 and self.is_package("/".join(parts[:top])):
                top -= 1
            for start in range(top, -1, -1):
                if start < len(parts):
                    out.setdefault(".".join(parts[start:]), set()).add(path)
        return out

    def package_dir(self, path: str) -> str:
        return parent(path)

    def chain(self, path: str) -> set[str]:
        """The ``__init__`` files that run before ``path`` (its package chain)."""
        found: set[str] = set()
        d = parent(path)
        while self.is_package(d):
            found |= {f"{d}/__init__.py", f"{d}/__init__.pyi"} & self.inits
            d = parent(d)
        return found

    def resolve(self, name: str) -> set[str]:
        """Files an absolute import of ``name`` may load (with every prefix module)."""
        found: set[str] = set()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            found |= self.modules.get(".".join(parts[:i]), set())
        return found

    def _relative(self, path: str, level: int, module: str) -> tuple[str, set[str]]:
        base = parent(path)
        for _ in range(level - 1):
            base = parent(base)
        target = f"{base}/{module.replace('.', '/')}" if module else base
        target = target.strip("/")
        found = self._module_files(target)
        return target, found

    def _module_files(self, target: str) -> set[str]:
        files = self.ctx.files
        cands = [f"{target}.py", f"{target}.pyi", f"{target}/__init__.py", f"{target}/__init__.pyi"]
        found = {c for c in cands if c in files}
        for f in list(found):
            found |= self.chain(f)
        return found

    def _scope(self, path: str) -> list[str]:
        d = parent(path)
        top = ""
        while self.is_package(d):
            top = d
            d = parent(d)
        prefix = top + "/" if top else ""
        return [p for p in self.paths if p.startswith(prefix)]

    def edges(self, path: str) -> set[str]:
        absolute, relative, literals, dynamic = scan(self.ctx.text(path))
        found = self.chain(path)
        if dynamic:
            found.update(self._scope(path))
        for name in absolute:
            found |= self.resolve(name)
        for level, module, names in relative:
            if level == 0:
                found |= self.resolve(module)
                for n in names:
                    found |= self.resolve(f"{module}.{n}")
                continue
            target, hit = self._relative(path, level, module)
            found |= hit
            for n in names:
                found |= self._module_files(f"{target}/{n}".strip("/"))
        for literal in literals:
            found |= self.resolve_literal(path, literal)
        found.discard(path)
        return found

    def plugin_edges(self, path: str) -> set[str]:
        """The modules a pytest configuration file loads as plugins (``-p name`` in its
        ``addopts``; ``-p no:name`` disables one and names nothing), with their package chains.
        Undotted names count here, unlike the dotted names read from any build file."""
        found: set[str] = set()
        for name in _PLUGIN.findall(self.ctx.text(path)):
            for target in self.resolve(name):
                found |= {target, *self.chain(target)}
        return found

    def resolve_literal(self, path: str, literal: str) -> set[str]:
        """A dotted string: absolute and relative; a plain word: a module beside ``path``."""
        if literal.startswith("."):
            level = len(literal) - len(literal.lstrip("."))
            return self._relative(path, level, literal.lstrip("."))[1]
        here = self._module_files(f"{parent(path)}/{literal.replace('.', '/')}".strip("/"))
        return here | self.resolve(literal) if "." in literal else here
