"""The default policy's payload gate, escalation, and the statistical state a session keeps."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

from repomin.app.reduce import ReduceOptions, execute
from repomin.app.session import Session
from repomin.failure.contract import FailureSpec
from repomin.report.validate import validate_report
from repomin.runners.base import Outcome, RunRequest
from repomin.sampling import stats
from repomin.sampling.accounting import Ledger
from repomin.sampling.holdout import HoldoutConfig
from repomin.sampling.policy import Sampling, SamplingConfig, SamplingPolicy
from repomin.search.reducer import Reduction
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle
from tests.stub_runner import StubRunner


def _learn(mode: str = "auto", passes: int = 20, **config: object) -> SamplingPolicy:
    cfg = SamplingConfig(mode=mode, **config)  # type: ignore[arg-type]
    return SamplingPolicy.learn(cfg, passes, 20, stats.lower_bound(passes, 20, 0.95))


def test_auto_is_gated_single_or_fast_and_explicit_modes_are_not() -> None:
    det, flaky = _learn(), _learn(passes=14)
    assert (det.mode, det.gated, det.error_control) == (Sampling.SINGLE, True, "payload-gate")
    assert (flaky.mode, flaky.gated) == (Sampling.FAST, True)
    assert _learn("single").error_control == "none"
    assert _learn("strict", passes=14).error_control == "family-wise"
    assert _learn("fast", passes=14).error_control == "per-candidate"
    # the holdout's default p0 is the candidate threshold (as --holdout-min-rate's help says)
    assert det.holdout_p0 == det.theta == stats.lower_bound(20, 20, 0.95) / 2


def test_gated_search_level_and_screen_are_cost_knobs_explicit_fast_keeps_alpha() -> None:
    gated, explicit = _learn(passes=12), _learn("fast", passes=12)
    assert gated.alpha_for(1) == gated.alpha_for(500) == 0.3
    assert explicit.alpha_for(500) == pytest.approx(0.05)
    # R: a candidate at the baseline's conservative rate (the 80% lower bound of 12/20,
    # 0.4809) passes the screen with prob >= 0.7 (gate), 0.9 (explicit)
    q = 1 - stats.lower_bound(12, 20, 0.8)
    assert (gated.screen_runs, explicit.screen_runs) == (2, 4)
    assert 1 - q**2 >= 0.7 > 1 - q and 1 - q**4 >= 0.9 > 1 - q**3


def test_gate_levels_are_spent_and_sum_to_alpha() -> None:
    policy = _learn()
    levels = []
    for _ in range(200):
        index, policy = policy.take_gate()
        levels.append(policy.gate_alpha(index))
    assert levels[0] == pytest.approx(0.05 * 6 / 3.141592653589793**2)
    assert sum(levels) < 0.05 and levels == sorted(levels, reverse=True)
    assert _learn("strict").gate_alpha(7) == pytest.approx(0.05)  # explicit: plain α


def test_escalation_keeps_theta_and_an_explicit_zero_failure_budget() -> None:
    cfg = SamplingConfig(failure_budget=0)
    policy = _learn(failure_budget=0)
    up = policy.escalate(cfg)
    assert (up.mode, up.theta, up.failure_budget, up.switches) == (
        Sampling.FAST,
        policy.theta,
        0,
        1,
    )
    assert policy.escalate(SamplingConfig()).failure_budget == 2
    assert _learn("single").escalate(SamplingConfig()).mode is Sampling.STRICT
    assert up.escalate(cfg) is up  # only single-run mode escalates


def test_final_test_is_false_after_zero_runs_and_exact_otherwise() -> None:
    assert stats.final_test_passed(0, 0, 0.3, 0.05) is False
    # 8/10 at θ = 0.5: P(Bin(10, .5) >= 8) = 56/1024 = 0.0546875
    assert stats.final_test_passed(8, 10, 0.5, 0.0546) is False
    assert stats.final_test_passed(8, 10, 0.5, 0.0547) is True


def test_policy_record_round_trips_with_the_gate_state() -> None:
    policy = _learn()
    _, policy = policy.take_gate()
    _, policy = policy.take_index()
    assert SamplingPolicy.from_json(json.loads(json.dumps(policy.to_json()))) == policy


def _tree(*names: str) -> Tree:
    return Tree.of({n: Entry("file", f"{n}\n".encode(), text=True) for n in names})


def test_session_replays_history_with_reverts_and_the_latest_policy(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", {"k": 1})
    source, a, b, c = _tree("x", "y", "z"), _tree("x", "y"), _tree("x"), _tree("y")
    for t in (a, b):
        session.record_mutation("files", "d", t)
    session.record_revert(a)
    session.record_mutation("files", "d", c)
    assert [t.digest for t in session.history(source)] == [source.digest, a.digest, c.digest]
    assert session.latest_tree(source).digest == c.digest
    policy = _learn()
    assert session.current_policy(policy) is policy
    for _ in range(3):
        _, policy = policy.take_index()
        session.save_policy(policy)
    with (tmp_path / "s" / "policy.jsonl").open("a") as fh:
        fh.write('{"torn')  # a kill mid-append
    assert session.current_policy(_learn()) == policy


def test_backtracking_bisects_to_the_last_good_tree_and_revokes_later_ones() -> None:
    names = [f"f{i}" for i in range(8)]
    chain = [_tree(*names[i:]) for i in range(8)]  # each accepted tree deletes one more file
    bad_from = 5  # trees 5.. lost what the failure needs (f4)

    def fails(t: Tree) -> bool:
        return "f4" in t

    runner = FakeRunner(fails)
    oracle = fake_oracle(
        runner,
        SamplingConfig(mode="fast"),
        ledger=Ledger(),
    )
    oracle.run_baseline(chain[0])
    reverted: list[Tree] = []
    red = Reduction(
        initial=chain[-1],
        oracle=oracle,
        ledger=oracle._ledger,
        jobs=1,
        protected=lambda p: False,
        history=chain,
        on_revert=reverted.append,
    )
    tree = red.backtrack("files")
    assert tree.digest == chain[bad_from - 1].digest == reverted[0].digest
    assert [t.digest for t in red.history] == [t.digest for t in chain[:bad_from]]
    for revoked in chain[bad_from:]:
        verdict = oracle.cached(revoked)
        assert verdict is not None and not verdict.accepted
    assert runner.calls - 20 <= 3 * 6  # log2(7) re-tests, not one per accepted tree


def _files_only(
    tmp_path: Path, names: tuple[str, ...], holdout: HoldoutConfig | None = None
) -> ReduceOptions:
    """Options reducing a source of ``names`` (one line each) with the ``files`` pass only."""
    src = tmp_path / "src"
    src.mkdir()
    for name in names:
        (src / name).write_text(f"{name}\n")
    return ReduceOptions(
        src=src,
        output=tmp_path / "out",
        command="fake",
        user_shell_runs=0,
        spec=FailureSpec(match="BUG"),
        schedule=("files",),
        holdout=holdout,
    )


def test_a_failed_gate_backtracks_instead_of_exporting_a_wrong_tree(tmp_path: Path) -> None:
    """Single-run search accepts a deletion that lowers the rate to 0.2; the gate fails, the
    reduction escalates, backtracks and exports a tree that keeps the file."""
    runs: dict[str, int] = {}

    def fails(t: Tree) -> bool:
        runs[t.digest] = runs.get(t.digest, 0) + 1
        if "keep.txt" not in t:
            return False
        # deterministic baseline (20/20); without bad.txt the failure shows in the first run of
        # a tree (so single-run search accepts the deletion), then in 1 run of 5
        return "bad.txt" in t or runs[t.digest] % 5 == 1

    options = _files_only(tmp_path, ("keep.txt", "bad.txt", "junk.txt"), HoldoutConfig(10, None))
    result = execute(options, runner_factory=lambda _: FakeRunner(fails))
    ex = result.report["execution"]
    assert (tmp_path / "out" / "bad.txt").exists()
    assert ex["payload_gates"] >= 2 and ex["final_gate_index"] == ex["payload_gates"]
    assert ex["final_validation_passed"] and result.exit_code == 0
    assert ex["sampling_policy"] == "fast" and ex["sampling_policy_switches"] == 1
    assert ex["final_alpha"] == pytest.approx(stats.spend_alpha(0.05, ex["payload_gates"]))
    assert result.report["holdout_certification"]["min_rate"] == ex["min_candidate_rate"]
    assert not validate_report(result.report).problems
    decisions = [e["decision"] for e in result.report["events"] if e["phase"] == "final"]
    assert decisions[:2] == ["failed", "inconsistency"] and decisions[-1] == "passed"


def test_final_runs_the_gate_can_never_pass_are_bad_input() -> None:
    from repomin.errors import UsageError

    # 3/3 baseline at 95%: L = 0.05^(1/3) = 0.368, θ = 0.184; 0.184² = 0.034 > α_1 = 0.0304
    with pytest.raises(UsageError, match=r"--final-runs 2 can never pass.*--final-runs 3 or more"):
        SamplingConfig(baseline_runs=3, final_runs=2)
    SamplingConfig(baseline_runs=3, final_runs=3)  # 0.184³ = 0.0062 can pass
    SamplingConfig(baseline_runs=3, final_runs=2, mode=Sampling.FAST)  # not gated: its own claim
    SamplingConfig(baseline_runs=3, final_runs=0)  # 0 turns the gate off explicitly


def test_the_check_uses_the_all_pass_lower_bound_in_closed_form() -> None:
    """``_check_final_runs`` computes the all-pass Clopper-Pearson bound as (1 - c)^(1/n)
    (no scipy while parsing options); it is the bound the rest of the tool computes."""
    import math

    from repomin.sampling import stats

    for n in (1, 2, 3, 5, 10, 30, 200):
        for c in (0.5, 0.9, 0.95, 0.99, 0.999):
            exact = stats.lower_bound(n, n, c)
            assert math.isclose((1.0 - c) ** (1.0 / n), exact, rel_tol=1e-12), (n, c)


class _LowerRateRunner(StubRunner):
    """The source reproduces in 4 runs of 5 (by count, so the baseline is 16/20); a tree
    without ``junk.txt`` still reproduces, more rarely: its first payload gate sees about 3
    runs in 8 (above θ, below what the gate sized for the baseline needs), later gates 3 in 4.
    A tree without ``keep.txt`` never does."""

    def __init__(self) -> None:
        self.count = 0
        self.finals = 0
        self.lock = threading.Lock()

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        with self.lock:
            self.count += 1
            final = request.sample_id.startswith("final")
            self.finals += final
            if "keep.txt" not in tree:
                ok = False
            elif "junk.txt" in tree or not final:
                ok = self.count % 5 != 0
            elif self.finals <= FIRST_GATE_MAX:
                ok = self.finals % 8 in (1, 4, 6)
            else:
                ok = self.finals % 4 != 0
        if ok:
            return Outcome(exit_code=1, stderr=b"Traceback...\nBUG: reproduced\n")
        return Outcome(exit_code=0, stdout=b"ok\n")


FIRST_GATE_MAX = 60


def test_a_failed_gate_above_theta_tests_the_same_tree_again_before_backtracking(
    tmp_path: Path,
) -> None:
    """A flaky payload reproducing less often than the baseline fails its first gate with a
    rate above θ: the same tree gets a second test sized for that rate, passes it and is
    exported, with no backtracking; the report validates."""
    options = _files_only(tmp_path, ("keep.txt", "junk.txt"))
    runner = _LowerRateRunner()
    result = execute(options, runner_factory=lambda _: runner)
    ex = result.report["execution"]
    policy = SamplingPolicy.learn(SamplingConfig(), 16, 20, stats.lower_bound(16, 20, 0.95))
    first = [e for e in result.report["events"] if e["phase"] == "final"]
    assert [e["decision"] for e in first] == ["failed", "info", "passed"], first
    failed = first[0]
    assert failed["oracle_passes"] / failed["oracle_runs"] > policy.theta
    assert failed["oracle_runs"] <= FIRST_GATE_MAX
    after_one = dataclasses.replace(policy, gates=1)  # sized at the second gate's level
    second = after_one.second_test_runs(None, failed["oracle_passes"], failed["oracle_runs"])
    assert second is not None and f"up to {second} runs" in first[1]["description"]
    assert ex["final_gate_index"] == 2 and ex["final_planned_runs"] == second
    assert ex["final_validation_passed"] and result.exit_code == 0
    assert not any("backtracked to" in e["description"] for e in result.report["events"])
    assert not (tmp_path / "out" / "junk.txt").exists()
    assert not validate_report(result.report).problems


def test_a_second_test_is_sized_for_the_failed_gates_rate_and_only_above_theta() -> None:
    policy = _learn(passes=16)
    theta, level = policy.theta, policy.gate_alpha(policy.gates + 1)
    n = policy.second_test_runs(None, 8, 21)
    assert n == stats.sized_runs(theta, level, 8 / 21, 0.8, 400)
    assert n is not None and stats.gate_power(n, theta, level, 8 / 21) >= 0.8
    assert policy.second_test_runs(None, 6, 21) is None  # 0.29 <= θ = 0.30: backtrack
    after_two = dataclasses.replace(policy, gates=2)  # a later gate: kept for backtracking
    assert after_two.second_test_runs(None, 8, 21) is None
    assert policy.second_test_runs(50, 8, 21) is None  # --final-runs: the user's n
    assert _learn().second_test_runs(None, 8, 10) is None  # deterministic baseline
    assert _learn(mode="fast", passes=16).second_test_runs(None, 8, 21) is None  # not gated
