"""The payload gate's test stopped once certain (``stats.CurtailedTest``) and its sizing.

Checked against brute force: binomial sums written out with ``math.comb`` and every outcome
sequence enumerated run by run, for several (θ, α, n). Then the oracle's final runs (real
``Oracle.final_validation`` over a seeded runner) and the policy's choice of n.
"""

from __future__ import annotations

import copy
import itertools
import math
import random
from pathlib import Path

import pytest

from repomin.app.reduce import ReduceOptions, execute
from repomin.failure.contract import FailureSpec
from repomin.report.validate import validate_report
from repomin.sampling import stats
from repomin.sampling.oracle import Oracle
from repomin.sampling.policy import (
    FLAKY_FINAL_RUNS,
    GATE_POWER,
    MAX_FINAL_RUNS,
    Sampling,
    SamplingConfig,
    SamplingPolicy,
)
from repomin.sampling.stats import CurtailedTest, Decision
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle
from tests.montecarlo import BernoulliRunner, files

ALPHA_1 = 0.05 * 6 / math.pi**2
#: (θ, α, n): the default gate levels at typical thresholds, a deterministic baseline's θ, and
#: small n where every sequence can be enumerated
CASES = [
    (0.4305, ALPHA_1, 10),
    (0.1968, ALPHA_1, 12),
    (0.0520, ALPHA_1, 14),
    (0.3, 0.05, 9),
    (0.5, 0.01, 13),
    (0.1085, ALPHA_1 / 4, 11),
]


def tail(k: int, n: int, p: float) -> float:
    """P(Bin(n, p) >= k), summed term by term."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(max(k, 0), n + 1))


def brute_critical(n: int, theta: float, alpha: float) -> int:
    return next((c for c in range(1, n + 1) if tail(c, n, theta) <= alpha), n + 1)


def walk(test: CurtailedTest, outcomes: tuple[bool, ...]) -> tuple[Decision, int, int]:
    """Run the curtailed test on ``outcomes`` one run at a time: (decision, passes, runs made)."""
    passes = 0
    for done, ok in enumerate(outcomes, start=1):
        passes += ok
        decision = test.decide(passes, done)
        if decision is not Decision.CONTINUE:
            return decision, passes, done
    raise AssertionError("the test did not decide after all its runs")


@pytest.mark.parametrize(("theta", "alpha", "n"), CASES)
def test_critical_count_is_the_binomial_sums(theta: float, alpha: float, n: int) -> None:
    c = stats.critical_count(n, theta, alpha)
    assert c == brute_critical(n, theta, alpha)
    assert tail(c, n, theta) <= alpha < tail(c - 1, n, theta)


@pytest.mark.parametrize(("theta", "alpha", "n"), CASES)
def test_every_sequence_gets_the_fixed_tests_decision_and_the_exact_size(
    theta: float, alpha: float, n: int
) -> None:
    """All 2^n sequences: the stopped test decides as the fixed-n test on all n runs, the
    exact test recomputed on the runs made (what the validator does) agrees, and summing the
    sequences' probabilities gives the exact size P(Bin(n, θ) >= c) <= α, the acceptance
    probability and the expected runs at several p."""
    test = CurtailedTest(theta, alpha, n)
    c = test.critical
    probes = tuple(dict.fromkeys((0.0, theta, 0.5, 0.8, 1.0)))  # θ may be 0.5
    accepted = dict.fromkeys(probes, 0.0)
    runs = dict.fromkeys(probes, 0.0)
    for outcomes in itertools.product((False, True), repeat=n):
        decision, passes, made = walk(test, outcomes)
        fixed = sum(outcomes) >= c
        assert (decision is Decision.ACCEPT) == fixed
        assert stats.final_test_passed(passes, made, theta, alpha) == fixed
        k = sum(outcomes)
        for p in probes:
            weight = p**k * (1 - p) ** (n - k)
            accepted[p] += weight * fixed
            runs[p] += weight * made
    assert accepted[theta] == pytest.approx(tail(c, n, theta), rel=1e-9)
    assert accepted[theta] <= alpha * (1 + 1e-12)
    for p in probes:
        assert test.acceptance_probability(p) == pytest.approx(accepted[p], rel=1e-9, abs=1e-15)
        assert test.expected_runs(p) == pytest.approx(runs[p], rel=1e-9)
    assert test.expected_runs(1.0) == c and test.expected_runs(0.0) == n - c + 1


@pytest.mark.parametrize(("theta", "alpha", "n"), [*CASES, (0.0518, ALPHA_1, 125)])
def test_decide_is_the_count_rule_on_every_state(theta: float, alpha: float, n: int) -> None:
    """The dynamic programme for the expected runs uses the rule as counts (stop at k >= c or
    k + (n - done) < c); decide() says exactly that on every state after the first run."""
    test = CurtailedTest(theta, alpha, n)
    c = test.critical
    for done in range(1, n + 1):
        for k in range(done + 1):
            stop = k >= c or k + (n - done) < c or done == n
            assert (test.decide(k, done) is not Decision.CONTINUE) == stop, (k, done)
    assert test.decide(0, 0) is Decision.CONTINUE


@pytest.mark.parametrize(
    ("theta", "alpha", "rate"),
    [(0.052, ALPHA_1, 0.1584), (0.1968, ALPHA_1, 0.4809), (0.3587, ALPHA_1 / 4, 0.798)],
)
def test_sized_runs_is_the_first_n_with_the_power(theta: float, alpha: float, rate: float) -> None:
    n = stats.sized_runs(theta, alpha, rate, GATE_POWER, MAX_FINAL_RUNS)
    assert n is not None
    assert tail(brute_critical(n, theta, alpha), n, rate) >= GATE_POWER
    for smaller in range(1, n):
        assert tail(brute_critical(smaller, theta, alpha), smaller, rate) < GATE_POWER
    assert stats.sized_runs(theta, alpha, theta, GATE_POWER, MAX_FINAL_RUNS) is None


# -- the policy's choice of n -------------------------------------------------------------------


def learn(passes: int, runs: int, **config: object) -> SamplingPolicy:
    cfg = SamplingConfig(**config)  # type: ignore[arg-type]
    return SamplingPolicy.learn(cfg, passes, runs, stats.lower_bound(passes, runs, 0.95))


@pytest.mark.parametrize(
    ("passes", "runs", "first", "second"),
    [(5, 20, 96, 127), (8, 20, 59, 76), (12, 20, 34, 44), (18, 20, 14, 21), (8, 40, 125, 167)],
)
def test_flaky_final_runs_are_sized_at_the_80_percent_lower_bound(
    passes: int, runs: int, first: int, second: int
) -> None:
    """The documented table (statistics.md §2a): n for gates 1 and 2, the power >= 0.95 at
    the baseline's 80% lower bound and so at its point estimate."""
    policy = learn(passes, runs)
    assert policy.final_runs(None) == first
    assert policy.final_runs(None, policy.gate_alpha(2)) == second
    rate = stats.lower_bound(passes, runs, 0.8)
    assert policy.gate_rate == rate
    power = stats.gate_power(first, policy.theta, policy.gate_alpha(1), rate)
    assert power >= GATE_POWER
    assert stats.gate_power(first, policy.theta, policy.gate_alpha(1), passes / runs) >= power
    assert policy.final_curtailed(None)


