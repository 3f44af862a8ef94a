"""Sizing the screen and the failure budget from the incumbent's own samples.

Exact values of the estimate where it has a closed form (the one-sided Clopper-Pearson bound of
n straight passes is (1 - c)^(1/n)), the policy's re-sizing and its record, and a seeded Monte
Carlo of the real oracle path: a bad candidate (p = θ exactly) interleaved with incumbents whose
samples drive the sizing is accepted at most at the design's level -- a screen sized from the
past changes power, never size.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import threading
import time
from pathlib import Path

import pytest

from repomin.app.reduce import ReduceOptions, execute
from repomin.app.session import Session, default_session_dir
from repomin.failure.contract import FailureSpec
from repomin.failure.identity import Identity
from repomin.sampling import stats
from repomin.sampling.oracle import Oracle, OracleHooks
from repomin.sampling.policy import SamplingConfig, SamplingPolicy
from repomin.sampling.rate_evidence import SIZING_CONFIDENCE, RateEvidence, screen_for
from repomin.sampling.verdict import Verdict
from repomin.tree import Entry, Tree
from tests.conftest import FakeRunner, fake_oracle
from tests.montecarlo import FILES, BernoulliRunner, Killed


def _tree(tag: str) -> Tree:
    return Tree.of({"a": Entry("file", f"{tag}\n".encode(), text=True)})


def _learn(passes: int = 12, mode: str = "auto", **config: object) -> SamplingPolicy:
    cfg = SamplingConfig(mode=mode, **config)  # type: ignore[arg-type]
    return SamplingPolicy.learn(cfg, passes, 20, stats.lower_bound(passes, 20, 0.95))


def test_estimate_has_the_closed_form_of_straight_passes() -> None:
    assert RateEvidence(0.6).estimate() == 0.6  # nothing observed: the baseline's rate
    base = RateEvidence(0.6).add_counts(12, 20)  # the baseline's runs, failures last
    assert base.streak == 0
    # suffixes (newest first) are 8 failures, then passes: max over j of L(j - 8, j; 0.8)
    assert base.estimate() == pytest.approx(
        max(stats.lower_bound(j - 8, j, SIZING_CONFIDENCE) for j in range(9, 21))
    )
    assert base.estimate() == pytest.approx(stats.lower_bound(12, 20, SIZING_CONFIDENCE))
    for n in range(1, 8):
        straight = base.add([True] * n)
        assert straight.streak == n
        # n straight passes at the end: the suffix of length n gives L(n, n; c) = (1 - c)^(1/n)
        assert straight.estimate() >= (1 - SIZING_CONFIDENCE) ** (1 / n) - 1e-12
        assert straight.estimate() >= base.estimate()  # passes never lower the estimate
    # 5 straight passes: 0.2^(1/5) = 0.7248 >= 0.7, so R = 1 at screen power 0.7; 4: 0.6687
    assert pytest.approx(0.72478, abs=1e-5) == (1 - SIZING_CONFIDENCE) ** (1 / 5)
    assert screen_for(base.add([True] * 5).estimate(), 0.7) == 1
    assert screen_for(base.add([True] * 4).estimate(), 0.7) == 2
    # a failure after the streak: every suffix holding it has a lower bound below 0.7
    broken = base.add([True] * 5 + [False])
    assert broken.streak == 0 and screen_for(broken.estimate(), 0.7) == 2
    assert RateEvidence(0.6).add_counts(3, 4).recent == (True, True, True, False)


def test_screen_runs_closed_form() -> None:
    # R = ceil(ln(1 - power) / ln(1 - rate)), 1 <= R <= 8
    assert [screen_for(r, 0.7) for r in (1.0, 0.7, 0.6, 0.3, 0.1, 0.01)] == [1, 1, 2, 4, 8, 8]
    assert screen_for(0.6, 0.9) == math.ceil(math.log(0.1) / math.log(0.4)) == 3


def test_policy_resizes_from_the_incumbent_and_keeps_a_configured_budget() -> None:
    policy = _learn()  # 12/20, gated: R = 2 from the baseline's 0.6
    assert (policy.screen_runs, policy.rate) == (2, RateEvidence(0.6).add_counts(12, 20))
    assert policy.probe_wanted()
    sure = policy.observe([True] * 5)
    assert sure.screen_runs == 1 and not sure.probe_wanted()
    back = sure.adopt(1, 3)  # a new incumbent decided on 1/3: its failures end the streak
    assert back.screen_runs == 2 and back.rate is not None and back.rate.streak == 0
    assert back.theta == policy.theta  # θ never moves
    fixed = _learn(failure_budget=5).observe([True] * 5)
    assert fixed.failure_budget == 5 and fixed.screen_runs == 1
    det = _learn(20)
    assert det.rate is None and det.observe([False]) is det and not det.probe_wanted()
    assert SamplingPolicy.from_json(json.loads(json.dumps(back.to_json()))) == back


def test_the_sizing_state_is_persisted_before_use_and_survives_a_resume(tmp_path: Path) -> None:
    seen: list[SamplingPolicy] = []
    oracle, _ = _oracle(1.0, 3, on_policy=seen.append)
    oracle.restore(_learn(), None)
    oracle.adopted(_tree("incumbent"), Verdict(True, 1, 1, oracle.policy.mode), "files")
    assert seen and seen[-1] == oracle.policy  # every change went through on_policy first
    # the verdict's pass and then re-checks until the screen is 1 run (5 straight passes)
    rate = oracle.policy.rate
    assert rate is not None and rate.streak == 5 and rate.recent[-5:] == (True,) * 5
    assert oracle.policy.screen_runs == 1 and oracle.incumbent_checks == 4
    session = Session.create(tmp_path / "s", {"k": 1})
    for policy in seen:
        session.save_policy(policy)
    assert session.current_policy(_learn()) == oracle.policy


def _oracle(
    rate: float, seed: int, on_policy: object = None, **config: object
) -> tuple[Oracle, FakeRunner]:
    runner = FakeRunner(lambda t: True, rate=rate, seed=seed)
    oracle = fake_oracle(
        runner,
        SamplingConfig(**config),  # type: ignore[arg-type]
        use_cache=False,
        hooks=OracleHooks(on_policy=on_policy),
    )
    return oracle, runner


class _TwoRates(FakeRunner):
    """Incumbents reproduce at ``good``, candidates (tag ``bad``) at exactly θ."""

    def __init__(self, good: float, theta: float, seed: int) -> None:
        super().__init__(lambda t: True, seed=seed)
        self.good, self.theta = good, theta

    def run(self, tree, request):  # type: ignore[no-untyped-def]
        self.rate = self.theta if tree["a"].data.startswith(b"bad") else self.good
        return super().run(tree, request)


@pytest.mark.parametrize(
    ("mode", "good", "seed"),
    [("fast", 1.0, 1), ("fast", 0.6, 2), ("auto", 1.0, 3), ("auto", 0.5, 4)],
)
def test_bad_candidates_stay_at_the_design_level_whatever_the_sizing(
    mode: str, good: float, seed: int
) -> None:
    """Seeded Monte Carlo through ``Oracle.evaluate`` with the sizing moving between trials:
    every trial re-adopts an incumbent (its samples and re-checks re-size the screen and the
    budget), then decides a candidate at p = θ. The acceptance rate must stay within 3
    standard errors of the mean exact size of the designs used, which is <= the level."""
    trials, theta = 1500, 0.3
    runner = _TwoRates(good, theta, seed)
    oracle = fake_oracle(
        runner,
        SamplingConfig(mode=mode, min_candidate_rate=theta),  # type: ignore[arg-type]
        use_cache=False,
    )
    oracle.restore(_learn(12, mode, min_candidate_rate=theta), None)
    level = oracle.policy.alpha_for(1)
    accepted, sizes, screens = 0, 0.0, set()
    for i in range(trials):
        incumbent = _tree(f"inc{i}")
        verdict = oracle.evaluate(incumbent, "files", f"i{i}")
        oracle.adopted(incumbent, verdict if verdict.accepted else None, "files")
        design = oracle.policy.design_for(1)[1]
        sizes += design.size
        screens.add(oracle.policy.screen_runs)
        accepted += oracle.evaluate(_tree(f"bad{i}"), "files", f"b{i}").accepted
    mean_size = sizes / trials
    rate = accepted / trials
    se = math.sqrt(mean_size * (1 - mean_size) / trials)
    assert mean_size <= level + 1e-12  # (a float sum of sizes equal to the level)
    assert abs(rate - mean_size) <= 3 * se + 1e-9, (rate, mean_size, screens)
    assert len(screens) >= 1


def _killed_flaky_reduction(options: ReduceOptions) -> tuple[BernoulliRunner, Session]:
    """The first seed whose baseline is flaky and whose reduction is killed mid-search."""
    for seed in range(20):
        runner = BernoulliRunner(seed, options.sampling)
        runner.kill_at = 32
        with contextlib.suppress(Killed):
            execute(options, runner_factory=lambda _, r=runner: r)
        session = Session(default_session_dir(options.output))
        stored = session.load_baseline()
        if stored is not None and stored.policy.rate is not None:
            return runner, session
        shutil.rmtree(default_session_dir(options.output), ignore_errors=True)
    pytest.fail("no seed gave a flaky baseline killed after the search began")


def test_a_killed_reduction_resumes_with_the_persisted_rate_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``execute()``: the flaky-deletion case killed mid-search; the session's last policy
    record holds rate evidence beyond the baseline's, and the resumed reduction starts from
    exactly that record (it restores, never re-learns, the sizing state)."""
    src = tmp_path / "src"
    src.mkdir()
    for name, text in FILES.items():
        (src / name).write_text(text)
    spec = FailureSpec(match="BUG")
    options = ReduceOptions(
        src=src, output=tmp_path / "out", command="fake", spec=spec, user_shell_runs=0
    )
    runner, session = _killed_flaky_reduction(options)
    stored = session.load_baseline()
    assert stored is not None
    persisted = session.current_policy(stored.policy)
    assert persisted.rate is not None and persisted.rate != stored.policy.rate
    seen: list[SamplingPolicy] = []
    original = Oracle.restore

    def spy(
        self: Oracle,
        policy: SamplingPolicy,
        signature: dict[str, object] | None,
        identity: Identity | None = None,
    ) -> None:
        seen.append(policy)
        original(self, policy, signature, identity)

    monkeypatch.setattr(Oracle, "restore", spy)
    runner.calls = 0
    fields = {f: getattr(options, f) for f in ReduceOptions.__dataclass_fields__}
    result = execute(ReduceOptions(**{**fields, "resume": True}), runner_factory=lambda _: runner)
    assert seen == [persisted]
    assert result.exit_code in (0, 1)


