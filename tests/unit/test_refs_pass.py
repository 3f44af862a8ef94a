"""The ``refs`` pass: one cut of everything unreachable, bisection on rejection, re-runs when
content changes drop references, events; and the property that the cut never removes a file
the graph can reach."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.analysis.refs import RefGraph, distances
from repomin.passes import DEFAULT_SCHEDULE, REGISTRY
from repomin.passes.refs import RefsCut
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, reduce_with_reduction, text_tree

FILES = {
    "main.py": "import a\n",
    "a.py": "import b\n",
    "b.py": "",
    "c.py": "import d\n",
    "d.py": "",
    "e.py": "",
    "data.txt": "never cut",
}


def test_registered_after_trace() -> None:
    assert REGISTRY["refs"] is RefsCut
    assert DEFAULT_SCHEDULE.index("refs") == DEFAULT_SCHEDULE.index("trace") + 1


def test_one_candidate_deletes_everything_unreachable() -> None:
    problem = PredicateProblem(text_tree(FILES), lambda t: "b.py" in t)
    RefsCut("python3 main.py").run(problem)
    assert sorted(problem.current.entries) == ["a.py", "b.py", "data.txt", "main.py"]
    assert problem.calls == 1
    assert "delete 3 files the reference graph cannot reach: python 3" in problem.accepted[0][1]


def test_rejection_bisects_and_keeps_what_the_oracle_needs() -> None:
    problem = PredicateProblem(text_tree(FILES), lambda t: "d.py" in t)
    cut = RefsCut("python3 main.py")
    cut.run(problem)
    assert sorted(problem.current.entries) == ["a.py", "b.py", "d.py", "data.txt", "main.py"]
    calls = problem.calls
    cut.run(problem)  # same graph, survivor known: nothing proposed
    assert problem.calls == calls


def test_rerun_when_a_content_change_drops_a_reference() -> None:
    tree = text_tree(FILES).without(["c.py", "d.py", "e.py"])
    problem = PredicateProblem(tree, lambda t: "main.py" in t)
    cut = RefsCut("python3 main.py")
    cut.run(problem)
    assert problem.calls == 0  # everything reachable
    problem._current = problem.current.replace("a.py", b"pass\n")  # a content pass edited a.py
    cut.run(problem)
    assert "b.py" not in problem.current


def test_protected_files_stay() -> None:
    problem = PredicateProblem(text_tree(FILES), lambda t: True, protected=lambda p: p == "e.py")
    RefsCut("python3 main.py").run(problem)
    assert "e.py" in problem.current and "c.py" not in problem.current


def test_events_with_language_counts_through_the_real_driver() -> None:
    tree = text_tree({**FILES, "x.js": "", "y.c": ""})
    final, ledger = reduce_with_reduction(
        {"refs": RefsCut("python3 main.py")}, tree, lambda t: "b.py" in t
    )
    assert "c.py" not in final and "x.js" not in final
    info = [e for e in ledger.events if e["phase"] == "refs" and e["decision"] == "info"]
    assert info[0]["unreachable_by_language"] == {"c": 1, "javascript": 1, "python": 3}
    accepted = [e for e in ledger.events if e["phase"] == "refs" and e["decision"] == "accepted"]
    assert accepted and accepted[0]["files"] == 4
    assert ledger.phase("refs").files_removed == 5


def test_distances_prior() -> None:
    dist = distances(text_tree(FILES), command="python3 main.py")
    assert dist["main.py"] == 0.0 and dist["a.py"] == 1.0 and dist["b.py"] == 2.0
    assert dist["c.py"] == math.inf and dist["data.txt"] == math.inf


# -- property: the cut never removes a file the graph can reach --------------------------------

NAMES = [f"m{i}" for i in range(8)]


@st.composite
def python_trees(draw: st.DrawFn) -> Tree:
    files: dict[str, str] = {}
    for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, unique=True)):
        folder = draw(st.sampled_from(["", "pkg/", "pkg/sub/"]))
        imports = draw(st.lists(st.sampled_from(NAMES), max_size=3))
        style = draw(st.sampled_from(["import {}", "from . import {}", "x = '{}'"]))
        files[f"{folder}{name}.py"] = "".join(style.format(i) + "\n" for i in imports)
    if draw(st.booleans()):
        files["pkg/__init__.py"] = ""
    files["notes.cfg"] = draw(st.sampled_from(["", "m1.py", "pkg/m2.py"]))
    return text_tree(files)


@settings(max_examples=60, deadline=None)
@given(python_trees(), st.sampled_from(NAMES))
def test_cut_never_removes_a_reachable_file(tree: Tree, entry: str) -> None:
    command = f"python3 {entry}.py"
    graph = RefGraph(tree, command=command)
    reachable = graph.reachable
    # Closed under edges, contains every root and every unknown-kind file.
    assert graph.roots <= reachable and graph.keepers <= reachable
    for node in reachable:
        assert graph.edges(node) <= reachable
    problem = PredicateProblem(tree, lambda t: True)
    RefsCut(command).run(problem)
    assert reachable <= set(problem.current.entries)
    assert set(tree.entries) - set(problem.current.entries) == set(graph.unreachable())
