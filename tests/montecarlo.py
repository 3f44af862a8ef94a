"""Seeded Monte Carlo of whole reductions through ``execute()`` (in-process, no subprocess).

The case of issue 12: a source whose failure reproduces with probability 0.9, where deleting
``bad.txt`` drops the rate to exactly θ (the candidate threshold learnt from *this* reduction's
baseline, so the deletion is a bad candidate at the boundary, the hardest case for the test),
deleting ``keep.txt`` drops it to 0, and ``junk*.txt`` are irrelevant. A false acceptance is an
exported payload without ``bad.txt``. Interruptions are simulated kills: the runner raises
:class:`Killed` (a ``BaseException``, like SIGKILL nothing catches it) at a random sample, and
the reduction is rerun with ``--resume`` (or afresh when the kill came before a session could
keep anything), exactly as a user would.
"""

from __future__ import annotations

import random
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.app.reduce import ReduceOptions, execute
from repomin.app.session import default_session_dir
from repomin.failure.contract import FailureSpec
from repomin.runners.base import Outcome, RunRequest
from repomin.sampling import stats
from repomin.sampling.policy import SamplingConfig, SamplingPolicy
from repomin.tree import Tree
from tests.stub_runner import StubRunner

SOURCE_RATE = 0.9
FILES = {"keep.txt": "needed\n", "bad.txt": "lowers the rate\n", "junk1.txt": "x\n"}


class Killed(BaseException):
    """A simulated kill of the ReproMin process at a sample."""


class BernoulliRunner(StubRunner):
    """Reproduces with probability 0.9 / θ / 0 by which files the tree holds (seeded)."""

    def __init__(self, seed: int, config: SamplingConfig) -> None:
        self.rng = random.Random(seed)
        self.config = config
        self.baseline: dict[int, bool] = {}
        self.theta: float | None = None
        self.kill_at: int | None = None  # kill at this call of the current attempt
        self.calls = 0
        self.total = 0
        self.lock = threading.Lock()  # samples may run in parallel (``jobs``)

    def rate(self, tree: Tree) -> float:
        if "keep.txt" not in tree:
            return 0.0
        if "bad.txt" in tree:
            return SOURCE_RATE
        assert self.theta is not None, "a candidate was run before the baseline"
        return self.theta

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        with self.lock:
            self.calls += 1
            if self.kill_at is not None and self.calls >= self.kill_at:
                self.kill_at = None
                raise Killed()
            self.total += 1
            ok = self.rng.random() < self.rate(tree)
            label = request.sample_id.rsplit("-", 1)[0]
            if label.startswith("baseline-"):
                i = int(label.split("-")[1])
                if i == 0:
                    self.baseline = {}
                self.baseline[i] = ok
                if len(self.baseline) == self.config.baseline_runs:
                    self._learn()
        if ok:
            return Outcome(exit_code=1, stderr=b"Traceback...\nBUG: reproduced\n")
        return Outcome(exit_code=0, stdout=b"ok\n")

    def _learn(self) -> None:
        """θ as the reduction itself learns it from this baseline (the real code path)."""
        n = self.config.baseline_runs
        passes = sum(self.baseline.values())
        lower = stats.lower_bound(passes, n, self.config.confidence)
        self.theta = SamplingPolicy.learn(self.config, passes, n, lower).theta


@dataclass(frozen=True, slots=True)
class Trial:
    bad_deleted: bool
    exit_code: int
    interruptions: int
    runs: int


def reduce_once(
    root: Path,
    seed: int,
    interruptions: int,
    *,
    kill_window: int = 45,
    jobs: int = 1,
    **sampling: Any,
) -> Trial:
    """One reduction of the case with ``interruptions`` kills at uniformly random samples."""
    src = root / "src"
    src.mkdir(parents=True)
    for name, text in FILES.items():
        (src / name).write_text(text)
    config = SamplingConfig(**sampling)
    options = ReduceOptions(
        src=src,
        output=root / "out",
        command="fake",
        spec=FailureSpec(match="BUG"),
        user_shell_runs=0,
        sampling=config,
        jobs=jobs,
    )
    runner = BernoulliRunner(seed, config)
    kills = random.Random(seed ^ 0x5EED)
    done = 0
    try:
        while True:
            runner.calls = 0
            if done < interruptions:
                runner.kill_at = kills.randint(1, kill_window)
            resume = (default_session_dir(options.output) / "baseline.json").exists()
            attempt = ReduceOptions(**{**_fields(options), "resume": resume})
            try:
                result = execute(attempt, runner_factory=lambda _: runner)
            except Killed:
                done += 1
                continue
            runner.kill_at = None
            bad_deleted = not (options.output / "bad.txt").exists()
            return Trial(bad_deleted, result.exit_code, done, runner.total)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _fields(options: ReduceOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in ReduceOptions.__dataclass_fields__}


def run_trials(
    root: Path, seeds: range, interruptions: int, jobs: int = 1, **sampling: Any
) -> list[Trial]:
    return [
        reduce_once(root / f"t{seed}", seed, interruptions, jobs=jobs, **sampling) for seed in seeds
    ]
