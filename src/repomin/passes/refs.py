"""The ``refs`` pass: delete what the reference graph cannot reach from the roots.

It builds :class:`~repomin.analysis.refs.RefGraph` over the current tree (roots: files the command
names, entry points, ``--keep`` paths, build files) and proposes deleting all unreachable files
of a known language as one candidate; the oracle decides, and a rejection changes nothing.
Then the same set is bisected (halves, quarters, ... down to single files, ddmin order) so that
one file loaded in a way the graph cannot see does not block the rest.

First, once, for a CMake build: the targets the failing build does not need (the failing
target from the build's own error lines, and what it links), with their commands, list elements
and sources, as one candidate, split by target when rejected
(:mod:`repomin.analysis.refs.cmaketargets`): CMake names every source at configure time, so no
file cut can take one alone.

Then, for Rust, once: the item rustc's first error lies in, alone with its module chain
(:mod:`repomin.analysis.refs.rustfocus`, from the baseline's failing output), one candidate.
Then (:mod:`repomin.analysis.refs.rustcuts`) each ``mod name;`` declaration that
nothing else names is one candidate: the declaration removed with the ``use`` items of its file
that start at the module, and every file no root reaches after that edit deleted with it (``mod
uri;`` goes with ``src/uri/``). A file alone cannot go while its ``mod`` line stays (rustc
cannot find it), nor the line while its ``use`` items stay; together they can. Then, per file,
the items nothing else names, one candidate per file. A rejected Rust cut is proposed again
only once what it was computed from changed.

Then, for Java, once: every method on the failing stack (the baseline's uncaught trace) ends
at the statement on its frame's line, the rest of its body never having run
(:mod:`repomin.analysis.javastack`), one candidate. Then
(:mod:`repomin.analysis.refs.javamembers`) every method, field and nested type that no code
left in the tree names, over all Java files at once (a fixpoint: a helper only a dead member
called is dead too), with the imports only they used, as one candidate; when the oracle
rejects it, the learning deletion search splits it by member (a candidate keeps everything a
kept member names, so it compiles as the whole did). After either is accepted the file cut
runs again: the types only the deleted code named are unreachable now. A member that
survived a split is not proposed again (the line passes still may). Then every ``implements``
list that names only types of the tree is dropped, with the ``@Override`` annotations of its
class and what that leaves unnamed (the interfaces' files, then the methods only they
required), as one candidate: a class used through
its interface does not compile without it, and the oracle rejects the candidate, which is
not proposed again until the lists change.

Then, for C (:mod:`repomin.analysis.refs.cfunctions`), the same member cut one level below the
include graph: every function, prototype and file-scope variable of the ``.c``/``.h`` files
that no live code names (a walk from ``main``, types, ``#if`` conditions and the files left
whole, through the bodies of the macros it meets), and every function definition of the C++
files, in namespaces and class bodies (:mod:`repomin.analysis.refs.cppfunctions`: the same
walk over both languages), as one candidate, split the same way when rejected; the file cut
follows.

The pass object lives for the whole reduction: it runs again in every round and proposes again
whenever the unreachable set of the current tree differs from the one it last worked on (a
content pass that deleted an import or a call makes its target unreachable). Files it already
found needed (survivors of its bisection, unchanged since) are not proposed again; the other
passes still may. A member cut is computed again only when a file of its language changed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from repomin.analysis.javastack import failing_frames, stack_cut
from repomin.analysis.refs import RefGraph, cfunctions, cmaketargets, cppfunctions
from repomin.analysis.refs.javamembers import JavaFile, dead_members, mentions_only, parse
from repomin.analysis.refs.rustcuts import rust_cuts
from repomin.analysis.refs.rustfocus import first_error_locations, focus_tree
from repomin.analysis.refs.text import without_spans
from repomin.search.deletion.ddmin import ddmin_delete
from repomin.search.deletion.learning import learn_delete
from repomin.search.problem import Problem
from repomin.tree import Entry, Tree


def _java_files(tree: Tree) -> dict[str, JavaFile]:
    """Every ``.java`` file of ``tree`` parsed (one that does not parse: as mentions only)."""
    files: dict[str, JavaFile] = {}
    for path, entry in tree.entries.items():
        if entry.kind == "file" and path.endswith(".java"):
            parsed = parse(entry.data)
            files[path] = parsed if parsed is not None else mentions_only(entry.data)
    return files


def _c_files(tree: Tree) -> dict[str, cfunctions.CFile]:
    """Every C/C++ file of ``tree``: C++ read by :func:`repomin.analysis.refs.cppfunctions.parse`,
    the rest by :func:`repomin.analysis.refs.cfunctions.parse`."""
    return {
        path: (
            cppfunctions.parse(entry.data)
            if cppfunctions.is_cxx(path, entry.data)
            else cfunctions.parse("." + path.rpartition(".")[2].lower(), entry.data)
        )
        for path, entry in tree.entries.items()
        if entry.kind == "file" and cfunctions.is_c(path)
    }


class _Dead(Protocol):
    @property
    def members(self) -> tuple[tuple[int, int], ...]: ...
    @property
    def spans(self) -> list[tuple[int, int]]: ...


@dataclass
class _MemberCut:
    """One language's cut below the files: what it reads, what it finds dead, and what the
    pass remembers of it (the members a split kept, the last set proposed, the files it was
    last computed from)."""

    label: str
    owns: Callable[[str], bool]
    files: Callable[[Tree], Mapping[str, Any]]
    dead: Callable[
        [Mapping[str, Any], Collection[str], Collection[tuple[str, int]]], Mapping[str, _Dead]
    ]
    needed: set[tuple[str, bytes]] = field(default_factory=set)
    last: frozenset[tuple[str, bytes]] | None = None
    snapshot: tuple[tuple[str, bytes, bool], ...] | None = None


def _java_cut() -> _MemberCut:
    return _MemberCut("Java members", lambda p: p.endswith(".java"), _java_files, dead_members)


def _c_cut() -> _MemberCut:
    return _MemberCut(
        "C and C++ functions and variables", cfunctions.is_c, _c_files, cfunctions.dead_items
    )


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{language} {n}" for language, n in counts.items())


class RefsCut:
    """Proposes the reference-graph cut whenever the graph of the current tree changes."""

    name: ClassVar[str] = "refs"

    def __init__(
        self,
        command: str = "",
        entry_points: Sequence[str] = (),
        failures: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.command = command
        self.entry_points = tuple(entry_points)
        #: (output, working directory) of the first reproducing baseline run: rustc's errors.
        self.failures = tuple(failures)
        self._focused = False
        self._targeted = False
        self._java_stacked = False
        self._last: frozenset[str] | None = None
        #: Unreachable files a bisection kept, with the entry they had then.
        self._needed: dict[str, Entry] = {}
        #: Rust cuts that were rejected, with what each was computed from.
        self._rust_rejected: dict[tuple[str, ...], object] = {}
        #: The cuts below the files, per language.
        self._java_members = _java_cut()
        self._c_members = _c_cut()
        self._java_clauses_rejected: set[frozenset[tuple[str, bytes]]] = set()

    def graph(self, problem: Problem) -> RefGraph:
        return self._graph_of(problem)(problem.current)

    def run(self, problem: Problem) -> None:
        self._targets(problem)
        self._cut(problem)
        self._focus(problem)
        self._rust(problem, "mod")
        self._rust(problem, "items")
        stacked = self._java_stack(problem)
        if self._members(problem, self._java_members) or stacked:
            self._cut(problem)
        if self._java_clauses(problem):
            self._cut(problem)  # the interfaces only the lists named
            if self._members(problem, self._java_members):  # what only the interfaces kept
                self._cut(problem)
        if self._members(problem, self._c_members):
            self._cut(problem)

    def _cut(self, problem: Problem) -> None:
        tree = problem.current
        graph = self.graph(problem)
        unreachable = [p for p in graph.unreachable() if not problem.protected(p)]
        units = [p for p in unreachable if self._needed.get(p) is not tree.entries[p]]
        key = frozenset(units)
        if not units or key == self._last:
            return
        self._last = key
        counts = graph.language_counts(units)
        self._log(
            problem,
            f"reference graph: {len(graph.reachable)} of {tree.file_count} files reachable from "
            f"{len(graph.roots)} roots; proposing to delete {len(units)} unreachable "
            f"({_counts(counts)})",
            reachable_files=len(graph.reachable),
            root_files=len(graph.roots),
            unreachable_files=len(units),
            unreachable_by_language=counts,
        )
        total = len(units)

        def build(remaining: Sequence[str]) -> Tree:
            keep = set(remaining)
            return problem.current.without(p for p in units if p not in keep)

        def describe(chunk: Sequence[str]) -> str:
            part = "" if len(chunk) == total else f" (part of {total})"
            return (
                f"delete {len(chunk)} files the reference graph cannot reach{part}: "
                f"{_counts(graph.language_counts(chunk))}"
            )

        survivors = ddmin_delete(problem, self.name, units, build, describe)
        current = problem.current.entries
        for p in survivors:
            if p in current:
                self._needed[p] = current[p]

    def _targets(self, problem: Problem) -> None:
        """Once: the CMake targets the failing build does not need, one candidate, split by
        target when rejected (:mod:`repomin.analysis.refs.cmaketargets`)."""
        if self._targeted:
            return
        self._targeted = True
        names = cmaketargets.needless(problem.current, (output for output, _ in self.failures))
        if not names:
            return
        self._log(
            problem,
            f"cmake targets: the failing build needs {len(names)} targets less; proposing to "
            f"delete them with their commands and sources",
            cmake_targets=len(names),
        )
        total = len(names)

        def build(remaining: Sequence[str]) -> Tree:
            keep = set(remaining)
            gone = [n for n in names if n not in keep]
            return cmaketargets.without_targets(problem.current, gone, problem.protected)

        def describe(chunk: Sequence[str]) -> str:
            part = "" if len(chunk) == total else f" (part of {total})"
            shown = ", ".join(chunk[:3]) + (f" and {len(chunk) - 3} more" if len(chunk) > 3 else "")
            return (
                f"delete {len(chunk)} CMake targets the failing build does not need{part}: {shown}"
            )

        ddmin_delete(problem, self.name, names, build, describe)

    def _focus(self, problem: Problem) -> None:
        """Once: rustc's failing item alone (:mod:`repomin.analysis.refs.rustfocus`)."""
        if self._focused:
            return
        self._focused = True
        if not any(first_error_locations(output) for output, _ in self.failures):
            return  # no rustc error: no graph to build
        graph = self.graph(problem)
        found = focus_tree(graph, self.failures, problem.protected, self._graph_of(problem))
        if found is not None:
            problem.try_first(self.name, iter([found]))

    def _rust(self, problem: Problem, kind: str) -> None:
        """Propose the Rust cuts of ``kind`` (``mod`` or ``items``, see
        :mod:`repomin.analysis.refs.rustcuts`), one candidate each, the largest first; after an
        acceptance the rest are computed anew on the new tree. A rejected cut is not proposed
        again until what it was computed from changed."""
        rejected: set[tuple[str, ...]] = set()
        noted = False
        while True:
            graph = self.graph(problem)
            cuts = [
                c
                for c in rust_cuts(graph, kind, problem.protected, self._graph_of(problem))
                if c.key not in rejected and self._rust_rejected.get(c.key) != c.fingerprint
            ]
            if not cuts:
                return
            if not noted:
                noted = True
                self._log(
                    problem,
                    f"rust {kind}: proposing {len(cuts)} cut(s)",
                    rust_cuts=len(cuts),
                )
            won = problem.try_first(self.name, ((c.tree, c.description) for c in cuts))
            for cut in cuts if won is None else cuts[:won]:
                rejected.add(cut.key)
                self._rust_rejected[cut.key] = cut.fingerprint
            if won is None:
                return

    def _java_stack(self, problem: Problem) -> bool:
        """Once: the methods on the failing Java stack cut after the statement that threw
        (:mod:`repomin.analysis.javastack`); True when the candidate was accepted."""
        if self._java_stacked:
            return False
        self._java_stacked = True
        frames = failing_frames(output for output, _ in self.failures)
        if not frames:
            return False
        tree = problem.current
        files = {
            path: entry.data
            for path, entry in tree.entries.items()
            if entry.kind == "file" and path.endswith(".java")
        }
        edited = {p: d for p, d in stack_cut(frames, files).items() if not problem.protected(p)}
        if not edited:
            return False
        self._log(
            problem,
            f"java stack: {len(frames)} frames, {len(edited)} files with a rest that never ran",
            java_frames=len(frames),
        )
        candidate = tree.with_changes(
            {p: tree.entries[p].with_data(d) for p, d in sorted(edited.items())}
        )
        description = (
            f"end the methods on the failing stack at the statement that threw "
            f"({', '.join(sorted(edited))})"
        )
        return problem.try_first(self.name, [(candidate, description)]) == 0

    def _members(self, problem: Problem, cut: _MemberCut) -> bool:
        """Propose deleting the members of one language nothing names (see the module
        docstring); True when something was deleted."""
        tree = problem.current
        snapshot = tuple(
            (p, e.data, problem.protected(p)) for p, e in tree.entries.items() if cut.owns(p)
        )
        if snapshot == cut.snapshot:
            return False  # the same files as last time: the same cut
        cut.snapshot = snapshot
        files = cut.files(tree)
        editable = {p for p in files if not problem.protected(p)}
        dead = cut.dead(files, editable, ())
        units = [
            (path, start, end)
            for path in sorted(dead)
            for start, end in dead[path].members
            if (path, tree.entries[path].data[start:end]) not in cut.needed
        ]
        key = frozenset((p, tree.entries[p].data[s:e]) for p, s, e in units)
        if not units or key == cut.last:
            return False
        cut.last = key
        self._log(
            problem,
            f"{cut.label}: {len(units)} nothing names in {len({u[0] for u in units})} files",
            members_cut=cut.label,
            members=len(units),
        )
        # dead members left out of the units (a split kept them before) stay in every build
        excluded = {(p, s) for p in dead for s, _ in dead[p].members} - {
            (p, s) for p, s, _ in units
        }

        def build(remaining: Sequence[tuple[str, int, int]]) -> Tree:
            keep = excluded | {(p, s) for p, s, _ in remaining}
            gone = cut.dead(files, editable, keep)
            changes = {
                path: tree.entries[path].with_data(
                    without_spans(tree.entries[path].data, gone[path].spans)
                )
                for path in gone
            }
            return tree.with_changes(changes) if changes else tree

        def describe(chunk: Sequence[tuple[str, int, int]]) -> str:
            count = len({p for p, _, _ in chunk})
            return f"delete {len(chunk)} {cut.label} nothing names in {count} files"

        if problem.try_first(self.name, [(build([]), describe(units))]) == 0:
            return True
        kept = learn_delete(problem, self.name, units, build, describe)
        for path, start, end in kept:
            cut.needed.add((path, tree.entries[path].data[start:end]))
        return len(kept) < len(units)

    def _java_clauses(self, problem: Problem) -> bool:
        """Propose dropping every ``implements`` list that names only types of the tree, with
        the members and types that leaves unnamed (see the module docstring); True when
        accepted. A rejected set is not proposed again until the lists change."""
        tree = problem.current
        files = _java_files(tree)
        editable = {p for p in files if not problem.protected(p)}
        declared = {name for parsed in files.values() for name in parsed.declared}
        targets = {
            (path, body.start): body
            for path in sorted(editable)
            for body in files[path].bodies
            if body.implements is not None and body.interfaces and body.interfaces <= declared
        }
        key = frozenset(
            (p, tree.entries[p].data[b.implements[0] : b.implements[1]])
            for (p, _), b in targets.items()
            if b.implements is not None
        )
        if not targets or key in self._java_clauses_rejected:
            return False
        keep = {
            (path, member.start)
            for path in editable
            for member in files[path].members
            if (path, tree.entries[path].data[member.start : member.end])
            in self._java_members.needed
        }
        dead = dead_members(files, editable, keep, dropped=set(targets))
        changes = {
            path: tree.entries[path].with_data(
                without_spans(tree.entries[path].data, dead[path].spans)
            )
            for path in dead
        }
        names = sorted({n for b in targets.values() for n in b.interfaces})
        description = (
            f"drop the implements lists of {len(targets)} classes ({', '.join(names[:4])}"
            f"{' …' if len(names) > 4 else ''}) and what only they kept"
        )
        if problem.try_first(self.name, [(tree.with_changes(changes), description)]) == 0:
            return True
        self._java_clauses_rejected.add(key)
        return False

    def _graph_of(self, problem: Problem) -> Callable[[Tree], RefGraph]:
        def graph_of(tree: Tree) -> RefGraph:
            keep = [p for p in tree.entries if problem.protected(p)]
            return RefGraph(tree, command=self.command, entry_points=self.entry_points, keep=keep)

        return graph_of

    def _log(self, problem: Problem, description: str, **fields: Any) -> None:
        problem.note(self.name, description, **fields)
