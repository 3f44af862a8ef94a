"""The reference graph of one tree: which files can reach which, from which roots.

Nodes are the tree's files (regular files and symlinks). A file of a known language (see
:data:`~repomin.analysis.refs.context.LANGUAGES`) has the edges its language module finds; every
other
file is of an *unknown kind*: it is never cut, and when it is text (and not documentation, and
not inside ``node_modules``) it is read for the paths and names it mentions, like a build file.

*Roots* are what the run starts from: files the command names (paths, ``-m`` modules, Java class
names, test files a test runner would discover), entry points a caller passes (e.g. the files a
trace saw first), kept paths (``--keep``), build files (a ``Cargo.toml`` reaches the crate roots
of the targets the command builds), C/C++ sources that define ``main`` (only when no build file
names a C/C++ source), and Rust files under no Cargo package that define ``main``.
Reachability starts from the roots and from every unknown-kind file; graph distance starts from
the roots only (an unknown-kind file is kept, not a reason to keep what it mentions close).

Edges are computed lazily, on first visit, so files no root reaches are scanned only where an
index needs them (Java type declarations). Everything is a pure function of the tree.
"""

from __future__ import annotations

import math
import re
import shlex
from collections import deque
from collections.abc import Iterable, Mapping
from functools import cached_property

from repomin.analysis.refs.build import Mentions
from repomin.analysis.refs.c import CIndex
from repomin.analysis.refs.context import Context, in_node_modules, is_build_file, is_doc
from repomin.analysis.refs.java import JavaIndex
from repomin.analysis.refs.javascript import JavaScriptIndex
from repomin.analysis.refs.python import PYTEST_CONFIGS, PythonIndex
from repomin.analysis.refs.rust import RustIndex
from repomin.tree import Tree

_MODULE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_$][\w$]*)*$")
_PY_RUNNERS = re.compile(r"\b(?:pytest|py\.test|nose2?|tox|nox|unittest\s+discover)\b")
_PY_TEST = re.compile(r"(?:^|/)(?:test_[^/]*\.py|[^/]*_test\.py|conftest\.py)$")
_JS_RUNNERS = re.compile(r"\b(?:mocha|jest|vitest|ava|tap|npm|yarn|pnpm|node\s+--test)\b")
_JS_TEST = re.compile(r"(?:^|/)(?:tests?|__tests__|spec)/|\.(?:test|spec)\.[cm]?[jt]sx?$")
_JAVA_RUNNERS = re.compile(r"\b(?:mvn|mvnw|gradle|gradlew|ant)\b")
_JAVA_TEST = re.compile(r"(?:^|/)(?:Test[^/]*|[^/]*(?:Test|Tests|TestCase|IT))\.java$")


def command_tokens(command: str) -> list[str]:
    try:
        words = shlex.split(command, posix=True)
    except ValueError:
        words = command.split()
    out: list[str] = []
    for word in words:
        out.append(word)
        out += [p for p in re.split(r"[=:,;()`$]", word) if p and p != word]
    return out


