"""Cargo as the reference graph reads it: which targets a ``Cargo.toml`` declares, which of them
the command builds, which other manifests it names (workspace members, path dependencies).

A package's targets (paths relative to its manifest's directory), by kind:

* ``lib``: ``[lib] path``, else ``src/lib.rs``;
* ``bin``: ``src/main.rs``, ``src/bin/*.rs``, ``src/bin/*/main.rs``, each ``[[bin]]``'s
  ``path`` (or, without one, ``src/bin/NAME.rs``, ``src/bin/NAME/main.rs``, ``src/main.rs``);
* ``build``: ``[package] build`` (a path; ``false``: none), else ``build.rs``;
* ``example``, ``test``, ``bench``: ``examples/``, ``tests/``, ``benches/`` (``*.rs`` and
  ``*/main.rs``) and the ``[[example]]``, ``[[test]]``, ``[[bench]]`` tables the same way.

Which kinds the command builds (:func:`command_kinds`): ``cargo build`` (``check``, ``clippy``,
``run``, ``doc``, ``rustc``, ``fix``, ``install``) builds lib, bins and the build script, plus
what ``--all-targets``, ``--tests``/``--test``, ``--examples``/``--example``,
``--benches``/``--bench`` add; ``cargo test`` also tests and examples (and benches whose table
says ``test = true``); any other command (``cargo bench``, a script that calls cargo, no cargo
at all) every kind. Where unsure, a kind is kept: the oracle decides every cut.
"""

from __future__ import annotations

import fnmatch
import shlex
import tomllib
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from repomin.analysis.refs.text import join

KINDS = frozenset({"lib", "bin", "build", "example", "test", "bench"})
_BUILD_LIKE = frozenset(
    {"build", "b", "check", "c", "clippy", "run", "r", "doc", "d", "rustc", "fix", "install"}
)
_TESTING = frozenset({"test", "t"})
_GLOBAL_WITH_VALUE = frozenset({"--config", "-Z", "-C", "--color", "--explain"})
_FLAG_KINDS: dict[str, frozenset[str]] = {
    "--all-targets": KINDS,
    "--tests": frozenset({"test"}),
    "--test": frozenset({"test"}),
    "--examples": frozenset({"example"}),
    "--example": frozenset({"example"}),
    "--benches": frozenset({"bench"}),
    "--bench": frozenset({"bench"}),
}
_AUTO_DIRS = {"example": "examples", "test": "tests", "bench": "benches"}
_TABLES = {"bin": "bin", "example": "example", "test": "test", "bench": "bench"}
_SHELL_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "\n"})
_MAX_WALK = 100_000


@lru_cache(maxsize=4096)
def parse(text: str) -> dict[str, Any] | None:
    """The manifest's tables, or None when it is not TOML."""
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return None


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return command.split()