def test_deterministic_explicit_and_old_records_keep_their_fixed_runs() -> None:
    det = learn(20, 20)
    assert det.final_runs(None) == 10 and not det.final_curtailed(None)
    escalated = det.escalate(SamplingConfig())
    assert escalated.final_runs(None) == FLAKY_FINAL_RUNS and escalated.final_curtailed(None)
    assert learn(12, 20).final_runs(30) == 30 and not learn(12, 20).final_curtailed(30)
    record = learn(12, 20).to_json()
    assert record["gate_rate"] == stats.lower_bound(12, 20, 0.8)
    del record["gate_rate"]  # a session written before the sizing
    assert SamplingPolicy.from_json(record).final_runs(None) == FLAKY_FINAL_RUNS
    # θ at or above the estimates: no n reaches the power, the old default
    assert learn(12, 20, min_candidate_rate=0.7).final_runs(None) == FLAKY_FINAL_RUNS
    # explicit modes test at α (not spent): fewer runs, still sized
    fast = learn(12, 20, mode=Sampling.FAST)
    assert fast.final_runs(None) == stats.sized_runs(
        fast.theta, 0.05, fast.gate_rate or 0.0, GATE_POWER, MAX_FINAL_RUNS
    )


# -- the oracle's final runs ----------------------------------------------------------------

TREE = Tree.of({"a.txt": Entry("file", b"NEEDED\n")})


def flaky_oracle(
    rate: float, jobs: int = 1, seed: int = 3, **config: object
) -> tuple[Oracle, FakeRunner]:
    """An oracle whose policy was learnt from a 12/20 baseline, over a runner at ``rate``."""
    runner = FakeRunner(lambda t: True, rate=rate, seed=seed)
    oracle = fake_oracle(runner, SamplingConfig(**config), jobs=jobs)  # type: ignore[arg-type]
    oracle.restore(learn(12, 20, **config), None)
    return oracle, runner


