"""Final runs in a settled round's idle slots (``prefetch.py``): used when the search ends on
the prefetched tree, booked as a superseded attempt otherwise, ``--jobs`` respected."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from repomin.app import pipeline as stage
from repomin.report.validate import validate_report
from repomin.runners.base import Outcome, RunRequest
from repomin.sampling.accounting import Ledger
from repomin.sampling.policy import SamplingConfig
from repomin.sampling.timeouts import AdaptiveTimeoutRunner
from repomin.search.prefetch import FinalPrefetch
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle
from tests.unit.test_pipeline import _needs, _options, _stages


def _reduce(tmp_path: Path, prefetch: bool) -> dict[str, object]:
    options = replace(_options(tmp_path, jobs=16), sampling=SamplingConfig(final_runs=5))
    return _stages(options, FakeRunner(_needs), prefetch)


def test_the_final_runs_of_the_last_settled_round_are_the_final_runs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with_ = _reduce(tmp_path / "a", prefetch=True)
    without = _reduce(tmp_path / "b", prefetch=False)
    ctx = with_["ctx"]
    assert isinstance(ctx, stage.Context) and ctx.prefetch is not None
    assert without["ctx"].prefetch is None  # type: ignore[attr-defined]
    assert ctx.prefetch.used == 1  # the fixpoint round's re-check left slots idle
    final, plain = with_["final"], without["final"]
    assert (
        (final.passes, final.runs, final.passed)
        == (plain.passes, plain.runs, True)
        == (  # type: ignore[attr-defined]
            5,
            5,
            True,
        )
    )
    report, base = with_["report"], without["report"]
    assert isinstance(report, dict) and isinstance(base, dict)
    assert report["output"]["tree_content_sha256"] == base["output"]["tree_content_sha256"]
    # The same samples: the prefetched final runs replace the ones after the search.
    assert report["execution"]["oracle_samples"] == base["execution"]["oracle_samples"]
    assert validate_report(report).problems == ()


def _oracle_and_tree(runner: FakeRunner, ledger: Ledger) -> tuple[object, Tree]:
    tree = Tree.of({"a.txt": Entry("file", b"NEEDED\n"), "b.txt": Entry("file", b"x\n")})
    oracle = fake_oracle(runner, SamplingConfig(final_runs=5), ledger=ledger, jobs=8)
    oracle.run_baseline(tree)
    return oracle, tree


def test_a_prefetch_of_a_tree_that_is_not_final_is_a_superseded_attempt() -> None:
    ledger = Ledger()
    oracle, tree = _oracle_and_tree(FakeRunner(lambda t: True), ledger)
    ahead = FinalPrefetch(oracle, ledger, lambda: 2)  # type: ignore[arg-type]
    samples = ledger.samples
    ahead.offer(tree, "files", spare=1)  # too few idle slots: nothing starts
    ahead.offer(tree, "files", spare=5)
    ahead.offer(tree, "files", spare=5)  # the same incumbent: not again
    smaller = tree.without(["b.txt"])
    ahead.offer(smaller, "lines", spare=2)  # a new incumbent: the first is now stale
    assert ahead.take(smaller, 2) is not None and ahead.used == 1
    assert ledger.samples == samples + 4
    files = ledger.phase("files")
    assert (files.attempts, files.superseded, files.oracle_samples) == (1, 1, 2)
    assert ledger.phase("lines").oracle_samples == 0  # used: final runs, no phase's samples
    ahead.offer(tree, "files", spare=5)
    assert ahead.take(smaller, 2) is None and ahead.discarded == 2  # another tree: discarded
    assert ahead.take(tree, 2) is None  # nothing pending any more


def test_no_prefetch_under_a_flaky_policy() -> None:
    ledger = Ledger()
    runner = FakeRunner(lambda t: True, rate=0.6, seed=3)
    tree = Tree.of({"a.txt": Entry("file", b"NEEDED\n")})
    oracle = fake_oracle(runner, SamplingConfig(final_runs=20, baseline_runs=10), ledger=ledger)
    oracle.run_baseline(tree)
    assert not oracle.policy.single
    ahead = FinalPrefetch(oracle, ledger, lambda: 2)
    calls = runner.calls
    ahead.offer(tree, "files", spare=8)
    assert ahead.take(tree, 2) is None and runner.calls == calls


class _Gated(FakeRunner):
    def __init__(self) -> None:
        super().__init__(lambda t: True)
        self.release = threading.Event()
        self.hold = False

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        if self.hold:
            assert self.release.wait(30)
        return super().run(tree, request)


def test_final_runs_in_flight_keep_their_slots() -> None:
    ledger = Ledger()
    runner = _Gated()
    oracle, tree = _oracle_and_tree(runner, ledger)
    ahead = FinalPrefetch(oracle, ledger, lambda: 2)  # type: ignore[arg-type]
    runner.hold = True
    ahead.offer(tree, "files", spare=2)
    ahead.make_room(2, 4)  # 2 + 2 in flight fit in 4 slots: returns at once
    waiter = threading.Thread(target=ahead.make_room, args=(3, 4))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive()  # 3 more do not fit beside the 2 final runs
    runner.release.set()
    waiter.join(30)
    assert not waiter.is_alive()
    assert ahead.take(tree, 2) is not None


def test_final_runs_use_the_users_timeout_while_the_search_limit_is_armed() -> None:
    seen: list[float] = []

    class Inner(FakeRunner):
        def run(self, tree: Tree, request: RunRequest) -> Outcome:
            seen.append(request.timeout)
            return super().run(tree, request)

    wrapper = AdaptiveTimeoutRunner(Inner(lambda t: True), 60.0)
    wrapper.arm([0.1])
    tree = Tree.of({"a": Entry("file", b"x")})
    wrapper.run(tree, RunRequest("c", {}, 60.0, "files-c1-5"))
    wrapper.run(tree, RunRequest("c", {}, 60.0, "final-0-6"))
    assert seen[0] < 60.0 and seen[1] == 60.0
