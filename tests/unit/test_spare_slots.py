"""Idle slots of a batch run what follows it if it is rejected (``fold_batch``'s ``spare``,
``learn_delete``'s ``then``, the python pass's next level), through the real reducer."""

from __future__ import annotations

import time
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from repomin.passes.python_ast import PythonReduce
from repomin.runners.base import Outcome, RunRequest
from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import SamplingConfig
from repomin.search.deletion.learning import first_batch, learn_delete
from repomin.search.problem import Batch
from repomin.search.reducer import Reduction
from repomin.tree import Tree
from tests.conftest import FakeRunner, fake_oracle
from tests.unit._pass_harness import text_tree


class _Spans(FakeRunner):
    """A predicate runner that takes 20 ms a run and notes when each tree ran."""

    def __init__(self, fails: object) -> None:
        super().__init__(fails)  # type: ignore[arg-type]
        self.spans: list[tuple[str, float, float]] = []

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        start = time.monotonic()
        time.sleep(0.02)
        try:
            return super().run(tree, request)
        finally:
            with self.lock:
                self.spans.append((tree.digest, start, time.monotonic()))


def _reduction(tree: Tree, runner: FakeRunner, jobs: int) -> tuple[Reduction, Ledger]:
    ledger = Ledger()
    oracle = fake_oracle(
        runner, SamplingConfig(incumbent_check_every=0, baseline_runs=2), ledger=ledger
    )
    oracle.run_baseline(tree, jobs)
    ledger.phase("p")
    ledger.phase("python")
    red = Reduction(
        initial=tree, oracle=oracle, ledger=ledger, jobs=jobs, protected=lambda p: False
    )
    return red, ledger


def _tree() -> Tree:
    return text_tree({"a": "1\n", "b": "2\n", "c": "3\n", "BUG": "x\n"})


def test_a_batch_with_an_idle_slot_runs_the_spare_tree_beside_its_candidate() -> None:
    tree = _tree()
    runner = _Spans(lambda t: "BUG" in t and "a" in t)
    red, ledger = _reduction(tree, runner, jobs=2)
    before = red.oracle.samples
    asked: list[int] = []
    later = tree.without(["b"])

    def spare(k: int) -> list[Tree]:
        asked.append(k)
        return [later, tree, tree.without(["a"])]  # the incumbent and a candidate are skipped

    assert red.try_batch("p", Batch([(tree.without(["a"]), "drop a")], spare=spare)) == [False]
    assert asked == [1] and red.oracle.samples - before == 2
    assert red.oracle.cached(later) is not None  # decided, waiting for its proposal
    runs = {d: (s, e) for d, s, e in runner.spans}
    (s1, e1), (s2, e2) = runs[tree.without(["a"]).digest], runs[later.digest]
    assert s1 < e2 and s2 < e1  # at the same time
    # a sample of the phase, not an attempt: the identities hold
    ph = ledger.phases["p"]
    assert ph.attempts == 1 and ph.rejected == 1 and ph.oracle_samples == 2
    # proposed later, it costs no run
    assert red.try_batch("p", Batch([(later, "drop b")])) == [True]
    assert red.oracle.samples - before == 2


def test_no_spare_runs_when_the_batch_fills_the_slots_or_needs_no_run() -> None:
    tree = _tree()
    runner = _Spans(lambda t: "BUG" in t)
    red, _ = _reduction(tree, runner, jobs=2)
    asked: list[int] = []

    def spare(k: int) -> list[Tree]:
        asked.append(k)
        return [tree.without(["c"])]

    two = [(tree.without(["a"]), "a"), (tree.without(["b"]), "b")]
    red.try_batch("p", Batch(two, spare=spare))
    assert asked == []  # both slots busy
    cached = red.current.without(["a"])
    red.oracle.evaluate(cached, "p", "x")
    before = red.oracle.samples
    red.try_batch("p", Batch([(cached, "a again")], spare=spare))
    assert asked == [] and red.oracle.samples == before  # a cache hit alone: nothing runs


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 24), width=st.integers(2, 6))
def test_first_batch_is_what_the_search_proposes_first(n: int, width: int) -> None:
    tree = text_tree({f"f{i}": f"{i}\n" for i in range(n)})
    units = [f"f{i}" for i in range(n)]

    def build(remaining: Sequence[str]) -> Tree:
        keep = set(remaining)
        return tree.without([u for u in units if u not in keep])

    class _First:
        batch_width = width
        current = tree
        miss_rate = 0.0  # batches: a deterministic command
        first: list[str] | None = None

        def protected(self, path: str) -> bool:
            return False

        def try_first(self, phase: str, candidates: object) -> int | None:
            raise AssertionError("a batch problem gets batches")

        def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
            candidates = batch.candidates
            if self.first is None:
                self.first = [t.digest for t, _ in candidates]
            return [False] * len(candidates)

    problem = _First()
    learn_delete(problem, "p", units, build, lambda c: ",".join(c))
    expected = [t.digest for t in first_batch(units, build, width, tree.digest)]
    assert problem.first == expected


def _module(levels: str) -> Tree:
    return text_tree({"m.py": levels, "run": "python m.py\n"})


