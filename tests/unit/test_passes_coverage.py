"""The ``coverage`` pass: never-run bodies emptied in one candidate, split when rejected."""

from __future__ import annotations

import shutil

import pytest

from repomin.analysis.trace import TraceResult, trace_opened_files
from repomin.analysis.v8coverage import FileCoverage
from repomin.passes.coverage import CoverageCut, never_run_bodies
from repomin.passes.hints import SearchHints
from repomin.runners.host import HostRunner
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree

SRC = (
    "function a() { return 1; }\n"  # never ran
    "function b() {\n  if (x) { y(); } else { z(); }\n}\n"  # ran; the else never ran
    "function c() { var o = { k: function () { w(); } }; }\n"  # never ran (nested bodies)
    "function d() {}\n"  # never ran, already empty
)


def spans(src: str, *texts: str) -> tuple[tuple[int, int, bool], ...]:
    out = []
    for text in texts:
        start = src.index(text)
        out.append((start, start + len(text), text.startswith("function")))
    return tuple(out)


NEVER = spans(
    SRC,
    "function a() { return 1; }",
    "else { z(); }",
    "function c() { var o = { k: function () { w(); } }; }",
    "function d() {}",
)


def test_never_run_bodies_are_the_outermost_non_empty_pairs() -> None:
    data = SRC.encode()
    bodies = [data[s:e] for s, e in never_run_bodies(data, NEVER)]
    assert bodies == [b" return 1; ", b" z(); ", b" var o = { k: function () { w(); } }; "]
    assert never_run_bodies(b"f(", NEVER) == []  # does not lex


def hints_for(tree: Tree, **extra: str) -> SearchHints:
    coverage = {"m.js": FileCoverage(tree["m.js"].data, NEVER)}
    coverage.update({p: FileCoverage(d.encode(), ()) for p, d in extra.items()})
    return SearchHints(trace=TraceResult("strace", frozenset(tree), "", coverage=coverage))


def test_one_candidate_when_nothing_that_never_ran_is_needed() -> None:
    tree = text_tree({"m.js": SRC})
    problem = PredicateProblem(tree, lambda t: b"function b" in t["m.js"].data)
    CoverageCut(hints_for(tree)).run(problem)
    assert problem.calls == 1
    assert problem.current["m.js"].data == (
        b"function a() {}\n"
        b"function b() {\n  if (x) { y(); } else {}\n}\n"
        b"function c() {}\n"
        b"function d() {}\n"
    )


def test_rejected_cut_is_split_and_keeps_exactly_the_needed_body() -> None:
    tree = text_tree({"m.js": SRC})
    problem = PredicateProblem(tree, lambda t: b"z();" in t["m.js"].data)
    CoverageCut(hints_for(tree)).run(problem)
    data = problem.current["m.js"].data
    assert b"z();" in data and b"return 1" not in data and b"w();" not in data
    # 1-minimal over the units: the survivor's own edit is rejected
    assert b"else { z(); }" in data


def test_stale_protected_and_foreign_files_are_left_alone() -> None:
    tree = text_tree({"m.js": SRC, "n.js": SRC, "t.txt": SRC})
    hints = hints_for(tree)
    assert hints.trace is not None and hints.trace.coverage is not None
    coverage = dict(hints.trace.coverage)
    coverage["t.txt"] = coverage["m.js"]
    edited = tree.replace("m.js", SRC.encode() + b"// edited\n")  # stale: changed since
    hints = SearchHints(trace=TraceResult("strace", frozenset(tree), "", coverage=coverage))
    problem = PredicateProblem(edited, lambda t: True)
    CoverageCut(hints).run(problem)
    assert problem.calls == 0
    problem = PredicateProblem(tree, lambda t: True, protected=lambda p: p == "m.js")
    CoverageCut(hints).run(problem)
    assert problem.calls == 0
    assert CoverageCut(SearchHints()).run(PredicateProblem(tree, lambda t: True)) is None


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_end_to_end_with_node_on_the_host() -> None:
    import subprocess
    import tempfile
    from pathlib import Path

    from repomin.tree import materialise

    lib = (
        "exports.parse = function (s) {\n"
        "  if (s.length > 100) { throw new Error('too long'); }\n"
        "  return s.split(',');\n"
        "};\n"
        "exports.format = function (xs) {\n"
        "  return xs.map(function (x) { return '<' + x + '>'; });\n"
        "};\n"
    )
    app = "const lib = require('./lib');\nconst v = lib.parse('a,b');\nv.nope();\n"
    tree = text_tree({"app.js": app, "lib.js": lib})
    runner = HostRunner()
    try:
        trace = trace_opened_files(runner, tree, "node app.js", {}, 30, methods=("atime",))
    finally:
        runner.close()
    assert trace.coverage is not None, trace.reason

    def fails(candidate: Tree) -> bool:
        with tempfile.TemporaryDirectory() as root:
            materialise(candidate, Path(root))
            run = subprocess.run(["node", "app.js"], cwd=root, capture_output=True, timeout=30)
        return b"v.nope is not a function" in run.stderr

    assert fails(tree)
    problem = PredicateProblem(tree, fails)
    CoverageCut(SearchHints(trace=trace)).run(problem)
    assert problem.calls == 1
    data = problem.current["lib.js"].data
    assert b"too long" not in data and b"'<'" not in data and b"split" in data