@pytest.mark.parametrize(("rate", "expected"), [(1.0, "c"), (0.0, "n - c + 1")])
def test_final_runs_stop_once_certain(rate: float, expected: str) -> None:
    oracle, runner = flaky_oracle(rate)
    n = oracle.planned_final_runs()
    _gate, alpha = oracle.take_gate()
    c = stats.critical_count(n, oracle.policy.theta, alpha)
    sample = oracle.final_validation(TREE, n, alpha=alpha)
    made = c if expected == "c" else n - c + 1
    assert (sample.runs, runner.calls, sample.planned) == (made, made, n)
    assert sample.stopped_early
    assert sample.passes == (made if rate else 0)
    assert oracle.policy.final_passed(sample.passes, sample.runs, alpha) == bool(rate)


def test_with_two_slots_a_run_in_flight_finishes_and_counts() -> None:
    oracle, runner = flaky_oracle(1.0, jobs=2)
    n = oracle.planned_final_runs()
    _gate, alpha = oracle.take_gate()
    c = stats.critical_count(n, oracle.policy.theta, alpha)
    sample = oracle.final_validation(TREE, n, alpha=alpha)
    assert c <= sample.runs == runner.calls <= c + 1 and sample.passes == sample.runs
    assert oracle.policy.final_passed(sample.passes, sample.runs, alpha)


def test_an_explicit_final_runs_makes_every_run() -> None:
    oracle, runner = flaky_oracle(1.0, final_runs=30)
    _gate, alpha = oracle.take_gate()
    sample = oracle.final_validation(TREE, 30, alpha=alpha)
    assert (sample.runs, runner.calls, sample.stopped_early) == (30, 30, False)


def test_seeded_gates_decide_as_the_fixed_test_would() -> None:
    """A seeded runner at a rate near θ: the stopped test's verdict on the runs made equals the
    fixed test's on the same runner's full n-run sequence (replayed from the seed)."""
    for seed in range(40):
        oracle, _ = flaky_oracle(0.3, seed=seed)
        n = oracle.planned_final_runs()
        _gate, alpha = oracle.take_gate()
        sample = oracle.final_validation(TREE, n, alpha=alpha)
        replay = random.Random(seed)
        full = sum(replay.random() < 0.3 for _ in range(n))
        theta = oracle.policy.theta
        assert oracle.policy.final_passed(sample.passes, sample.runs, alpha) == (
            stats.final_test_passed(full, n, theta, alpha)
        )


# -- the report: counts of the runs made, checked by the validator ---------------------------


def test_the_report_records_the_runs_made_and_the_validator_checks_the_stop(
    tmp_path: Path,
) -> None:
    """A real reduction (in process, default options, a 0.6 failure): the report keeps the
    runs made, n and the stop, and validates; a record of a stop that was not certain, or of
    fewer runs without a stop, or of more runs than n, does not."""
    src = tmp_path / "src"
    for name, text in files(junk=3, bad=False).items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    config = SamplingConfig()
    options = ReduceOptions(
        src=src,
        output=tmp_path / "out",
        command="fake",
        spec=FailureSpec(match="BUG"),
        user_shell_runs=0,
        sampling=config,
        jobs=1,
    )
    runner = BernoulliRunner(11, config, 0.6, bad=False)
    report = execute(options, runner_factory=lambda _: runner).report
    ex = report["execution"]
    assert not validate_report(report).problems
    assert ex["final_validation_passed"] and ex["final_stopped_early"]
    assert ex["final_runs"] < ex["final_planned_runs"]
    assert ex["final_passes"] == stats.critical_count(
        ex["final_planned_runs"], ex["min_candidate_rate"], ex["final_alpha"]
    )
    final = [e for e in report["events"] if e["phase"] == "final"][-1]
    assert (
        final["oracle_runs"] == ex["final_runs"] and "stopped once certain" in final["description"]
    )
    for change in (
        {"final_stopped_early": False},
        {"final_planned_runs": ex["final_runs"] - 1},
        {"final_planned_runs": MAX_FINAL_RUNS},  # 12 passes of 400 could still go either way
    ):
        broken = copy.deepcopy(report)
        broken["execution"].update(change)
        rules = {p.rule for p in validate_report(broken).problems}
        assert rules == {"execution.final_validation"}, change
