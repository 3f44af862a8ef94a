"""Seeded Monte Carlo of whole reductions through ``execute()`` (in-process, no subprocess).

The flaky-deletion case: a source whose failure reproduces with probability ``rate`` (0.9 by
default), where deleting ``bad.txt`` drops the rate to exactly θ (the candidate threshold learnt
from *this* reduction's baseline, so the deletion is a bad candidate at the boundary, the hardest
case for the test), deleting ``keep.txt`` drops it to 0, and ``junk*.txt`` are irrelevant
(``junk`` of them, in a few directories: a generated tree). Without ``bad`` the source has no
``bad.txt`` and the payload is ``keep.txt`` alone. A false acceptance is an exported payload
without ``bad.txt``. Interruptions are simulated kills: the runner raises :class:`Killed` (a
``BaseException``, like SIGKILL nothing catches it) at a random sample, and the reduction is
rerun with ``--resume`` (or afresh when the kill came before a session could keep anything),
exactly as a user would.
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
from repomin.errors import BaselineError
from repomin.failure.contract import FailureSpec
from repomin.runners.base import Outcome, RunRequest
from repomin.sampling import stats
from repomin.sampling.policy import SamplingConfig, SamplingPolicy
from repomin.tree import Tree
from tests.stub_runner import StubRunner

SOURCE_RATE = 0.9
FILES = {"keep.txt": "needed\n", "bad.txt": "lowers the rate\n", "junk1.txt": "x\n"}


def files(junk: int = 1, bad: bool = True) -> dict[str, str]:
    """The source: ``keep.txt``, ``bad.txt`` (when ``bad``) and ``junk`` irrelevant files, the
    first as ``junk1.txt`` (the original case), the others spread over three directories."""
    tree = {name: text for name, text in FILES.items() if bad or name != "bad.txt"}
    for i in range(2, junk + 1):
        tree[f"d{i % 3}/junk{i}.txt"] = f"irrelevant {i}\n" * (1 + i % 4)
    return tree


class Killed(BaseException):
    """A simulated kill of the ReproMin process at a sample."""


class BernoulliRunner(StubRunner):
    """Reproduces with probability ``rate`` / θ / 0 by which files the tree holds (seeded)."""

    def __init__(
        self, seed: int, config: SamplingConfig, rate: float = SOURCE_RATE, bad: bool = True
    ) -> None:
        self.rng = random.Random(seed)
        self.config = config
        self.source_rate = rate
        self.bad = bad
        self.baseline: dict[int, bool] = {}
        self.theta: float | None = None
        self.kill_at: int | None = None  # kill at this call of the current attempt
        self.calls = 0
        self.total = 0
        self.lock = threading.Lock()  # samples may run in parallel (``jobs``)

    def rate(self, tree: Tree) -> float:
        if "keep.txt" not in tree:
            return 0.0
        if "bad.txt" in tree or not self.bad:
            return self.source_rate
        if self.theta is None:  # the first sample after the (adaptive) baseline
            self._learn()
        assert self.theta is not None
        return self.theta

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        with self.lock:
            self.calls += 1
            if self.kill_at is not None and self.calls >= self.kill_at:
                self.kill_at = None
                raise Killed()
            self.total += 1
            label = request.sample_id.rsplit("-", 1)[0]
            if label == "baseline-0":  # a baseline starts (again): θ is learnt after it
                self.baseline, self.theta = {}, None
            ok = self.rng.random() < self.rate(tree)
            if label.startswith("baseline-"):
                self.baseline[int(label.split("-")[1])] = ok
        if ok:
            return Outcome(exit_code=1, stderr=b"Traceback...\nBUG: reproduced\n")
        return Outcome(exit_code=0, stdout=b"ok\n")

    def _learn(self) -> None:
        """θ as the reduction itself learns it from this baseline (the real code path): from
        every run the adaptive baseline made (its looks decide how many)."""
        n = len(self.baseline)
        passes = sum(self.baseline.values())
        lower = stats.lower_bound(passes, n, self.config.confidence)
        self.theta = SamplingPolicy.learn(self.config, passes, n, lower).theta


@dataclass(frozen=True, slots=True)
class Trial:
    bad_deleted: bool
    exit_code: int
    interruptions: int
    runs: int
    payload: frozenset[str] = frozenset()
    execution: dict[str, Any] | None = None  # the report's execution block


def reduce_once(
    root: Path,
    seed: int,
    interruptions: int,
    *,
    kill_window: int = 45,
    jobs: int = 1,
    rate: float = SOURCE_RATE,
    junk: int = 1,
    bad: bool = True,
    **sampling: Any,
) -> Trial:
    """One reduction of the case with ``interruptions`` kills at uniformly random samples."""
    src = root / "src"
    for name, text in files(junk, bad).items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
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
    runner = BernoulliRunner(seed, config, rate, bad)
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
            except BaselineError:  # refused (exit 2): the baseline could not reach the rate
                return Trial(False, 2, done, runner.total)
            runner.kill_at = None
            bad_deleted = bad and not (options.output / "bad.txt").exists()
            payload = frozenset(
                str(p.relative_to(options.output)) for p in options.output.rglob("*") if p.is_file()
            )
            execution = dict(result.report["execution"])
            return Trial(bad_deleted, result.exit_code, done, runner.total, payload, execution)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _fields(options: ReduceOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in ReduceOptions.__dataclass_fields__}


def run_trials(
    root: Path, seeds: range, interruptions: int, jobs: int = 1, **case: Any
) -> list[Trial]:
    """``reduce_once`` per seed; ``case``: ``rate``, ``junk``, ``bad``, ``kill_window`` and
    sampling options."""
    return [
        reduce_once(root / f"t{seed}", seed, interruptions, jobs=jobs, **case) for seed in seeds
    ]