class RefGraph:
    """The graph of ``tree`` with its roots; ask for reachability, distances, the cut."""

    def __init__(
        self,
        tree: Tree,
        *,
        command: str = "",
        entry_points: Iterable[str] = (),
        keep: Iterable[str] = (),
    ) -> None:
        self.tree = tree
        self.ctx = Context(tree)
        self.java = JavaIndex(self.ctx)
        self.python = PythonIndex(self.ctx)
        self.javascript = JavaScriptIndex(self.ctx)
        self.c = CIndex(self.ctx)
        self.rust = RustIndex(self.ctx, command)
        self.mentions = Mentions(self.ctx, self.java, self.python)
        self.command = command
        self._entry_points = tuple(entry_points)
        self._keep = tuple(keep)
        self._edges: dict[str, frozenset[str]] = {}

    # -- nodes ------------------------------------------------------------------------------

    @property
    def files(self) -> frozenset[str]:
        return self.ctx.files

    def language(self, path: str) -> str | None:
        return self.ctx.kinds.get(path)

    @cached_property
    def keepers(self) -> frozenset[str]:
        """Unknown-kind files (never cut) that are read for references."""
        return frozenset(
            p
            for p, kind in self.ctx.kinds.items()
            if kind is None and not in_node_modules(p) and not is_doc(p)
        )

    # -- edges ------------------------------------------------------------------------------

    def edges(self, path: str) -> frozenset[str]:
        """The files ``path`` references (computed once per graph)."""
        cached = self._edges.get(path)
        if cached is not None:
            return cached
        kind = self.ctx.kinds.get(path)
        found: set[str] = set()
        if kind == "java":
            found = self.java.edges(path)
        elif kind == "python":
            found = self.python.edges(path)
        elif kind == "javascript":
            found = self.javascript.edges(path)
        elif kind == "c":
            found = self.c.edges(path)
        elif kind == "rust":
            found = self.rust.edges(path)
        name = path.rpartition("/")[2]
        if name in PYTEST_CONFIGS and self.ctx.is_text(path):
            found |= self.python.plugin_edges(path)
        if name == "package.json" and self.ctx.is_text(path):
            found |= self.javascript.manifest_edges(path)
        manifest = self.rust.manifest_edges(path) if name == "Cargo.toml" else None
        if manifest is not None:
            # Cargo decides which Rust files are crate roots; its other mentions still count.
            mentioned = self.mentions.of_file(path)
            found |= manifest | {p for p in mentioned if self.ctx.kinds.get(p) != "rust"}
        elif path in self.keepers or (is_build_file(path) and kind is None):
            found |= self.mentions.of_file(path)
        elif is_build_file(path):
            found |= self.mentions.tokens(self._string_tokens(path), "/".join(path.split("/")[:-1]))
        found.discard(path)
        result = frozenset(found & self.ctx.files)
        self._edges[path] = result
        return result

    def _string_tokens(self, path: str) -> list[str]:
        """Quoted strings of a code build file (``setup.py`` paths, config globs)."""
        return re.findall(r"""['"]([^'"\n]{1,300})['"]""", self.ctx.text(path))

    # -- roots ------------------------------------------------------------------------------

    @cached_property
    def roots(self) -> frozenset[str]:
        files = self.ctx.files
        found: set[str] = {p for p in self._entry_points if p in files}
        found |= {p for p in self._keep if p in files}
        for kept in self._keep:
            prefix = kept.rstrip("/") + "/"
            found |= {p for p in files if p.startswith(prefix)}
        builds = {p for p in files if is_build_file(p)}
        found |= builds
        # A build that names its C sources says what is compiled; otherwise (globs, no build
        # file) every program's ``main`` is where a run may start.
        if not any(self.ctx.kinds.get(t) == "c" for b in builds for t in self.edges(b)):
            found |= self.c.mains()
        found |= self.rust.orphan_roots
        found |= self._command_roots()
        return frozenset(found)

    def _command_roots(self) -> set[str]:
        command = self.command
        if not command:
            return set()
        tokens = command_tokens(command)
        found = self.mentions.tokens(tokens, "")
        for token in tokens:
            if _MODULE.match(token):
                found |= self.java.resolve_dotted(token)
                hit = self.python.resolve(token)
                found |= hit
                found |= {p for p in self.python.resolve(token + ".__main__") if p not in hit}
            directory = token.strip("/").removeprefix("./")
            if directory in self.ctx.dirs and f"{directory}/__main__.py" in self.ctx.files:
                found.add(f"{directory}/__main__.py")
        dirs = [t.strip("/").removeprefix("./") for t in tokens]
        dirs = [d for d in dirs if d in self.ctx.dirs]
        runners = (
            (_PY_RUNNERS, _PY_TEST, "python"),
            (_JS_RUNNERS, _JS_TEST, "javascript"),
            (_JAVA_RUNNERS, _JAVA_TEST, "java"),
        )
        for runner, pattern, language in runners:
            if not runner.search(command):
                continue
            for path in self.ctx.of_kind(language):
                if in_node_modules(path) or not pattern.search(path):
                    continue
                if not dirs or any(path.startswith(d + "/") for d in dirs):
                    found.add(path)
        return found

    # -- queries ----------------------------------------------------------------------------

    def _bfs(self, sources: Iterable[str]) -> dict[str, int]:
        dist: dict[str, int] = {}
        queue: deque[str] = deque()
        for s in sorted(set(sources)):
            dist[s] = 0
            queue.append(s)
        while queue:
            node = queue.popleft()
            for nxt in self.edges(node):
                if nxt not in dist:
                    dist[nxt] = dist[node] + 1
                    queue.append(nxt)
        return dist

    @cached_property
    def reachable(self) -> frozenset[str]:
        """Every file reachable from the roots or from an unknown-kind file."""
        return frozenset(self._bfs(self.roots | self.keepers))

    def distances(self) -> dict[str, float]:
        """Each file's graph distance from the roots; ``math.inf`` where no root reaches it."""
        dist = self._bfs(self.roots)
        return {p: float(dist[p]) if p in dist else math.inf for p in sorted(self.ctx.files)}

    def unreachable(self) -> list[str]:
        """Files of a known language that nothing reaches: what the cut deletes (sorted)."""
        reach = self.reachable
        return sorted(p for p, k in self.ctx.kinds.items() if k is not None and p not in reach)

    def language_counts(self, paths: Iterable[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for p in paths:
            kind = self.ctx.kinds.get(p) or "other"
            counts[kind] = counts.get(kind, 0) + 1
        return dict(sorted(counts.items()))


def distances(
    tree: Tree,
    *,
    command: str = "",
    entry_points: Iterable[str] = (),
    keep: Iterable[str] = (),
) -> Mapping[str, float]:
    """Graph distance of every file from the roots (``math.inf``: unreachable).

    A prior for deletion searches: files far from the roots are the likeliest to go.
    """
    return RefGraph(tree, command=command, entry_points=entry_points, keep=keep).distances()
