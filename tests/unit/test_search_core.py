"""The search core's objects on their own: the incumbent, the decider's widths, the neutral
problem's batch, and the rule that nothing probes a problem's type."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import SamplingConfig
from repomin.search.decider import Labels
from repomin.search.incumbent import Incumbent, Mutation
from repomin.search.problem import Batch, ProblemDefaults
from repomin.search.reducer import Reduction
from repomin.search.view import focus
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle

SRC = Path(__file__).resolve().parents[2] / "src" / "repomin"


def _tree(names: Iterable[str]) -> Tree:
    return Tree.of({n: Entry("file", f"{n}\n".encode(), text=True) for n in names})


class _Needs(ProblemDefaults):
    """A neutral problem over files: a tree is good when it keeps ``needed``."""

    def __init__(self, tree: Tree, needed: set[str]) -> None:
        self._current = tree
        self.needed = needed
        self.decided: list[frozenset[str]] = []

    @property
    def current(self) -> Tree:
        return self._current

    def protected(self, path: str) -> bool:
        return False

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        for pos, (tree, _) in enumerate(candidates):
            self.decided.append(frozenset(tree.entries))
            if self.needed <= set(tree.entries):
                self._current = tree
                return pos
        return None


def test_the_neutral_batch_adopts_the_first_and_decides_the_rest_on_top_of_it() -> None:
    tree = _tree(["a", "b", "c", "d"])
    problem = _Needs(tree, {"d"})
    drops = [["a"], ["d"], ["b"], ["c"]]
    candidates = [(tree.without(d), f"delete {d[0]}") for d in drops]

    def combine(positions: Sequence[int]) -> Tree:
        return tree.without(p for i in positions for p in drops[i])

    outcomes = problem.try_batch("files", Batch(candidates, combine=combine))
    assert outcomes == [True, False, True, True]
    assert set(problem.current.entries) == {"d"}
    # each later candidate was decided with every adopted one before it
    assert problem.decided[2] == frozenset({"c", "d"})


def test_the_neutral_batch_leaves_the_rest_undecided_without_combine() -> None:
    tree = _tree(["a", "b", "c"])
    problem = _Needs(tree, {"c"})
    candidates = [(tree.without([n]), n) for n in ("a", "b", "c")]
    assert problem.try_batch("files", Batch(candidates)) == [True, None, None]
    assert len(problem.decided) == 1
    assert problem.batch_width == problem.chain_width == 1


@pytest.mark.parametrize(
    ("rate", "jobs", "batch", "chain"),
    [(1.0, 4, 4, 1), (1.0, 2, 2, 1), (0.6, 4, 4, 4), (0.6, 2, 1, 2)],
)
def test_the_widths_are_the_deciders_and_reach_through_a_view(
    rate: float, jobs: int, batch: int, chain: int
) -> None:
    """Deterministic: batches of one candidate per slot; flaky: batches from 4 slots, below
    that one at a time, chained."""
    tree = _tree(["keep", "x", "y"])
    runner = FakeRunner(lambda t: "keep" in t, rate=rate)
    oracle = fake_oracle(runner, SamplingConfig(), timeout=10, jobs=jobs)
    oracle.run_baseline(tree, jobs)
    red = Reduction(
        initial=tree, oracle=oracle, ledger=Ledger(), jobs=jobs, protected=lambda p: False
    )
    view = focus(red, "x", 10)
    assert (red.batch_width, red.chain_width) == (batch, chain)
    assert (view.batch_width, view.chain_width) == (batch, chain)


def test_the_incumbent_adopts_records_and_backtracks_to_the_last_good_tree() -> None:
    source = _tree(["keep", "a", "b", "c"])
    runner = FakeRunner(lambda t: "keep" in t and "a" in t)
    ledger = Ledger()
    oracle = fake_oracle(runner, SamplingConfig(mode="strict"), timeout=10, ledger=ledger)
    oracle.run_baseline(source, 1)
    seen: list[Mutation] = []
    reverted: list[Tree] = []
    incumbent = Incumbent(
        source,
        oracle=oracle,
        ledger=ledger,
        label=Labels().next,
        on_accept=seen.append,
        on_revert=reverted.append,
    )
    good = source.without(["b"])
    bad = good.without(["a"])  # adopted by mistake: it lost the failure
    worse = bad.without(["c"])
    for tree in (good, bad, worse):
        verdict = oracle.evaluate(good, "files", f"files-{tree.file_count}")
        incumbent.adopt("files", f"to {tree.file_count}", tree, verdict)
    assert [m.tree for m in seen] == [good, bad, worse]
    assert incumbent.history == (source, good, bad, worse)
    assert incumbent.backtrack("files") == good
    assert incumbent.current == good and incumbent.history == (source, good)
    assert reverted == [good]
    events = [e for e in ledger.events if "backtracked" in e["description"]]
    assert events and "2 later tree(s) revoked" in events[0]["description"]


def test_labels_are_unique_per_call() -> None:
    labels = Labels()
    assert [labels.next("lines"), labels.next("files")] == ["lines-c1", "files-c2"]


def _probes(path: Path) -> list[str]:
    """``isinstance`` calls on a problem object in ``path`` (``problem``, ``self.problem``,
    ``self._problem``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"):
            continue
        subject = node.args[0] if node.args else None
        name = getattr(subject, "id", None) or getattr(subject, "attr", None)
        if name in {"problem", "_problem", "reduction"}:
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_probe_finder_finds_one(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(self, problem):\n    return isinstance(self._problem, int)\n")
    assert _probes(module) == ["m.py:2"]


def test_nothing_probes_a_problems_type() -> None:
    """What a pass or a search may use of the problem is declared on ``Problem``: no door is
    found by ``isinstance``."""
    files = sorted((SRC / "search").rglob("*.py")) + sorted((SRC / "passes").rglob("*.py"))
    assert [p for f in files for p in _probes(f)] == []


WIDTHS = {"batch_width", "chain_width", "try_batch"}


def _width_reads(path: Path) -> list[str]:
    """Where a module reads how many candidates the search decides at once."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in WIDTHS
    ]


def test_the_width_finder_finds_one(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def run(self, problem):\n    return problem.batch_width > 1\n")
    assert _width_reads(module) == ["m.py:2"]


def test_no_pass_knows_the_width() -> None:
    """How many candidates run at once is the search layer's: a pass proposes (through
    ``try_first`` or a deletion search of ``search/deletion/``) and never reads a width or
    hands a batch itself, so every pass runs at whatever width the decider chooses."""
    files = sorted((SRC / "passes").rglob("*.py"))
    assert [p for f in files for p in _width_reads(f)] == []