def _invocations(words: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(subcommand, its arguments) of each ``cargo`` in the command."""
    for i, word in enumerate(words):
        if word != "cargo" and not word.endswith("/cargo"):
            continue
        j = i + 1
        while j < len(words) and words[j].startswith(("-", "+")):
            j += 2 if words[j] in _GLOBAL_WITH_VALUE else 1
        if j >= len(words) or words[j] in _SHELL_SEPARATORS:
            yield "", []
            continue
        k = j + 1
        while k < len(words) and words[k] not in _SHELL_SEPARATORS:
            k += 1
        yield words[j], words[j + 1 : k]


@lru_cache(maxsize=256)
def command_kinds(command: str) -> frozenset[str]:
    """The target kinds ``command`` builds (every kind when it runs no cargo we understand)."""
    kinds: set[str] = set()
    found = False
    for sub, args in _invocations(_words(command)):
        found = True
        if sub in _TESTING:
            kinds |= {"lib", "bin", "build", "test", "example"}
        elif sub in _BUILD_LIKE:
            kinds |= {"lib", "bin", "build"}
        else:
            return KINDS
        for arg in args:
            if arg == "--":
                break
            kinds |= _FLAG_KINDS.get(arg.partition("=")[0], frozenset())
    return frozenset(kinds) if found else KINDS


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _tables(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    return [t for t in value if isinstance(t, dict)] if isinstance(value, list) else []


def _under(files: frozenset[str], directory: str) -> list[str]:
    """``DIR/*.rs`` and ``DIR/*/main.rs`` among ``files``."""
    prefix = directory + "/"
    out: list[str] = []
    for f in files:
        if not f.startswith(prefix) or not f.endswith(".rs"):
            continue
        rest = f[len(prefix) :].split("/")
        if len(rest) == 1 or (len(rest) == 2 and rest[1] == "main.rs"):
            out.append(f)
    return out


def _named(table: dict[str, Any], kind: str, defaults: list[str]) -> list[str]:
    path = table.get("path")
    if isinstance(path, str):
        return [path]
    name = table.get("name")
    if not isinstance(name, str):
        return defaults
    base = "src/bin" if kind == "bin" else _AUTO_DIRS[kind]
    return [f"{base}/{name}.rs", f"{base}/{name}/main.rs", *defaults]


def targets(
    directory: str, data: dict[str, Any], files: frozenset[str], kinds: frozenset[str]
) -> set[str]:
    """The files of the package at ``directory`` that are crate roots of ``kinds``."""
    package = _table(data, "package")
    if not package:
        return set()
    rel: list[str] = []
    if "lib" in kinds:
        path = _table(data, "lib").get("path")
        rel.append(path if isinstance(path, str) else "src/lib.rs")
    if "build" in kinds:
        build = package.get("build", "build.rs")
        if isinstance(build, str):
            rel.append(build)
    prefix = directory + "/" if directory else ""
    for kind, key in _TABLES.items():
        tables = _tables(data, key)
        tested = kind in ("bench", "example") and "test" in kinds
        wanted = kind in kinds or (tested and any(t.get("test") is True for t in tables))
        if not wanted:
            continue
        defaults = ["src/main.rs"] if kind == "bin" else []
        rel += defaults
        for table in tables:
            if kind in kinds or table.get("test") is True:
                rel += _named(table, kind, defaults)
        if kind in kinds:
            auto = "src/bin" if kind == "bin" else _AUTO_DIRS[kind]
            rel += [f[len(prefix) :] for f in _under(files, prefix + auto)]
    found = {join(directory, r) for r in rel}
    return {f for f in found if f is not None and f in files}


def _paths(data: Any) -> Iterator[str]:
    """Every string value of a ``path`` key anywhere in the manifest (dependencies, patches)."""
    stack: list[Any] = [data]
    seen = 0
    while stack and seen < _MAX_WALK:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "path" and isinstance(value, str):
                    yield value
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def _manifest_in(directory: str) -> str:
    return f"{directory}/Cargo.toml" if directory else "Cargo.toml"


def linked_manifests(
    directory: str, data: dict[str, Any], files: frozenset[str], dirs: frozenset[str]
) -> set[str]:
    """Other ``Cargo.toml`` files this one names: workspace members (globs allowed) and
    ``path`` dependencies, patches and the ``package.workspace`` root."""
    found: set[str] = set()
    workspace = _table(data, "workspace")
    patterns: list[str] = []
    for key in ("members", "default-members"):
        value = workspace.get(key)
        if isinstance(value, list):
            patterns += [p for p in value if isinstance(p, str)]
    for pattern in patterns:
        full = join(directory, pattern)
        if full is None:
            continue
        glob = any(c in full for c in "*?[")
        matches = [d for d in dirs if fnmatch.fnmatchcase(d, full)] if glob else [full]
        found |= {_manifest_in(d) for d in matches}
    root = _table(data, "package").get("workspace")
    for path in [*_paths(data), *([root] if isinstance(root, str) else [])]:
        target = join(directory, path)
        if target is not None:
            found.add(target if target.rpartition("/")[2] == "Cargo.toml" else _manifest_in(target))
    found.discard(_manifest_in(directory))
    return {f for f in found if f in files}
