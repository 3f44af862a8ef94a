"""The ``coverage`` pass: empty every JavaScript, Python or Java body the traced run never ran.

The trace cut's analogue one level down: the traced run (``repomin.analysis.trace``) also collects
Node's V8 coverage (``repomin.analysis.v8coverage``: function and block ranges with execution
counts, precise for code that never ran), which Python functions started and lines ran
(``repomin.analysis.pycoverage``) and which Java methods a JVM invoked
(``repomin.analysis.javacoverage``). For every JavaScript file of the incumbent whose content is
still the traced one, each maximal ``{...}`` pair inside a range that never ran -- the body of
a function never called, a branch never taken, a ``catch`` never entered -- is a unit whose
edit empties it (``{}``: an empty block, function body, object or class body is valid
wherever the full one was). For every such Python file, the body of each function never called
and each block of run code none of whose lines ran (a branch never taken, a handler never
entered) is a unit whose edit makes it ``...`` (valid wherever a body is); in a Java file, the
inside of each method's braces becomes ``throw null;`` (valid whatever the method returns;
nothing in a ``void`` method). All
units together are one candidate; if the oracle rejects it, the learning deletion search
(``search.deletion.learning``) splits them, so the result is 1-minimal over the units for any
predicate (the oracle decides; the coverage only shapes proposals).

Right after the emptying, the emptied Python functions that no code names any more (once the
bodies are emptied, a name used only by another never-run body is no longer used) are proposed
for deletion whole: a module-level or nested function whose name occurs nowhere else in the
tree's Python files outside comments and docstrings (not referenced, not spelled in a string)
but in ``from … import`` statements and ``__all__`` lists, whose names go with it (a library
module importing a helper it never calls is the common case: ``repomin.passes.pyimports``), and
a method whose name occurs only after a dot (a call through an instance would have run it;
``property(_get)``, a class-level alias or a string would not); in one candidate, split by the
same search when rejected (decorators and all, whole lines; a statement list left empty keeps a
``pass``). A function still named stays a ``...`` stub for the statement search, which can
delete it with its references. (Java's methods stay stubs: ``javac`` refuses a class whose
overridden or called method is gone, and the split then costs a compile per method.)

Files with stale coverage (changed since the trace) are skipped: a later traced run (the
re-traced cut, after content edits) renews the coverage. Java files are the exception: their
record is the set of methods the JVMs touched, so the never-run bodies of a Java file edited
since (by the reference graph's member cut, say) are found again by class, name and
parameter count. Only what the run executed is covered:
without a host trace log (Docker, a cluster), for Node when the command set
``NODE_V8_COVERAGE`` itself, and for Python processes that skip ``PYTHONPATH`` (``-E``, ``-I``)
or exit through ``os._exit`` or a signal, for a JVM not started by the ``java`` launcher or
without HotSpot's touched-method list, there is no coverage of those files and the pass
leaves them alone. In the ``ordered`` pass it runs on one file at a time (the others are
protected).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from repomin.analysis.javacoverage import FILL as JAVA_FILL
from repomin.analysis.javacoverage import never_run_methods, void_bodies
from repomin.analysis.pycoverage import FILL, Definition, never_run_definitions
from repomin.analysis.v8coverage import FileCoverage
from repomin.passes.hints import SearchHints
from repomin.passes.jslex import is_js, lex
from repomin.passes.normalise import normalised, without_docstrings
from repomin.passes.pyimports import NameSites
from repomin.passes.textedit import compiles, describe_spans, splice
from repomin.search.deletion.learning import SURVIVOR_PRIOR, learn_delete
from repomin.search.problem import Problem
from repomin.tree import Entry, Tree

#: A unit: (path, start, end) -- the inside of a ``{...}`` pair, emptied by the edit.
Unit = tuple[str, int, int]


def never_run_bodies(data: bytes, never: Sequence[tuple[int, int, bool]]) -> list[tuple[int, int]]:
    """The insides ``[open + 1, close)`` of the maximal non-empty ``{...}`` pairs that lie
    within a never-run range of ``data`` (sorted, disjoint); none when ``data`` does not lex."""
    lexed = lex(data)
    if lexed is None:
        return []
    openers = sorted(o for o in lexed.pairs if data[o] == ord("{"))
    found: set[tuple[int, int]] = set()
    for start, end, _ in never:
        k = bisect.bisect_left(openers, start)
        while k < len(openers) and openers[k] < end:
            o = openers[k]
            c = lexed.pairs[o]
            if c < end:
                if data[o + 1 : c].strip():
                    found.add((o + 1, c))
                k = bisect.bisect_right(openers, c)
            else:
                k += 1
    out: list[tuple[int, int]] = []
    for span in sorted(found):  # keep the outermost of nested spans
        if out and span[0] < out[-1][1]:
            continue
        out.append(span)
    return out


class CoverageCut:
    """The ``coverage`` pass (see the module docstring)."""

    name: ClassVar[str] = "coverage"

    def __init__(self, hints: SearchHints | None = None) -> None:
        self.hints = hints
        #: Units (by path and the emptied text) that survived an earlier search.
        self.survived: set[tuple[str, bytes]] = set()
        #: The never-run bodies per path and content of the coverage they were computed from.
        self._bodies: dict[tuple[str, bytes], list[tuple[int, int]]] = {}
        self._coverage: Mapping[str, FileCoverage] | None = None

    def run(self, problem: Problem) -> None:
        trace = self.hints.trace if self.hints is not None else None
        coverage = trace.coverage if trace is not None else None
        if not coverage:
            return
        tree = problem.current
        units = self._units(problem, tree, coverage)
        if not units:
            return
        originals = {path: tree.entries[path] for path in {u[0] for u in units}}
        texts = [originals[p].data[s:e] for p, s, e in units]
        voids = {p: void_bodies(e.data) for p, e in originals.items() if _is_java(p)}

        def fill(path: str, start: int) -> bytes:
            return b"" if start in voids.get(path, ()) else _fill(path)

        def build(remaining: Sequence[Unit]) -> Tree:
            keep = set(remaining)
            changes: dict[str, Entry | None] = {}
            for path, entry in originals.items():
                edits = [
                    (s, e, fill(p, s)) for p, s, e in units if p == path and (p, s, e) not in keep
                ]
                if edits:
                    changes[path] = entry.with_data(splice(entry.data, edits))
            return tree.with_changes(changes) if changes else tree

        def describe(chunk: Sequence[Unit]) -> str:
            return _describe("empty", "never-run bodies", chunk, originals, lambda u: u[1])

        _event(problem, len(originals), len(units))
        if problem.try_first(self.name, [(build([]), describe(units))]) == 0:
            kept: list[Unit] = []
        else:
            priors = [
                SURVIVOR_PRIOR if (u[0], t) in self.survived else 1.0 / len(units)
                for u, t in zip(units, texts, strict=True)
            ]
            kept = learn_delete(problem, self.name, units, build, describe, priors)
            self.survived.update((u[0], originals[u[0]].data[u[1] : u[2]]) for u in kept)
        self._delete_definitions(problem, originals, units, kept, build)

    def _delete_definitions(
        self,
        problem: Problem,
        originals: Mapping[str, Entry],
        units: Sequence[Unit],
        kept: Sequence[Unit],
        emptied: Callable[[Sequence[Unit]], Tree],
    ) -> None:
        """Delete whole the Python functions the emptying emptied (see the module docstring)."""
        left = emptied(kept)
        if problem.current.digest != left.digest:
            return  # the incumbent is not what the emptying left (a concurrent acceptance)
        keep = set(kept)
        defs: dict[Unit, Definition] = {}
        for path in sorted({u[0] for u in units if _is_python(u[0])}):
            mine = [(s, e) for p, s, e in units if p == path and (p, s, e) not in keep]
            found = never_run_definitions(originals[path].data, mine)
            defs.update({(path, s, e): d for (s, e), d in found.items()})
        named = _named(left, {d.name for d in defs.values()})
        emptied_spans = {
            p: [(s, e) for q, s, e in units if q == p and (q, s, e) not in keep] for p in originals
        }
        files = {
            path: originals.get(path, entry).data
            for path, entry in left.entries.items()
            if _is_python(path) and entry.kind == "file"
        }
        sites = NameSites(files, {d.name for d in defs.values() if d.toplevel}, emptied_spans)
        targets = [u for u in units if u in defs and _unnamed(defs[u], named, sites)]
        if not targets:
            return
        tree = problem.current
        edited = sorted({u[0] for u in targets} | set(sites.paths))

        def build(remaining: Sequence[Unit]) -> Tree:
            stay = set(remaining)
            gone_names = {defs[u].name for u in targets if u not in stay and defs[u].toplevel}
            gone_names -= {defs[u].name for u in stay}  # a namesake that stays keeps its imports
            changes: dict[str, Entry | None] = {}
            for path in edited:
                gone = [u for u in targets if u[0] == path and u not in stay]
                edits = sites.edits(path, gone_names)
                if not gone and not edits:
                    continue
                count: dict[int, int] = {}
                for u in gone:
                    count[defs[u].block] = count.get(defs[u].block, 0) + 1
                filled: set[int] = set()
                deleted = set(gone)
                for p, s, e in units:
                    if p != path or (p, s, e) in keep:
                        continue
                    d = defs.get((p, s, e))
                    if d is None or (p, s, e) not in deleted:
                        edits.append((s, e, FILL))
                    elif count[d.block] == d.size and d.block not in filled:
                        filled.add(d.block)  # the list would be empty: one ``pass`` stays
                        edits.append((d.start, d.end, d.indent + b"pass\n"))
                    else:
                        edits.append((d.start, d.end, b""))
                base = originals.get(path, tree.entries[path])
                changes[path] = base.with_data(splice(base.data, edits))
            return tree.with_changes(changes) if changes else tree

        def describe(chunk: Sequence[Unit]) -> str:
            return _describe(
                "delete", "never-run functions", chunk, originals, lambda u: defs[u].start
            )

        bare = build([])
        if not all(compiles(bare[path].data, path) for path in edited):
            return  # a layout the line edits do not cover: the stubs stay
        if problem.try_first(self.name, [(bare, describe(targets))]) == 0:
            return
        learn_delete(problem, self.name, targets, build, describe)

    def _units(
        self, problem: Problem, tree: Tree, coverage: Mapping[str, FileCoverage]
    ) -> list[Unit]:
        if coverage is not self._coverage:
            self._coverage, self._bodies = coverage, {}
        units: list[Unit] = []
        for path in sorted(coverage):
            record = coverage[path]
            entry = tree.entries.get(path)
            if (
                entry is None
                or not entry.text
                or not (is_js(path) or _is_python(path) or _is_java(path))
                or problem.protected(path)
            ):
                continue
            if entry.data != record.data:
                if record.touched is None:
                    continue  # stale: offsets of another text
                # Java: the methods are found again by name in the file as it is now
                record = FileCoverage(entry.data, never_run_methods(entry.data, record.touched))
            key = (path, record.data)
            if key not in self._bodies and (_is_python(path) or _is_java(path)):
                self._bodies[key] = [(s, e) for s, e, _ in record.never]  # bodies already
            elif key not in self._bodies:
                self._bodies[key] = never_run_bodies(record.data, record.never)
            units += [(path, s, e) for s, e in self._bodies[key]]
        return units


def _describe(
    verb: str,
    what: str,
    chunk: Sequence[Unit],
    originals: Mapping[str, Entry],
    start: Callable[[Unit], int],
) -> str:
    """``<verb> <n> <what> in <k> files``, or the lines of the one file."""
    paths = sorted({p for p, _, _ in chunk})
    if len(paths) > 1:
        return f"{verb} {len(chunk)} {what} in {len(paths)} files"
    data = originals[paths[0]].data
    lines = [data.count(b"\n", 0, start(u)) + 1 for u in chunk]
    return describe_spans(f"{verb} {what}", paths[0], lines)


#: A word, and what precedes it: ``def`` (its definition), a dot (an attribute) or neither.
_WORD = re.compile(rb"(\bdef[ \t]+|\.[ \t]*)?\b([A-Za-z_][A-Za-z0-9_]*)")


def _named(tree: Tree, names: set[str]) -> dict[str, tuple[int, int]]:
    """How often each of ``names`` occurs in ``tree``'s Python files other than right after
    ``def``: (as a bare word, after a dot). Code and strings alike (a name built or listed in a
    string counts as bare); not in comments or docstrings."""
    counts = dict.fromkeys(names, (0, 0))
    if not names:
        return counts
    wanted = {n.encode(): n for n in names}
    for path, entry in tree.entries.items():
        if _is_python(path) and entry.kind == "file":
            code = without_docstrings(entry.data) or entry.data
            code = normalised(path, code) or code
            for match in _WORD.finditer(code):
                name = wanted.get(match.group(2))
                before = match.group(1)
                if name is None or (before is not None and before.startswith(b"def")):
                    continue
                bare, dotted = counts[name]
                counts[name] = (bare + (before is None), dotted + (before is not None))
    return counts


def _unnamed(
    definition: Definition, named: Mapping[str, tuple[int, int]], sites: NameSites
) -> bool:
    """May a never-run definition go whole? A method when no code names it bare (a call through
    an instance would have run it; ``property(_get)`` or a string would not); a function when
    nothing names it at all (``module.f`` included) but ``from … import`` statements and
    ``__all__`` lists, which go with it (module-level functions only)."""
    bare, dotted = named[definition.name]
    if definition.toplevel:
        bare -= sites.count(definition.name)
    return bare == 0 and (definition.method or dotted == 0)


def _is_python(path: str) -> bool:
    return path.endswith(".py")


def _is_java(path: str) -> bool:
    return path.endswith(".java")


def _fill(path: str) -> bytes:
    """What a never-run body becomes: ``...`` in Python, ``throw null;`` inside a Java method's
    braces, nothing inside JavaScript's."""
    if _is_java(path):
        return JAVA_FILL
    return FILL if _is_python(path) else b""


def _event(problem: Problem, files: int, units: int) -> None:
    problem.note(
        CoverageCut.name,
        f"coverage of the traced run: {units} never-run bodies in {files} files",
        files=files,
        units=units,
    )


__all__ = ["CoverageCut", "never_run_bodies"]
