"""The Rust edits the reference graph can propose, as candidate trees (pure: the ``refs`` pass
proposes them, the search decides).

* ``mod`` cuts: a ``mod name;`` declaration removed with the ``use`` items of its file that
  start at the module (:func:`~repomin.analysis.refs.rustsrc.without_module`), and with every
  file no root reaches after that edit (``mod uri;`` goes with ``src/uri/``). Proposed only
  when nothing that stays names the module or an item its files define (no ``uri::``, no
  ``Uri`` left elsewhere): a module still named cannot go without the code naming it, so the
  cut would only cost a run.
* item cuts: per file, the items nothing else names
  (:func:`~repomin.analysis.refs.rustitems.dead_spans`), with the files that edit leaves
  unreachable (a removed ``#[cfg(test)] mod tests;``'s file).

Each cut has a key (what it edits) and a fingerprint (the content it was computed from): a
caller that saw a cut rejected need not propose it again until its fingerprint changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from repomin.analysis.refs.graph import RefGraph
from repomin.analysis.refs.rustitems import dead_spans, items, without_spans, words
from repomin.analysis.refs.rustsrc import lex, scan, without_module
from repomin.tree import Tree

#: At most this many edits of a kind per call (each builds a graph of its tree).
MAX_EDITS = 256
_NAMED_KINDS = frozenset(
    {"fn", "struct", "enum", "union", "trait", "type", "const", "static", "macro", "mod"}
)


@dataclass(frozen=True)
class RustCut:
    key: tuple[str, ...]
    #: What the cut was computed from (compared with ``==``).
    fingerprint: object
    tree: Tree
    description: str
    saved: int


@dataclass(frozen=True)
class _Edit:
    key: tuple[str, ...]
    path: str
    text: str
    what: str


def _editable(graph: RefGraph, protected: Callable[[str], bool]) -> list[tuple[str, str]]:
    """(path, text) of the reachable Rust files an edit may change: not protected, and UTF-8
    (an edit through a decoded text would alter the bytes it could not decode)."""
    out: list[tuple[str, str]] = []
    for path in sorted(p for p in graph.reachable if graph.language(p) == "rust"):
        text = graph.ctx.text(path)
        if not protected(path) and text.encode() == graph.tree.entries[path].data:
            out.append((path, text))
    return out


def _counts(graph: RefGraph, paths: set[str] | frozenset[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in paths:
        if graph.language(path) == "rust" and path in graph.tree.entries:
            counts.update(words(graph.ctx.text(path)))
    return counts


def _module_edits(graph: RefGraph, files: list[tuple[str, str]]) -> list[_Edit]:
    edits: list[_Edit] = []
    seen: set[tuple[str, ...]] = set()
    for path, text in files:
        for decl in scan(text).mods:
            key = ("mod", path, decl.name)
            if key in seen or not graph.rust.declared(path, decl):
                continue
            seen.add(key)
            if len(edits) >= MAX_EDITS:
                return edits
            edited = without_module(text, decl, graph.rust.is_crate_root(path))
            edits.append(_Edit(key, path, edited, f"delete `mod {decl.name};` in {path}"))
    return edits


def _item_edits(graph: RefGraph, files: list[tuple[str, str]], counts: Counter[str]) -> list[_Edit]:
    tests_built = "test" in graph.rust.kinds
    edits: list[_Edit] = []
    for path, text in files[:MAX_EDITS]:
        spans = dead_spans(text, counts, tests_built)
        if spans:
            what = f"delete {len(spans)} item(s) of {path} nothing else names"
            edits.append(_Edit(("items", path), path, without_spans(text, spans), what))
    return edits


def _still_named(graph: RefGraph, edit: _Edit, gone: list[str], counts: Counter[str]) -> bool:
    """Does code that stays name the module ``edit`` cuts, or an item its files define?"""
    names = {edit.key[2]}
    for path in gone:
        if graph.language(path) == "rust":
            names |= {
                i.name for i in items(lex(graph.ctx.text(path)).code) if i.kind in _NAMED_KINDS
            }
    removed = words(graph.ctx.text(edit.path)) - words(edit.text)
    inside = _counts(graph, set(gone))
    return any(counts[n] - inside[n] - removed[n] > 0 for n in names if n)


def rust_cuts(
    graph: RefGraph,
    kind: str,
    protected: Callable[[str], bool],
    graph_of: Callable[[Tree], RefGraph],
) -> list[RustCut]:
    """The ``kind`` (``"mod"`` or ``"items"``) cuts of ``graph``'s tree, the largest first;
    ``graph_of`` makes the graph of an edited tree (same command, roots and kept paths)."""
    tree = graph.tree
    files = _editable(graph, protected)
    counts = _counts(graph, graph.reachable)
    edits = _module_edits(graph, files) if kind == "mod" else _item_edits(graph, files, counts)
    before = set(graph.unreachable())
    cuts: list[RustCut] = []
    for edit in edits:
        edited = tree.replace(edit.path, edit.text.encode())
        after = graph_of(edited)
        gone = [p for p in after.unreachable() if p not in before and not protected(p)]
        if kind == "mod" and _still_named(graph, edit, gone, counts):
            continue
        candidate = edited.without(gone)
        files_note = f"{len(gone)} file{'' if len(gone) == 1 else 's'}"
        description = f"{edit.what} and the {files_note} only it reached" if gone else edit.what
        fingerprint = (edit.text, tuple((p, tree.entries[p]) for p in sorted(gone)))
        saved = tree.byte_count - candidate.byte_count
        cuts.append(RustCut(edit.key, fingerprint, candidate, description, saved))
    cuts.sort(key=lambda c: -c.saved)
    return cuts
