"""What every scanner sees: the tree's file set, file kinds, decoded texts (memoised)."""

from __future__ import annotations

from functools import cached_property, lru_cache

from repomin.analysis.refs.text import decode, parent
from repomin.tree import Tree

#: File kinds the graph understands; every other file is kept whole by the cut.
LANGUAGES = ("java", "python", "javascript", "c", "rust")

_SUFFIXES: dict[str, str] = {
    ".java": "java",
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "javascript",
    ".tsx": "javascript",
    ".mts": "javascript",
    ".cts": "javascript",
    ".c": "c",
    ".h": "c",
    ".cc": "c",
    ".cpp": "c",
    ".cxx": "c",
    ".c++": "c",
    ".hpp": "c",
    ".hh": "c",
    ".hxx": "c",
    ".h++": "c",
    ".ipp": "c",
    ".tcc": "c",
    ".rs": "rust",
}

#: Build files (exact base names): always roots, scanned for the paths and names they mention.
BUILD_NAMES = frozenset(
    {
        "Makefile",
        "makefile",
        "GNUmakefile",
        "Makefile.am",
        "Makefile.in",
        "configure",
        "configure.ac",
        "configure.in",
        "CMakeLists.txt",
        "meson.build",
        "meson_options.txt",
        "compile_commands.json",
        "package.json",
        "tsconfig.json",
        "jsconfig.json",
        ".babelrc",
        "pom.xml",
        "build.xml",
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "settings.gradle.kts",
        "gradle.properties",
        "setup.py",
        "setup.cfg",
        "pyproject.toml",
        "tox.ini",
        "pytest.ini",
        "conftest.py",
        "noxfile.py",
        "MANIFEST.in",
        "SConstruct",
        "SConscript",
        "BUILD",
        "BUILD.bazel",
        "WORKSPACE",
        "module-info.java",
        "Dockerfile",
        "Cargo.toml",
    }
)
_BUILD_SUFFIXES = (".mk", ".mak", ".cmake", ".gradle", ".config.js", ".config.mjs", ".config.ts")

#: Text files that are documentation: kept, but not read for references (a README that says
#: ``lib/util.js`` does not make the program load it).
_DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".html", ".htm", ".adoc", ".1", ".texi")
_DOC_PREFIXES = (
    "README",
    "LICENSE",
    "LICENCE",
    "CHANGELOG",
    "CHANGES",
    "HISTORY",
    "AUTHORS",
    "NOTICE",
    "COPYING",
    "CONTRIBUTING",
    "NEWS",
)


def language_of(path: str) -> str | None:
    """The language of a regular file by its name, or None (unknown kind)."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    if dot <= 0:
        return None
    return _SUFFIXES.get(name[dot:].lower())


def in_node_modules(path: str) -> bool:
    return path.startswith("node_modules/") or "/node_modules/" in path


def is_build_file(path: str) -> bool:
    """Build files are roots, except package manifests inside ``node_modules``."""
    if in_node_modules(path):
        return False
    name = path.rpartition("/")[2]
    return name in BUILD_NAMES or name.endswith(_BUILD_SUFFIXES)


def is_doc(path: str) -> bool:
    name = path.rpartition("/")[2]
    return name.lower().endswith(_DOC_SUFFIXES) or name.upper().startswith(_DOC_PREFIXES)


@lru_cache(maxsize=65536)
def _decode(data: bytes) -> str:
    return decode(data)


class Context:
    """One tree as the scanners see it."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.files: frozenset[str] = frozenset(
            p for p, e in tree.entries.items() if e.kind != "dir"
        )
        self.kinds: dict[str, str | None] = {
            p: (language_of(p) if tree.entries[p].kind == "file" else None) for p in self.files
        }

    def text(self, path: str) -> str:
        return _decode(self.tree.entries[path].data)

    def is_text(self, path: str) -> bool:
        entry = self.tree.entries[path]
        return entry.kind == "file" and entry.text

    def of_kind(self, language: str) -> list[str]:
        return sorted(p for p, k in self.kinds.items() if k == language)

    @cached_property
    def dirs(self) -> frozenset[str]:
        out: set[str] = set()
        for p in self.tree.entries:
            d = parent(p) if self.tree.entries[p].kind != "dir" else p
            while d and d not in out:
                out.add(d)
                d = parent(d)
        return frozenset(out)

    @cached_property
    def by_basename(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for p in self.files:
            out.setdefault(p.rpartition("/")[2], []).append(p)
        return out

    def with_suffix(self, spec: str) -> set[str]:
        """Files whose path is ``spec`` or ends with ``/spec``."""
        base = spec.rpartition("/")[2]
        return {p for p in self.by_basename.get(base, ()) if p == spec or p.endswith("/" + spec)}
