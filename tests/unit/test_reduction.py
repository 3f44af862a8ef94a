"""Passes and the driver with in-process predicates (FakeRunner: no subprocess)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repomin.passes import STALL_ONLY
from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import Budget, Oracle, Sampling, SamplingConfig
from repomin.search.background import Background
from repomin.search.reducer import Reduction, ReductionResult, run_passes
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle
from tests.unit._pass_harness import fresh


def reduce_tree(
    tree: Tree,
    fails: object,
    *,
    jobs: int = 1,
    rate: float = 1.0,
    keep: tuple[str, ...] = (),
    budget: Budget | None = None,
    mode: str = "auto",
    check_every: int = 8,
) -> tuple[ReductionResult, Ledger, Oracle, FakeRunner]:
    runner = FakeRunner(fails, rate=rate)  # type: ignore[arg-type]
    ledger = Ledger()
    oracle = fake_oracle(
        runner,
        SamplingConfig(mode=mode, incumbent_check_every=check_every),
        timeout=10,
        ledger=ledger,
        budget=budget or Budget(),
    )
    oracle.run_baseline(tree, jobs)
    red = Reduction(
        initial=tree,
        oracle=oracle,
        ledger=ledger,
        jobs=jobs,
        protected=lambda p: any(p == k or k.startswith(p + "/") for k in keep),
    )
    return (
        run_passes(red, ("files", "lines"), passes=fresh(("files", "lines"))),
        ledger,
        oracle,
        runner,
    )


def _tree(n: int) -> Tree:
    return Tree.of(
        {
            f"d{i % 7}/sub{i % 3}/f{i}.txt": Entry(
                "file", f"a{i}\nb{i}\nc{i}\n".encode(), text=True
            )
            for i in range(n)
        }
    )


def needs(*pairs: tuple[str, bytes]) -> object:
    def fails(tree: Tree) -> bool:
        return all(p in tree and line in tree[p].data for p, line in pairs)

    return fails


def assert_identities(ledger: Ledger) -> None:
    for ph in ledger.phases.values():
        assert ph.attempts == ph.no_op + ph.rejected + ph.accepted + ph.superseded + ph.aborted


def test_hierarchical_deletion_finds_needed_lines() -> None:
    tree = _tree(200)
    fails = needs(("d3/sub1/f10.txt", b"b10"), ("d5/sub2/f5.txt", b"c5"))
    result, ledger, oracle, runner = reduce_tree(tree, fails)
    assert result.stop_reason == "fixpoint"
    assert sorted(result.tree.paths) == ["d3/sub1/f10.txt", "d5/sub2/f5.txt"]
    assert result.tree["d3/sub1/f10.txt"].data == b"b10\n"
    assert result.tree["d5/sub2/f5.txt"].data == b"c5\n"
    assert_identities(ledger)
    assert ledger.cache_hits > 0  # the second fixpoint round replays decided trees
    searched = runner.digests[oracle.config.baseline_runs :]
    assert oracle.incumbent_checks >= 1
    assert len(set(searched)) == len(searched) - oracle.incumbent_checks, (
        "a tree was run twice although the cache was on"
    )


def test_keep_paths_survive() -> None:
    tree = _tree(40)
    result, *_ = reduce_tree(tree, needs(("d1/sub1/f1.txt", b"a1")), keep=("d2/sub2/f2.txt",))
    assert set(result.tree.paths) == {"d1/sub1/f1.txt", "d2/sub2/f2.txt"}
    assert result.tree["d2/sub2/f2.txt"].data == tree["d2/sub2/f2.txt"].data


def test_parallel_result_equals_sequential() -> None:
    tree = _tree(120)
    fails = needs(("d0/sub0/f21.txt", b"a21"), ("d6/sub2/f20.txt", b"b20"))
    one, *_ = reduce_tree(tree, fails, jobs=1)
    two, ledger, *_ = reduce_tree(tree, fails, jobs=3)
    assert one.tree.digest == two.tree.digest
    assert_identities(ledger)


def test_budget_stops_with_best_so_far() -> None:
    tree = _tree(100)
    result, ledger, oracle, _ = reduce_tree(
        tree, needs(("d1/sub1/f1.txt", b"a1")), budget=Budget(max_runs=5)
    )
    assert result.stop_reason == "max_runs"
    # --max-runs counts search runs only (the baseline's 20 are outside it)
    assert oracle.search_samples == 5
    assert oracle.samples == 5 + oracle.config.baseline_runs
    assert result.tree.byte_count < tree.byte_count
    assert_identities(ledger)


def test_flaky_strict_reduction_records_family_evidence() -> None:
    tree = _tree(30)
    result, ledger, oracle, _ = reduce_tree(
        tree, needs(("d1/sub1/f1.txt", b"a1")), rate=0.6, mode="strict"
    )
    assert oracle.policy.mode is Sampling.STRICT
    assert "d1/sub1/f1.txt" in result.tree
    accepted = [e for e in ledger.events if e.get("decision") == "accepted"]
    assert accepted
    for e in accepted:
        assert e["candidate_family_index"] >= 1
        assert 0 < e["candidate_family_alpha"] < 0.05
        assert e["candidate_family_confidence"] == 0.95
        assert e["oracle_rate"] == e["oracle_passes"] / e["oracle_runs"]
    indexes = [e["candidate_family_index"] for e in accepted]
    assert indexes == sorted(indexes)
    assert_identities(ledger)


@pytest.mark.parametrize(("mode", "after"), [("auto", Sampling.FAST), ("single", Sampling.STRICT)])
def test_single_mode_inconsistency_switches_to_the_exact_design(mode: str, after: Sampling) -> None:
    tree = _tree(30)
    state = {"calls": 0, "spurious": 0}

    def fails(t: Tree) -> bool:
        # After the 20 baseline runs, the first candidate without the needed file spuriously
        # reproduces (once).
        state["calls"] += 1
        if "d1/sub1/f1.txt" in t:
            return True
        state["spurious"] += state["calls"] > 20
        return state["spurious"] == 1

    result, ledger, oracle, _ = reduce_tree(tree, fails, check_every=1, mode=mode)
    assert oracle.inconsistencies == 1 and oracle.policy.mode is after
    assert oracle.policy.theta == oracle.policy.holdout_p0  # θ never changes after the baseline
    assert any(e.get("decision") == "inconsistency" for e in ledger.events)
    assert list(result.tree.paths) == ["d1/sub1/f1.txt"]
    assert_identities(ledger)


files_st = st.dictionaries(
    st.sampled_from([f"{d}/f{i}" for d in "abc" for i in range(5)]),
    st.lists(st.sampled_from([b"x\n", b"y\n", b"z\n", b"KEY\n"]), max_size=5),
    min_size=1,
    max_size=10,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files_st)
def test_property_result_reproduces_is_smaller_and_stable(files: dict[str, list[bytes]]) -> None:
    tree = Tree.of({p: Entry("file", b"".join(ls), text=True) for p, ls in files.items()})

    def fails(t: Tree) -> bool:
        return sum(e.data.count(b"KEY") for e in t.entries.values()) >= 1 and any(
            b"y" in e.data for e in t.entries.values()
        )

    if not fails(tree):
        return
    result, ledger, _, _ = reduce_tree(tree, fails)
    assert fails(result.tree)
    assert result.tree.byte_count <= tree.byte_count
    assert result.tree.byte_count == len(b"KEY\ny\n")  # 1-minimal: one KEY line, one y line
    again, _, _, _ = reduce_tree(result.tree, fails)
    assert again.tree.digest == result.tree.digest
    assert_identities(ledger)


def test_a_pass_stopped_by_the_budget_reports_its_real_duration() -> None:
    import time

    tree = _tree(60)
    slow = needs(("d1/sub1/f1.txt", b"a1"))

    def fails(t: Tree) -> bool:
        time.sleep(0.01)
        return slow(t)  # type: ignore[operator,no-any-return]

    # 6 search runs (the baseline is outside --max-runs): fewer than the files pass needs (about 9)
    result, ledger, oracle, _ = reduce_tree(tree, fails, budget=Budget(max_runs=6))
    assert result.stop_reason == "max_runs"
    searched = oracle.samples - oracle.config.baseline_runs
    assert searched >= 5 and ledger.phases["files"].oracle_samples == searched
    # the files pass ran every search sample (0.01 s each) before the budget stopped it
    assert ledger.phases["files"].duration_seconds >= 0.01 * searched


class _Later:
    """A pass that leaves work beside the search (``problem.later``): ``run`` only notes the
    tree; the work's finish (settled after the next pass) deletes one file of it -- a
    background result proposed late, as the re-traced cut does."""

    name = "later"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def run(self, problem: Reduction) -> None:
        self.log.append("later.run")
        seen = problem.current

        def work() -> Tree:
            self.log.append("later.work")
            return seen

        problem.later(self.name, work, lambda tree: self.finish(problem, tree))

    def finish(self, problem: Reduction, seen: Tree) -> None:
        self.log.append("later.settle")
        gone = sorted(p for p in seen.entries if p.startswith("d0/") and p in problem.current)
        if gone:
            problem.try_first(self.name, [(problem.current.without(gone[:1]), "drop one")])


class _Logged:
    name = "logged"

    def __init__(self, log: list[str], stop_after: int | None = None) -> None:
        self.log = log
        self.stop_after = stop_after

    def run(self, problem: Reduction) -> None:
        self.log.append("logged.run")
        fresh = sorted(p for p in problem.current.entries if not p.startswith("d0/"))
        problem.probe(self.name, problem.current.without(fresh[:1]))  # draws a sample
        if self.stop_after is not None and self.log.count("logged.run") > self.stop_after:
            from repomin.sampling.budget import StopSearch

            raise StopSearch("max_runs")


class _Quiet:
    """A pass that draws no sample: deferred work is not settled after it."""

    name = "quiet"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def run(self, problem: Reduction) -> None:
        self.log.append("quiet.run")


def _driver(tree: Tree, passes: dict[str, object]) -> tuple[ReductionResult, Ledger]:
    runner = FakeRunner(lambda t: True)
    ledger = Ledger()
    oracle = fake_oracle(runner, SamplingConfig(incumbent_check_every=0), ledger=ledger)
    oracle.run_baseline(tree, 1)
    red = Reduction(initial=tree, oracle=oracle, ledger=ledger, jobs=1, protected=lambda p: False)
    red.background = Background(lambda: True)  # as with batch slots: work runs beside
    for name in passes:
        ledger.phase(name)
    result = run_passes(red, tuple(passes), passes=passes, stall_only=STALL_ONLY)  # type: ignore[arg-type]
    return result, ledger


def test_a_deferred_pass_is_settled_after_the_next_pass_and_its_progress_counts() -> None:
    log: list[str] = []
    tree = _tree(14)  # two files in d0/
    passes = {"later": _Later(log), "quiet": _Quiet(log), "logged": _Logged(log)}
    result, ledger = _driver(tree, passes)
    # each round: later starts, quiet draws no sample, logged's samples run beside it, then
    # later's result is proposed; two deletions are progress, the third round finds nothing
    events = [e for e in log if e != "later.work"]  # the work's thread runs when it runs
    assert events[:8] == ["later.run", "quiet.run", "logged.run", "later.settle"] * 2
    assert result.stop_reason == "fixpoint" and not any(p.startswith("d0/") for p in result.tree)
    assert ledger.phases["later"].accepted == 2


def test_a_stopped_search_drops_deferred_work_without_proposing_it() -> None:
    log: list[str] = []
    tree = _tree(14)
    result, ledger = _driver(tree, {"later": _Later(log), "logged": _Logged(log, stop_after=1)})
    assert result.stop_reason == "max_runs"
    first, second = ["later.run", "logged.run", "later.settle"], ["later.run", "logged.run"]
    assert [e for e in log if e != "later.work"] == [*first, *second]  # dropped: not proposed
    assert log.count("later.work") == 2  # the second piece of work ran, and was waited for
    assert ledger.phases["later"].accepted == 1 and result.tree.file_count == tree.file_count - 1


def test_the_flaky_re_test_round_follows_a_forget_so_it_skips_nothing() -> None:
    """A pass that carries work across rounds (``Remembering``) is made to forget before the
    round that re-tests a flaky oracle's rejections, as before the fixpoint's last round."""
    calls: list[str] = []

    class Memory:
        name = "memory"

        def run(self, problem: object) -> None:
            calls.append("run")

        def forget(self) -> bool:
            calls.append("forget")
            return False

    tree = _tree(12)
    runner = FakeRunner(needs(("d1/sub1/f1.txt", b"a1")), rate=0.6)  # type: ignore[arg-type]
    ledger = Ledger()
    oracle = fake_oracle(runner, SamplingConfig(), timeout=10, ledger=ledger)
    oracle.run_baseline(tree, 1)
    red = Reduction(initial=tree, oracle=oracle, ledger=ledger, jobs=1, protected=lambda _: False)
    passes = {**fresh(("files",)), "memory": Memory()}
    result = run_passes(red, ("files", "memory"), passes=passes)  # type: ignore[arg-type]
    assert result.stop_reason == "fixpoint"
    assert any("re-testing rejected" in e.get("description", "") for e in ledger.events)
    assert calls[-4:] == ["forget", "forget", "run", "forget"]
