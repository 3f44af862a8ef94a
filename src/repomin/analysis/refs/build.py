"""References of build files, other text files and the command: paths and names they mention.

A token (split at blanks, quotes and shell/make punctuation, with ``$(VAR)``/``${VAR}``/
``@VAR@`` removed) names a file when it is a path of the tree relative to the mentioning
file's directory or to the root; ``name.o``/``.lo``/``.obj``
names the sources ``name.c``, ``.cc``, ``.cpp``, ``.cxx``, ``.S``, ``.m`` beside it, from the root,
or anywhere (``VPATH``); a dotted name (``com.example.Main``, ``pkg.module``) is tried as a Java
type and a Python module. Patterns name no file: a glob (``$(wildcard *.c)``, ``find -name
'*.java'``) or a make pattern rule (``%.c``) takes whatever exists, so deleting one of its
matches cannot break the build by itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from repomin.analysis.refs.context import Context
from repomin.analysis.refs.java import JavaIndex
from repomin.analysis.refs.python import PythonIndex
from repomin.analysis.refs.text import dotted_names, join, parent, path_tokens, resolve_token

_OBJECT = re.compile(r"^(?:.*/)?([^/]+)\.(?:o|lo|obj)$")
_SOURCE_EXTS = (".c", ".cc", ".cpp", ".cxx", ".C", ".S", ".s", ".m")


class Mentions:
    """Resolves what a text (a build file, a script, the command) mentions."""

    def __init__(self, ctx: Context, java: JavaIndex, python: PythonIndex) -> None:
        self.ctx = ctx
        self.java = java
        self.python = python

    def in_text(self, text: str, base: str) -> set[str]:
        found: set[str] = set()
        found |= self.tokens(path_tokens(text), base)
        for name in set(dotted_names(text)):
            found |= self.java.resolve_dotted(name) | self.python.resolve(name)
        return found

    def tokens(self, tokens: Iterable[str], base: str) -> set[str]:
        files = self.ctx.files
        found: set[str] = set()
        for token in tokens:
            if "%" in token or "*" in token or "?" in token:
                continue
            found |= resolve_token(token, base, files)
            m = _OBJECT.match(token)
            if m:
                stem_dir = parent(token)
                for ext in _SOURCE_EXTS:
                    name = m.group(1) + ext
                    found |= resolve_token(f"{stem_dir}/{name}" if stem_dir else name, base, files)
                    found |= self.ctx.with_suffix(name)
        return found

    def of_file(self, path: str) -> set[str]:
        """What the file at ``path`` (a build file or another non-code text file) mentions."""
        entry = self.ctx.tree.entries[path]
        if entry.kind == "symlink":
            target = join(parent(path), os.fsdecode(entry.data))
            if target is None:
                return set()
            prefix = target + "/"
            return {f for f in self.ctx.files if f == target or f.startswith(prefix)}
        if not entry.text:
            return set()
        found = self.in_text(self.ctx.text(path), parent(path))
        found.discard(path)
        return found
