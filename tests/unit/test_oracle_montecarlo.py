"""Monte Carlo of the whole oracle and of the holdout on simulated commands (no subprocess).

A candidate whose true pass probability is exactly θ is a bad candidate; the oracle's strict
policy must accept it with probability at most α (per family index, by construction), and the
holdout must certify a payload at p = p0 with probability at most α_h.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.report.fingerprint import Fingerprint
from repomin.sampling import stats
from repomin.sampling.accounting import Ledger
from repomin.sampling.holdout import HoldoutConfig, run_holdout
from repomin.sampling.oracle import Oracle, SamplingConfig
from repomin.sampling.policy import Sampling, SamplingPolicy
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle

GOOD = Tree.of({"a": Entry("file", b"a\n", text=True), "b": Entry("file", b"b\n", text=True)})


def _oracle(rate: float, seed: int, **config: object) -> tuple[Oracle, FakeRunner]:
    runner = FakeRunner(lambda t: True, rate=rate, seed=seed)
    oracle = fake_oracle(
        runner,
        SamplingConfig(**config),  # type: ignore[arg-type]
        ledger=Ledger(),
        use_cache=False,
    )
    return oracle, runner


def _strict(theta: float, failure_budget: int) -> SamplingPolicy:
    """A strict policy at family index 0 (the next candidate takes index 1)."""
    return SamplingPolicy(
        mode=Sampling.STRICT,
        requested=Sampling.STRICT,
        theta=theta,
        confidence=0.95,
        spending="basel",
        failure_budget=failure_budget,
        screen_runs=1,
        deterministic=False,
        candidate_runs=100,
        holdout_p0=theta,
    )


def test_false_acceptance_at_theta_stays_below_alpha() -> None:
    theta, alpha, trials = 0.3, 0.05, 4000
    accepted = 0
    oracle, _runner = _oracle(theta, 7, mode="strict", min_candidate_rate=theta, baseline_runs=5)
    for i in range(trials):
        oracle.restore(_strict(theta, 2), None)  # every trial at family index 1: size <= alpha_1
        tree = GOOD.replace("a", f"{i}\n".encode())
        accepted += oracle.evaluate(tree, "files", f"mc{i}").accepted
    alpha1 = stats.spend_alpha(alpha, 1)
    rate = accepted / trials
    se = math.sqrt(alpha1 * (1 - alpha1) / trials)
    assert rate <= alpha1 + 3 * se, (rate, alpha1)


def test_good_candidates_are_accepted_with_high_power() -> None:
    oracle, _ = _oracle(0.9, 3, mode="strict", min_candidate_rate=0.3)
    wins = 0
    for i in range(300):
        oracle.restore(_strict(0.3, 2), None)  # power at the first family index
        wins += oracle.evaluate(GOOD.replace("a", f"{i}\n".encode()), "files", f"g{i}").accepted
    # Overall acceptance = P(screen passes) x P(accept | screen), computed exactly.
    design = stats.design(0.3, stats.spend_alpha(0.05, 1), 60, 2, True)
    expected = 0.9 * design.acceptance_probability(0.9)
    assert abs(wins / 300 - expected) < 4 * math.sqrt(expected * (1 - expected) / 300)
    assert expected > 0.85


def test_holdout_error_at_p0_stays_below_alpha() -> None:
    p0, alpha, n, trials = 0.5, 0.05, 30, 20000
    rng = np.random.default_rng(11)
    k_crit = next(k for k in range(n + 1) if stats.binom_pvalue(k, n, p0) <= alpha)
    certified = (rng.binomial(n, p0, size=trials) >= k_crit).mean()
    assert certified <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / trials)
    # ...and the real holdout code path certifies exactly when K >= k_crit.
    fp = Fingerprint(2, 4, "0" * 64, "1" * 64)
    contract = FailureContract(FailureSpec(match="BUG"))
    for seed in range(40):
        runner = FakeRunner(lambda t: True, rate=p0, seed=seed)
        rec = run_holdout(
            tree=GOOD,
            config=HoldoutConfig(n, p0, alpha),
            sample=lambda tree, label, runner=runner: runner.run(tree, None),  # type: ignore[misc,arg-type]
            contract=contract,
            artifact=fp,
            jobs=1,
            stop=threading.Event(),
        )
        assert (rec["status"] == "certified") == (rec["passes"] >= k_crit)
        assert [s["index"] for s in rec["samples"]] == list(range(1, n + 1))


def test_holdout_rejects_a_payload_that_reproduces_at_ten_percent() -> None:
    runner = FakeRunner(lambda t: True, rate=0.1, seed=5)
    rec = run_holdout(
        tree=GOOD,
        config=HoldoutConfig(30, 0.3, 0.05),
        sample=lambda tree, label: runner.run(tree, None),  # type: ignore[arg-type]
        contract=FailureContract(FailureSpec(match="BUG")),
        artifact=Fingerprint(2, 4, "0" * 64, "1" * 64),
        jobs=2,
        stop=threading.Event(),
    )
    assert rec["status"] == "rejected" and rec["exact_gate_passed"] is False
    assert rec["ordinary_failures"] == 30 - rec["passes"]
    assert rec["observed_rate"] == rec["passes"] / 30


def test_interrupted_holdout_has_no_terminal_group() -> None:
    stop = threading.Event()
    calls = {"n": 0}
    runner = FakeRunner(lambda t: True, rate=1.0, seed=1)

    def sample(tree: Tree, label: str):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 5:
            stop.set()
        return runner.run(tree, None)  # type: ignore[arg-type]

    rec = run_holdout(
        tree=GOOD,
        config=HoldoutConfig(20, 0.5, 0.05),
        sample=sample,
        contract=FailureContract(FailureSpec(match="BUG")),
        artifact=Fingerprint(2, 4, "0" * 64, "1" * 64),
        jobs=1,
        stop=stop,
    )
    assert rec["status"] == "interrupted" and rec["completed_runs"] < 20
    assert "lower_bound" not in rec and "exact_gate_passed" not in rec
    assert [s["index"] for s in rec["samples"]] == list(range(1, rec["completed_runs"] + 1))
