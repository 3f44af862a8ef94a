"""C/C++ references: ``#include`` (and ``#include_next``/``#import``) resolved like a compiler.

* ``#include "x.h"``: ``x.h`` beside the including file if it exists (the compiler looks there
  first); otherwise every include directory seen in the tree's build files (``-I``,
  ``-iquote``, ``-isystem``, ``-idirafter`` flags in Makefiles, ``compile_commands.json``,
  ``configure``; CMake ``include_directories``), and every file whose path ends with
  ``/x.h`` (so an include directory set where the graph cannot see it is still covered);
* ``#include <x.h>``: the include directories and the path-suffix matches;
* ``#include MACRO`` (a computed include) reaches every C/C++ file of the tree;
* a header ``x.h`` reaches the sources ``x.c``, ``x.cc``, ``x.cpp``, ``x.cxx`` anywhere in the
  tree (where its functions are usually defined: the linker's references are not visible).

Source files also reach the build through the build files (see :mod:`repomin.analysis.refs.build`),
and when no build file names a C/C++ source, a source that defines ``main`` is a root
(:func:`defines_main`).
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache

from repomin.analysis.refs.context import Context, is_build_file
from repomin.analysis.refs.text import join, parent, path_tokens

_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*(?:include|include_next|import)[ \t]*([<"])([^>"\n]+)[>"]', re.M
)
_COMPUTED = re.compile(r"^[ \t]*#[ \t]*(?:include|include_next)[ \t]+[A-Za-z_]", re.M)
_FLAG = re.compile(r"(?:^|[\s\"'])-(?:I|iquote|isystem|idirafter)\s*([^\s\"'\\)]+)")
_CMAKE_DIRS = re.compile(r"\b(?:target_)?include_directories\s*\(([^)]*)\)", re.I)
_MAIN = re.compile(r"^[\w \t*]*\bmain[ \t]*\(", re.M)
_HEADER_EXTS = (".h", ".hh", ".hpp", ".hxx", ".h++")
_SOURCE_EXTS = (".c", ".cc", ".cpp", ".cxx", ".c++")
_CMAKE_WORDS = frozenset({"PUBLIC", "PRIVATE", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"})


@lru_cache(maxsize=65536)
def scan(text: str) -> tuple[tuple[tuple[str, str], ...], bool]:
    """((delimiter, spec) of every include, whether a computed include occurs)."""
    return tuple(_INCLUDE.findall(text)), _COMPUTED.search(text) is not None


@lru_cache(maxsize=65536)
def defines_main(text: str) -> bool:
    """Whether a C/C++ source defines ``main`` (a line ``int main(`` or ``main (``)."""
    return _MAIN.search(text) is not None


@lru_cache(maxsize=16384)
def include_flags(text: str) -> tuple[str, ...]:
    """Directories given to ``-I`` and friends, and to CMake ``include_directories``."""
    dirs = list(_FLAG.findall(text))
    for args in _CMAKE_DIRS.findall(text):
        dirs += [t for t in path_tokens(args) if t not in _CMAKE_WORDS]
    return tuple(dirs)


class CIndex:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.paths = ctx.of_kind("c")

    @cached_property
    def include_dirs(self) -> tuple[str, ...]:
        dirs: dict[str, None] = {}
        for path in sorted(self.ctx.files):
            if not (is_build_file(path) or path.endswith(".json")) or not self.ctx.is_text(path):
                continue
            for flag in include_flags(self.ctx.text(path)):
                flag = re.sub(r"^\$[({][^)}]*[)}]/?", "", flag)
                for base in (parent(path), ""):
                    d = join(base, flag)
                    if d is not None and (d in self.ctx.dirs or d == ""):
                        dirs[d] = None
        return tuple(dirs)

    def resolve(self, path: str, delimiter: str, spec: str) -> set[str]:
        files = self.ctx.files
        if delimiter == '"':
            here = join(parent(path), spec)
            if here is not None and here in files:
                return {here}
        found: set[str] = set()
        for d in self.include_dirs:
            p = join(d, spec)
            if p is not None and p in files:
                found.add(p)
        return found | self.ctx.with_suffix(spec.lstrip("./"))

    def edges(self, path: str) -> set[str]:
        includes, computed = scan(self.ctx.text(path))
        if computed:
            found = set(self.paths)
        else:
            found = set()
            for delimiter, spec in includes:
                found |= self.resolve(path, delimiter, spec.strip())
        stem, dot, ext = path.rpartition("/")[2].rpartition(".")
        if dot and "." + ext.lower() in _HEADER_EXTS:
            for src_ext in _SOURCE_EXTS:
                found.update(self.ctx.by_basename.get(stem + src_ext, ()))
        found.discard(path)
        return found

    def mains(self) -> set[str]:
        """Sources that define ``main`` (roots: a program starts there)."""
        return {
            p
            for p in self.paths
            if p.lower().endswith(_SOURCE_EXTS) and defines_main(self.ctx.text(p))
        }
