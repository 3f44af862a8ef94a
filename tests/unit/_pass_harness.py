"""In-process harnesses for pass tests: a predicate oracle, no subprocess.

``PredicateProblem`` is the minimal ``Problem``: ``try_first`` walks the candidates in order and
adopts the first one that is smaller (as the real driver requires) and satisfies the predicate.
``reduce_with_reduction`` runs passes through the real :class:`~repomin.search.reducer.Reduction`
and :class:`~repomin.sampling.oracle.Oracle` with the shared ``FakeRunner`` (a predicate, no
subprocess), so ``jobs=2`` exercises speculative evaluation too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.passes import REGISTRY, STALL_ONLY
from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import Oracle, SamplingConfig
from repomin.search.background import Background
from repomin.search.problem import Pass, ProblemDefaults
from repomin.search.reducer import Reduction, run_passes
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner

T = TypeVar("T")
Predicate = Callable[[Tree], bool]


def text_tree(files: Mapping[str, str | bytes]) -> Tree:
    return Tree.of(
        {
            path: Entry("file", data.encode() if isinstance(data, str) else data, 0o644, True)
            for path, data in files.items()
        }
    )


def smaller(tree: Tree, than: Tree) -> bool:
    return tree.digest != than.digest and (
        tree.byte_count < than.byte_count or len(tree) < len(than)
    )


class PredicateProblem(ProblemDefaults):
    """A ``Problem`` whose oracle is a Python predicate (counts every call in ``calls``;
    ``runs``, what budgets count, stays 0 unless ``count_runs``)."""

    def __init__(
        self,
        tree: Tree,
        predicate: Predicate,
        protected: Callable[[str], bool] = lambda _: False,
    ) -> None:
        self.count_runs = False
        self._current = tree
        self.predicate = predicate
        self._protected = protected
        self.calls = 0
        self.accepted: list[tuple[str, str]] = []
        self.proposed = 0

    @property
    def current(self) -> Tree:
        return self._current

    @property
    def runs(self) -> int:
        return self.calls if self.count_runs else 0

    def protected(self, path: str) -> bool:
        return self._protected(path)

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        for pos, (tree, description) in enumerate(candidates):
            self.proposed += 1
            if not smaller(tree, self._current):
                continue
            self.calls += 1
            if self.predicate(tree):
                self._current = tree
                self.accepted.append((phase, description))
                return pos
        return None


class BesideProblem(PredicateProblem):
    """A predicate problem with two batch slots, whose background work (``later``) runs in a
    thread of its own until settled, as the reduction's does with ``--jobs 2`` and a
    deterministic command."""

    batch_width = 2

    def __init__(
        self,
        tree: Tree,
        predicate: Predicate,
        protected: Callable[[str], bool] = lambda _: False,
    ) -> None:
        super().__init__(tree, predicate, protected)
        self.background = Background(lambda: True)

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        self.background.later(phase, work, finish)

    def settle(self, phase: str, propose: bool = True) -> None:
        self.background.settle(phase, propose)


def fresh(schedule: Sequence[str]) -> dict[str, Pass]:
    """A new, unwired instance of each pass named in ``schedule`` (for ``run_passes``)."""
    return {name: REGISTRY[name]() for name in schedule}


def reduce_in_process(
    pass_: Pass, tree: Tree, predicate: Predicate, *, rounds: int = 20
) -> PredicateProblem:
    """Run one pass to its own fixpoint under a predicate oracle."""
    problem = PredicateProblem(tree, predicate)
    for _ in range(rounds):
        before = problem.current.digest
        pass_.run(problem)
        if problem.current.digest == before:
            break
    return problem


def predicate_oracle(tree: Tree, predicate: Predicate) -> tuple[Oracle, Ledger]:
    """The real oracle and ledger over a predicate runner, its baseline run on ``tree``."""
    ledger = Ledger()
    oracle = Oracle(
        runner=FakeRunner(predicate),
        contract=FailureContract(FailureSpec(match="BUG")),
        command="fake",
        env={},
        timeout=10.0,
        config=SamplingConfig(baseline_runs=2, final_runs=0, incumbent_check_every=0),
        ledger=ledger,
    )
    oracle.run_baseline(tree)
    return oracle, ledger


def reduce_with_reduction(
    passes: dict[str, Pass], tree: Tree, predicate: Predicate, *, jobs: int = 1
) -> tuple[Tree, Ledger]:
    """Run ``passes`` through the real driver, oracle and ledger with a predicate runner."""
    oracle, ledger = predicate_oracle(tree, predicate)
    reduction = Reduction(
        initial=tree, oracle=oracle, ledger=ledger, jobs=jobs, protected=lambda _: False
    )
    result = run_passes(reduction, tuple(passes), passes=passes, stall_only=STALL_ONLY)
    return result.tree, ledger
