"""Shared fixtures: generated repositories and a fake runner for in-process oracle tests."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.runners.base import Outcome, Runner, RunRequest
from repomin.sampling.accounting import Ledger
from repomin.sampling.oracle import Oracle
from repomin.sampling.policy import SamplingConfig
from repomin.tree import Tree
from tests.stub_runner import StubRunner


class FakeRunner(StubRunner):
    """A runner whose outcome is a Python function of the tree (no subprocess)."""

    def __init__(self, fails: Callable[[Tree], bool], rate: float = 1.0, seed: int = 0) -> None:
        self.fails = fails
        self.rate = rate
        self.rng = random.Random(seed)
        self.calls = 0
        self.lock = threading.Lock()
        self.digests: list[str] = []

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        with self.lock:
            self.calls += 1
            self.digests.append(tree.digest)
            draw = self.rng.random()
        if self.fails(tree) and draw < self.rate:
            return Outcome(exit_code=1, stderr=b"Traceback...\nBUG: reproduced\n")
        return Outcome(exit_code=0, stdout=b"ok\n")


def make_repo(root: Path, n_files: int, needed: list[str], *, seed: int = 1) -> list[str]:
    """A nested repository of ``n_files`` files; ``needed`` paths get a marker line."""
    rng = random.Random(seed)
    dirs = [""]
    for i in range(max(3, n_files // 12)):
        parent = rng.choice(dirs)
        dirs.append(f"{parent}/d{i}" if parent else f"d{i}")
    paths = set(needed)
    while len(paths) < n_files:
        d = rng.choice(dirs)
        paths.add(f"{d}/f{len(paths)}.txt" if d else f"f{len(paths)}.txt")
    for rel in sorted(paths):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"line {j} of {rel}\n" for j in range(rng.randint(1, 6)))
        if rel in needed:
            body += "NEEDED\n"
        p.write_text(body)
    return sorted(paths)


@pytest.fixture
def fake_runner_factory() -> Callable[..., FakeRunner]:
    return FakeRunner


def flaky_gate(counter: Path, per_mille: int) -> str:
    """Shell snippet that lets the rest of a command run in ``per_mille``/1000 of the runs.

    Runs are numbered through a counter file (outside the tree, incremented under ``flock``) and
    pass when ``(n * 618) % 1000 < per_mille`` -- a Weyl sequence with the golden-ratio step, so
    every window of runs has almost exactly the target rate. End-to-end tests then exercise the
    flaky code paths without depending on luck (unit tests use seeded RNGs instead).
    """
    lock = f"{counter}.lock"
    return (
        f"n=$(flock {lock} sh -c 'n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); "
        f"echo $n > {counter}; echo $n'); [ $(( (n * 618) % 1000 )) -lt {per_mille} ] || exit 0;"
    )


def reduce_argv(src: Path, out: Path, command: str, match: str, *extra: str) -> list[str]:
    """``python -m repomin reduce SRC -o OUT --command COMMAND --match MATCH EXTRA…``."""
    return [
        sys.executable,
        "-m",
        "repomin",
        "reduce",
        str(src),
        "-o",
        str(out),
        "--command",
        command,
        "--match",
        match,
        *extra,
    ]


def fake_oracle(runner: Runner, config: SamplingConfig, **kw: Any) -> Oracle:
    """An :class:`Oracle` over ``runner`` that matches ``BUG`` (``kw``: ledger, hooks, budget,
    use_cache, timeout, … as the constructor takes them)."""
    kw.setdefault("ledger", Ledger())
    kw.setdefault("timeout", 1)
    return Oracle(
        runner=runner,
        contract=FailureContract(FailureSpec(match="BUG")),
        command="fake",
        env={},
        config=config,
        **kw,
    )
