"""``repomin report validate`` recomputes the ``slippage`` object of a real in-process reduction."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from repomin.app.reduce import ReduceOptions, execute
from repomin.failure.contract import FailureSpec
from repomin.report.validate import check_report
from repomin.sampling.stats.slippage import advice
from repomin.tree import Tree
from tests.conftest import FakeRunner, make_repo

NEEDED = ["d1/f0.txt"]


def _needs(tree: Tree) -> bool:
    return all(p in tree and b"NEEDED" in tree[p].data for p in NEEDED)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("slip")
    src = tmp / "src"
    make_repo(src, 8, NEEDED, seed=2)
    options = ReduceOptions(
        src=src,
        output=tmp / "out",
        command="fake",
        user_shell_runs=0,
        spec=FailureSpec(match="BUG"),
        schedule=("files",),
        jobs=1,
    )
    result = execute(options, runner_factory=lambda _: FakeRunner(_needs, rate=0.7, seed=5))
    assert "slippage" in result.report
    return result.report


def test_a_real_report_passes(report: dict[str, Any]) -> None:
    assert [p for p in check_report(report) if p.rule.startswith("slippage")] == []
    assert report["slippage"]["final"] is not None


def _broken(report: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(report)


def test_counts_must_match_the_recorded_runs(report: dict[str, Any]) -> None:
    data = _broken(report)
    data["slippage"]["final"]["baseline_runs"] += 1
    assert "slippage.counts" in {p.rule for p in check_report(data)}


def test_p_value_is_recomputed(report: dict[str, Any]) -> None:
    data = _broken(report)
    data["slippage"]["final"]["p_value"] = 0.5 * data["slippage"]["final"]["p_value"] + 1e-3
    assert "slippage.p_value" in {p.rule for p in check_report(data)}


def test_direction_and_advice_follow_the_comparisons(report: dict[str, Any]) -> None:
    data = _broken(report)
    data["slippage"]["direction"] = "higher"
    data["slippage"]["advice"] = advice("higher")
    rules = {p.rule for p in check_report(data)}
    assert "slippage.direction" in rules and "slippage.advice" not in rules
    data["slippage"]["advice"] = "all fine"
    assert "slippage.advice" in {p.rule for p in check_report(data)}