class _Concurrency(FakeRunner):
    """Counts the samples running at once."""

    def __init__(self, rate: float) -> None:
        super().__init__(lambda t: True, rate=rate, seed=7)
        self.lock, self.now, self.peak = threading.Lock(), 0, 0
        self.labels: list[str] = []

    def run(self, tree, request):  # type: ignore[no-untyped-def]
        with self.lock:
            self.labels.append(request.sample_id.rsplit("-", 1)[0])
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(0.05)
        try:
            return super().run(tree, request)
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.parametrize("rate", [1.0, 0.0])
def test_re_checks_run_at_once_from_batch_width_and_leave_the_same_evidence(rate: float) -> None:
    """From 4 slots a new incumbent's re-checks run as one wave (at most five); they are read
    in the order they were started with the one-at-a-time rule, so the evidence is what one
    slot leaves (straight passes until the screen is one run; a failure stops it), and every
    run made is counted as a re-check. Each run is named by its place in the wave, whatever
    order the threads start in."""
    evidence, labels = {}, {}
    for jobs in (1, 8):
        runner = _Concurrency(rate)
        oracle = fake_oracle(runner, SamplingConfig(mode="fast"), use_cache=False, jobs=jobs)
        oracle.restore(_learn(mode="fast"), None)
        oracle.adopted(_tree("incumbent"), Verdict(True, 1, 1, oracle.policy.mode), "files")
        rate_now = oracle.policy.rate
        assert rate_now is not None
        evidence[jobs] = (rate_now.recent, oracle.incumbent_checks, runner.peak)
        labels[jobs] = sorted(runner.labels)
    one, wide = evidence[1], evidence[8]
    assert labels[8] == [f"incumbent#{k}" for k in range(5)]
    assert labels[1] == [f"incumbent#{k}" for k in range(one[1])]
    assert wide[0] == one[0]  # the same evidence
    assert one[2] == 1 and wide[2] == 5  # one at a time, then one wave of five
    assert one[1] == (4 if rate else 1) and wide[1] == 5