def test_the_python_pass_runs_the_next_levels_first_batch_in_the_last_batchs_idle_slot() -> None:
    # one needed def at the top level (a search of one unit), its body one needed statement
    source = "def f():\n    raise RuntimeError('BUG')\n"
    tree = _module(source)

    def fails(t: Tree) -> bool:
        return (
            "m.py" in t
            and b"raise RuntimeError('BUG')" in t["m.py"].data
            and (b"def f" in t["m.py"].data)
        )

    results = {}
    for jobs in (1, 2):
        runner = _Spans(fails)
        red, _ = _reduction(tree, runner, jobs)
        PythonReduce().run(red)
        results[jobs] = (red.current.digest, runner.spans, red.oracle.samples)
    assert results[1][0] == results[2][0] == tree.digest  # nothing can go
    spans = results[2][1][2:]  # after the 2 baseline runs
    # with two slots, deleting the def and replacing its body with pass ran at once
    assert len(spans) == 2 and spans[0][1] < spans[1][2] and spans[1][1] < spans[0][2]
    seq = results[1][1][2:]
    assert len(seq) == 2 and seq[0][2] <= seq[1][1]  # one slot: one after the other


def _two_files() -> Tree:
    return text_tree(
        {
            "a.py": "raise RuntimeError('BUG')\n",
            "b.py": "def g():\n    return 1\n",
        }
    )


def _needs_both(t: Tree) -> bool:
    wanted = {"a.py": (b"raise",), "b.py": (b"def g", b"return 1")}
    return all(p in t and all(w in t[p].data for w in ws) for p, ws in wanted.items())


def test_the_ordered_pass_offers_the_next_files_deletion_then_its_first_batch() -> None:
    from repomin.passes.ordered import TraceOrder

    tree = _two_files()
    red, _ = _reduction(tree, _Spans(_needs_both), jobs=2)
    ordered = TraceOrder()
    ordered.bind({"python": PythonReduce()})
    deletion = tree.without(["b.py"])
    assert ordered._first(red, ["b.py"], 1) == [deletion]  # not decided yet: its deletion
    assert ordered._first(red, [], 1) == [] and ordered._first(red, ["gone.py"], 1) == []
    red.oracle.evaluate(deletion, "ordered", "x")  # rejected: b.py is needed
    # then the python pass's first batch on b.py: its one top-level statement deleted
    (first,) = ordered._first(red, ["b.py"], 1)
    assert b"def g" not in first["b.py"].data and first["a.py"] == tree["a.py"]
    accepting, _ = _reduction(tree, _Spans(lambda t: True), jobs=2)
    accepting.oracle.evaluate(deletion, "ordered", "z")  # accepted: the next step adopts it
    assert ordered._first(accepting, ["b.py"], 1) == []


def test_a_files_last_python_batch_runs_the_next_files_deletion_beside_it() -> None:
    from repomin.analysis.trace import TraceResult
    from repomin.passes.hints import SearchHints
    from repomin.passes.ordered import TraceOrder

    tree = _two_files()
    runner = _Spans(_needs_both)
    red, _ = _reduction(tree, runner, jobs=2)
    trace = TraceResult("strace", frozenset(tree.entries), "ok", order=("a.py", "b.py"))
    ordered = TraceOrder(SearchHints(trace=trace))
    ordered.bind({"python": PythonReduce()})
    ordered.run(red)
    assert red.current.digest == tree.digest  # nothing can go
    spans = {d: (s, e) for d, s, e in runner.spans}
    last_a = tree.replace("a.py", b"")  # a.py's one search, of its one statement
    (s1, e1), (s2, e2) = spans[last_a.digest], spans[tree.without(["b.py"]).digest]
    assert s1 < e2 and s2 < e1  # b.py's deletion ran beside a.py's last batch


def test_the_learning_search_guesses_only_behind_single_units() -> None:
    tree = text_tree({f"f{i}": f"{i}\n" for i in range(40)})
    units = [f"f{i}" for i in range(40)]

    def build(remaining: Sequence[str]) -> Tree:
        keep = set(remaining)
        return tree.without([u for u in units if u not in keep])

    seen: list[tuple[list[int], int]] = []

    class _Wide:
        batch_width = 4
        current = tree
        miss_rate = 0.0  # batches: a deterministic command

        def protected(self, path: str) -> bool:
            return False

        def try_first(self, phase: str, candidates: object) -> int | None:
            raise AssertionError("a batch problem gets batches")

        def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
            candidates, spare = batch.candidates, batch.spare
            assert spare is not None
            sizes = [tree.file_count - t.file_count for t, _ in candidates]
            seen.append((sizes, len(spare(1))))
            return [False] * len(candidates)  # every unit is needed: groups split to units

    learn_delete(_Wide(), "p", units, build, lambda c: ",".join(c))
    assert any(max(sizes) > 1 for sizes, _ in seen)  # groups were tested, then split
    assert all(guessed == 0 for sizes, guessed in seen if max(sizes) > 1)
    assert any(guessed for sizes, guessed in seen if max(sizes) == 1)  # singles: a guess
