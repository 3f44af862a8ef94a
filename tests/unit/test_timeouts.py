"""Adaptive candidate timeouts: the limit rule, the retry at --timeout, and pass-through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repomin.app.reduce import ReduceOptions, execute
from repomin.failure.contract import FailureSpec
from repomin.runners.base import Outcome, RunRequest
from repomin.sampling.policy import SamplingConfig
from repomin.sampling.timeouts import AdaptiveTimeoutRunner, adaptive_limit
from repomin.tree import Tree
from tests.stub_runner import StubRunner


def test_limit_rule() -> None:
    assert adaptive_limit(300.0, [0.1, 0.2, 0.15]) == 5.0  # the 5 s floor
    assert adaptive_limit(300.0, [1.0, 2.5]) == 25.0  # 10 x the slowest baseline run
    assert adaptive_limit(20.0, [2.5]) == 20.0  # never above --timeout
    assert adaptive_limit(60.0, []) == 5.0


class SlowRunner(StubRunner):
    """Every run takes ``seconds``; a run times out when its timeout is shorter."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.requests: list[RunRequest] = []

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        self.requests.append(request)
        if request.timeout < self.seconds:
            return Outcome(exit_code=None, timed_out=True, duration=request.timeout)
        return Outcome(exit_code=1, duration=self.seconds)


def test_a_slow_candidate_is_retried_once_at_the_user_timeout() -> None:
    inner = SlowRunner(seconds=8.0)
    runner = AdaptiveTimeoutRunner(inner, user_timeout=60.0)
    assert runner.arm([0.3, 0.4]) == 5.0
    outcome = runner.run(Tree.of({}), RunRequest("cmd", {}, 60.0, "files-c1-1"))
    assert not outcome.timed_out and outcome.exit_code == 1
    assert [r.timeout for r in inner.requests] == [5.0, 60.0]
    assert inner.requests[1].sample_id == "files-c1-1-retry"
    assert runner.retries == 1


def test_a_hung_candidate_counts_as_a_timeout_after_the_retry() -> None:
    inner = SlowRunner(seconds=1e9)
    runner = AdaptiveTimeoutRunner(inner, user_timeout=60.0)
    runner.arm([1.0])
    assert runner.run(Tree.of({}), RunRequest("cmd", {}, 60.0)).timed_out
    assert [r.timeout for r in inner.requests] == [10.0, 60.0]


def test_fast_candidates_other_timeouts_and_disarmed_runs_pass_through() -> None:
    inner = SlowRunner(seconds=0.5)
    runner = AdaptiveTimeoutRunner(inner, user_timeout=60.0)
    request = RunRequest("cmd", {}, 60.0)
    runner.run(Tree.of({}), request)  # not armed yet (baseline)
    runner.arm([0.5])
    runner.run(Tree.of({}), request)  # armed: at the limit, no retry needed
    runner.run(Tree.of({}), RunRequest("trace", {}, 180.0))  # the traced run: unchanged
    runner.disarm()
    runner.run(Tree.of({}), request)  # final validation
    assert [r.timeout for r in inner.requests] == [60.0, 5.0, 180.0, 60.0]
    assert runner.retries == 0


def test_a_limit_equal_to_the_user_timeout_does_not_arm() -> None:
    inner = SlowRunner(seconds=100.0)
    runner = AdaptiveTimeoutRunner(inner, user_timeout=20.0)
    assert runner.arm([3.0]) == 20.0 and runner.limit is None
    runner.run(Tree.of({}), RunRequest("cmd", {}, 20.0))
    assert [r.timeout for r in inner.requests] == [20.0]


class SlowCandidates(StubRunner):
    """The failure reproduces in every tree containing ``keep.txt``; a candidate (fewer than the
    5 files of the source) that keeps ``slow.txt`` takes 8 s (it times out under 8 s)."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        self.timeouts.append(request.timeout)
        slow = "slow.txt" in tree and len(tree) < 5
        if slow and request.timeout < 8.0:
            return Outcome(exit_code=None, timed_out=True, duration=request.timeout)
        if "keep.txt" in tree:
            return Outcome(exit_code=1, stderr=b"BUG\n", duration=8.0 if slow else 0.01)
        return Outcome(exit_code=0, duration=0.01)


def _reduce(tmp_path: Path, fixed: bool) -> tuple[dict[str, Any], SlowCandidates]:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("keep.txt", "slow.txt", "a.txt", "b.txt", "c.txt"):
        (src / name).write_text(name)
    runner = SlowCandidates()
    options = ReduceOptions(
        src=src,
        output=tmp_path / "out",
        command="fake",
        user_shell_runs=0,
        spec=FailureSpec(match="BUG"),
        sampling=SamplingConfig(baseline_runs=3),
        schedule=("files",),
        jobs=1,
        timeout=60.0,
        fixed_timeout=fixed,
        use_session=False,
    )
    result = execute(options, runner_factory=lambda _: runner)
    assert result.exit_code == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["keep.txt"]
    return result.report, runner


def test_reduce_retries_slow_candidates_at_the_user_timeout(tmp_path: Path) -> None:
    report, runner = _reduce(tmp_path, fixed=False)
    execution = report["execution"]
    assert execution["timeout_rule"] == "adaptive-10x-slowest-baseline-min-5s-v1"
    assert execution["candidate_timeout_seconds"] == 5.0  # the baseline runs took 0.01 s
    assert execution["timeout_seconds"] == 60.0
    # every run at 60 s outside the 3 baseline and the final runs is a retry of a timed-out one
    final = execution["final_runs"]
    assert execution["adaptive_timeout_retries"] == runner.timeouts.count(60.0) - 3 - final >= 1
    assert runner.timeouts[:3] == [60.0] * 3 and runner.timeouts[-final:] == [60.0] * final


def test_fixed_timeout_gives_every_run_the_user_timeout(tmp_path: Path) -> None:
    report, runner = _reduce(tmp_path, fixed=True)
    execution = report["execution"]
    assert execution["timeout_rule"] == "fixed"
    assert execution["candidate_timeout_seconds"] == 60.0
    assert execution["adaptive_timeout_retries"] == 0
    assert set(runner.timeouts) == {60.0}
