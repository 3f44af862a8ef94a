"""The reduction pipeline driven stage by stage in-process (no subprocess): a fake runner that
implements the Runner protocol decides from the tree, deterministically or with a seeded rate."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from repomin.app import pipeline as stage
from repomin.app.progress import NullProgress
from repomin.app.reduce import ReduceOptions, build_context, execute
from repomin.app.selection import select
from repomin.app.session import default_session_dir
from repomin.failure.contract import FailureSpec
from repomin.report.validate import validate_report
from repomin.runners.base import TRACE_SAMPLE_ID, Outcome, Runner, RunRequest
from repomin.sampling.policy import Sampling, SamplingConfig
from repomin.tree import Tree
from tests.conftest import FakeRunner, make_repo

NEEDED = ["d1/f0.txt", "f3.txt"]


def _needs(tree: Tree) -> bool:
    return all(p in tree and b"NEEDED" in tree[p].data for p in NEEDED)


def _options(tmp_path: Path, jobs: int = 2, **sampling: object) -> ReduceOptions:
    src = tmp_path / "src"
    make_repo(src, 24, NEEDED, seed=4)
    return ReduceOptions(
        src=src,
        output=tmp_path / "out",
        command="fake",
        user_shell_runs=0,
        spec=FailureSpec(match="BUG"),
        sampling=SamplingConfig(**sampling),  # type: ignore[arg-type]
        schedule=("files", "lines"),
        jobs=jobs,
    )


def _stages(options: ReduceOptions, runner: Runner, prefetch: bool = True) -> dict[str, object]:
    """Every stage in order; the records each returned (``prefetch``: False drops the final
    runs in idle slots, ``prefetch.py``)."""
    selected = stage.select_stage(options)
    root = default_session_dir(options.output)
    session = stage.open_session(options, selected, root)
    ctx = build_context(options, runner, NullProgress(), threading.Event(), root, time.monotonic())
    if not prefetch:
        ctx = replace(ctx, prefetch=None)
    baselined = stage.baseline_stage(ctx, selected, session)
    assert session is not None and session.load_baseline() is not None  # kept for --resume
    trace = stage.trace_stage(ctx, baselined.initial)
    searched = stage.search_stage(ctx, baselined, trace, selected.selection.is_kept)
    final = stage.validate_stage(ctx, searched)
    fp = stage.export_stage(ctx, searched.tree)
    holdout = stage.certify_stage(ctx, searched, fp)
    report = stage.report_stage(ctx, selected, baselined, trace, searched, final, fp, holdout)
    return {
        "selected": selected,
        "baselined": baselined,
        "trace": trace,
        "searched": searched,
        "final": final,
        "fp": fp,
        "holdout": holdout,
        "report": report,
        "ctx": ctx,
    }


def test_deterministic_case_stage_by_stage(tmp_path: Path) -> None:
    options = _options(tmp_path)
    runner = FakeRunner(_needs)
    r = _stages(options, runner)
    baselined = r["baselined"]
    assert isinstance(baselined, stage.Baselined)
    assert (baselined.baseline.passes, baselined.baseline.runs) == (20, 20)
    ctx = r["ctx"]
    assert isinstance(ctx, stage.Context)
    assert ctx.oracle.policy.mode is Sampling.SINGLE and ctx.oracle.policy.deterministic
    trace = r["trace"]
    assert not trace.usable  # type: ignore[attr-defined]  # no trace pass in the schedule
    searched = r["searched"]
    assert isinstance(searched, stage.ReductionResult)
    assert searched.stop_reason == "fixpoint"
    assert sorted(searched.tree.paths) == NEEDED
    assert all(searched.tree[p].data == b"NEEDED\n" for p in NEEDED)
    final = r["final"]
    assert final.passes == final.runs == 10 and final.passed  # type: ignore[attr-defined]
    exported = select(options.output, options.selection).tree
    assert exported.digest == searched.tree.digest
    report = r["report"]
    assert isinstance(report, dict)
    assert not validate_report(report).problems
    ex = report["execution"]
    assert ex["oracle_samples"] == runner.calls
    assert ex["baseline_runs"] == 20 and ex["final_runs"] == 10
    # every run is a baseline, final, candidate or single-run incumbent-check run
    assert ex["candidate_runs"] == runner.calls - 30 - ctx.oracle.incumbent_checks
    assert [e["phase"] for e in report["events"]][:1] == ["baseline"]
    assert [e["phase"] for e in report["events"]][-2:] == ["final", "export"]


def test_flaky_case_stage_by_stage(tmp_path: Path) -> None:
    options = _options(tmp_path, mode="strict")
    runner = FakeRunner(_needs, rate=0.7, seed=3)
    r = _stages(options, runner)
    ctx = r["ctx"]
    assert isinstance(ctx, stage.Context)
    policy = ctx.oracle.policy
    assert policy.mode is Sampling.STRICT and not policy.deterministic
    assert policy.family >= 1  # family indexes were spent, and are recorded in the policy
    searched = r["searched"]
    assert isinstance(searched, stage.ReductionResult)
    assert set(NEEDED) <= set(searched.tree.paths)
    report = r["report"]
    assert isinstance(report, dict)
    assert not validate_report(report).problems
    accepted = [e for e in report["events"] if e.get("decision") == "accepted"]
    assert accepted
    indexes = [e["candidate_family_index"] for e in accepted]
    assert indexes == sorted(indexes) and max(indexes) <= policy.family
    ex = report["execution"]
    assert ex["oracle_samples"] == runner.calls
    # the final runs ReproMin chose for a flaky failure: sized for power, stopped once certain
    assert ex["final_planned_runs"] == policy.final_runs(None, ex["final_alpha"])
    assert ex["final_stopped_early"] == (ex["final_runs"] < ex["final_planned_runs"])
    assert ex["final_policy"] == "curtailed-exact-binomial-v1"


def test_execute_in_process_equals_the_stages(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    # jobs=1: speculative candidates (jobs > 1) make the run count vary between runs
    staged = _stages(_options(a, jobs=1), FakeRunner(_needs))
    result = execute(_options(b, jobs=1), runner_factory=lambda _: FakeRunner(_needs))
    assert result.exit_code == 0
    report = staged["report"]
    assert isinstance(report, dict)
    assert result.report["output"]["tree_content_sha256"] == report["output"]["tree_content_sha256"]
    assert result.report["execution"]["oracle_samples"] == report["execution"]["oracle_samples"]
    assert not default_session_dir(b / "out").exists()  # a finished reduction drops its session


def test_a_failing_baseline_leaves_no_session(tmp_path: Path) -> None:
    options = _options(tmp_path)
    from repomin.errors import BaselineError

    with pytest.raises(BaselineError):
        execute(options, runner_factory=lambda _: FakeRunner(lambda t: False))
    assert not default_session_dir(options.output).exists()
    assert not options.output.exists()


class _Timed(FakeRunner):
    """FakeRunner that takes time and notes when each run started and ended (the traced run,
    several samples long, by its sample id); ``kill_all`` ends a traced run at once."""

    def __init__(self, fails: object) -> None:
        super().__init__(fails)  # type: ignore[arg-type]
        self.spans: list[tuple[str, float, float]] = []
        self.killed = threading.Event()

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        start = time.monotonic()
        traced = request.sample_id == TRACE_SAMPLE_ID
        if traced:
            self.killed.wait(0.3)
        else:
            time.sleep(0.01)
        try:
            return super().run(tree, request)
        finally:
            with self.lock:
                self.spans.append((request.sample_id, start, time.monotonic()))

    def kill_all(self) -> None:
        self.killed.set()


def _traced_options(tmp_path: Path, jobs: int) -> ReduceOptions:
    return replace(_options(tmp_path, jobs=jobs), schedule=("trace", "files", "lines"))


@pytest.mark.parametrize("jobs", [1, 2])
def test_with_several_slots_the_first_traced_run_starts_beside_the_baseline(
    tmp_path: Path, jobs: int
) -> None:
    runner = _Timed(_needs)
    result = execute(_traced_options(tmp_path, jobs), runner_factory=lambda _: runner)
    assert result.exit_code == 0
    trace = [(s, e) for sid, s, e in runner.spans if sid == TRACE_SAMPLE_ID]
    baseline_end = max(e for sid, _, e in runner.spans if sid.startswith("baseline"))
    assert len(trace) == 1
    if jobs == 1:
        assert trace[0][0] >= baseline_end  # one slot: after the baseline, as before
    else:
        assert trace[0][0] < baseline_end  # beside the baseline's 20 runs (0.3 s against 0.1)
    # the report reads the same either way: the baseline's event, then the traced run's
    phases = [e["phase"] for e in result.report["events"]]
    assert phases[:2] == ["baseline", "trace"]
    assert not validate_report(result.report).problems


def test_a_failing_baseline_does_not_leave_the_traced_run_beside_it_running(
    tmp_path: Path,
) -> None:
    from repomin.errors import BaselineError

    runner = _Timed(lambda t: False)
    with pytest.raises(BaselineError):
        execute(_traced_options(tmp_path, 2), runner_factory=lambda _: runner)
    # stopped (kill_all) and waited for: it ended before execute returned, well short of 0.3 s
    trace = [(s, e) for sid, s, e in runner.spans if sid == TRACE_SAMPLE_ID]
    assert len(trace) == 1 and runner.killed.is_set() and trace[0][1] - trace[0][0] < 0.25
