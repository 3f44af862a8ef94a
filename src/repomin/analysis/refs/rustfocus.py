"""The Rust cut that goes straight to rustc's first error: the failing item alone.

rustc names where its first error is (``--> src/lib.rs:210:15``). A crate whose new rustc
turns a warning into an error under ``#![deny(warnings)]`` fails in one item, and every other
module and item is there only because the crate's own code names it, so no single ``mod`` or
item cut can go (each is still named by another), while all of them together can. So, once,
from the baseline's failing output, this proposes one tree:

* the files on the module chain from a crate root to each file rustc's first error points at
  (the ``mod`` declarations of :class:`~repomin.analysis.refs.rust.RustIndex`);
* in each of them only the inner attributes (``#![deny(warnings)]``: they decide what is an
  error), the ``mod`` declarations that lead down the chain, and the top-level items the error
  lies in (its primary location and the notes below it); every other item, ``use`` and ``mod``
  declaration deleted;
* every file no root reaches after that edit deleted with it.

An item kept may name a deleted one: the candidate then fails differently (the pinned identity
rejects it) and costs one run; the ``mod`` and item cuts go on as before. Nothing is proposed
when the first error lies in no reachable, editable Rust file.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from repomin.analysis.loadframes import in_tree
from repomin.analysis.refs.graph import RefGraph
from repomin.analysis.refs.rustitems import items, without_spans
from repomin.analysis.refs.rustsrc import lex, scan
from repomin.failure.normalise import strip_ansi
from repomin.tree import Tree

_HEADER = re.compile(r"^(error|warning)(?:\[[^\]]*\])?: ", re.M)
_ARROW = re.compile(r"^\s*-->\s+(?P<path>[^\s:][^:\n]*\.rs):(?P<line>\d+):(?P<col>\d+)\s*$", re.M)
_CARGO_SUMMARY = "error: could not compile"
#: At most this many locations are followed (the first error's, from the first outputs).
MAX_LOCATIONS = 16


def first_error_locations(output: str) -> list[tuple[str, int, int]]:
    """The ``(path, line, column)`` of each ``-->`` line of rustc's first ``error`` in
    ``output``, in order (the primary location first); none when there is no error."""
    text = strip_ansi(output)
    headers = list(_HEADER.finditer(text))
    for k, header in enumerate(headers):
        if header.group(1) != "error" or text.startswith(_CARGO_SUMMARY, header.start()):
            continue
        end = headers[k + 1].start() if k + 1 < len(headers) else len(text)
        found = _ARROW.finditer(text, header.end(), end)
        return [(m["path"], int(m["line"]), int(m["col"])) for m in found]
    return []


def focus_tree(
    graph: RefGraph,
    failures: Iterable[tuple[str, str]],
    protected: Callable[[str], bool],
    graph_of: Callable[[Tree], RefGraph],
) -> tuple[Tree, str] | None:
    """The failing item alone (see the module docstring), with a description, or None."""
    tree = graph.tree
    lines: dict[str, set[tuple[int, int]]] = {}
    for output, workdir in failures:
        for path, line, col in first_error_locations(output)[:MAX_LOCATIONS]:
            rel = in_tree(path, workdir, tree)
            if rel is not None and graph.language(rel) == "rust" and rel in graph.reachable:
                lines.setdefault(rel, set()).add((line, col))
        if lines:
            break
    chains = _chains(graph, lines)
    if not chains or any(protected(p) for p in chains):
        return None
    edited = tree
    for path, leads in chains.items():
        text = graph.ctx.text(path)
        if text.encode() != tree.entries[path].data:
            return None  # not UTF-8: an edit through the decoded text would change other bytes
        kept = _kept_text(text, leads, lines.get(path, set()))
        if kept != text:
            edited = edited.replace(path, kept.encode())
    after = graph_of(edited)
    gone = [p for p in after.unreachable() if p not in graph.unreachable() and not protected(p)]
    candidate = edited.without(gone)
    if candidate.byte_count >= tree.byte_count:
        return None
    where = ", ".join(f"{p}:{min(n)[0]}" for p, n in sorted(lines.items()))
    return candidate, f"keep only the item of rustc's first error ({where}) and its module chain"


def _chains(graph: RefGraph, targets: dict[str, set[tuple[int, int]]]) -> dict[str, set[str]]:
    """Per file on a module chain from a crate root to a target: the files it leads to."""
    roots = sorted(r for r in graph.rust.crate_roots if r in graph.reachable)
    parents: dict[str, str | None] = {r: None for r in roots}
    queue = deque(roots)
    while queue:
        path = queue.popleft()
        for child in sorted(graph.edges(path)):
            if graph.language(child) == "rust" and child not in parents:
                parents[child] = path
                queue.append(child)
    chains: dict[str, set[str]] = {}
    for target in targets:
        if target not in parents:
            return {}
        node: str | None = target
        below: str | None = None
        while node is not None:
            chains.setdefault(node, set())
            if below is not None:
                chains[node].add(below)
            below, node = node, parents[node]
    return chains


def _kept_text(text: str, leads: set[str], places: set[tuple[int, int]]) -> str:
    """``text`` with only its inner attributes, the ``mod`` declarations naming a file of
    ``leads`` (by name: the file stem or its directory) and the items containing ``places``
    (line and column, from 1; rustc counts columns in characters)."""
    code = lex(text).code
    starts = _line_starts(text)
    offsets = [starts[n - 1] + c - 1 for n, c in sorted(places) if 0 < n <= len(starts) and c > 0]
    lead_names = {_module_name(p) for p in leads}
    keep_mods = [(d.start, d.end) for d in scan(text).mods if d.name in lead_names]
    spans: list[tuple[int, int]] = []
    for item in items(code):
        if code[item.start : item.end].lstrip().startswith("#!"):
            continue  # an inner attribute
        if any(item.start <= at < item.end for at in offsets):
            continue
        if any(s < item.end and item.start < e for s, e in keep_mods):
            continue
        spans.append((item.start, item.end))
    return without_spans(text, _disjoint(spans))


def _disjoint(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _module_name(path: str) -> str:
    """``src/uri/mod.rs`` -> ``uri``; ``src/uri/path.rs`` -> ``path``."""
    parts = path.removesuffix(".rs").split("/")
    return parts[-2] if parts[-1] == "mod" and len(parts) > 1 else parts[-1]


def _line_starts(text: str) -> list[int]:
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts
