"""The live display's model, line and runner observer (fake clock: exact values)."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from repomin.app.progress import (
    NullProgress,
    ObservedRunner,
    ProgressState,
    clock,
    eta_seconds,
    human_bytes,
    render_line,
)
from repomin.runners.base import TRACE_SAMPLE_ID, Outcome, RunRequest
from repomin.tree import Tree


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_first_frame_has_every_field() -> None:
    line = render_line(ProgressState(clock=FakeClock()).snapshot())
    assert line == (
        "0:00  starting  size ?  runs 0 (0.0/s)  in flight 0/1  accepted 0  θ after baseline"
    )


def test_baseline_counts_eta_inflight_and_age() -> None:
    t = FakeClock()
    state = ProgressState(clock=t)
    state.set_fields({"files": 18, "bytes": 4123, "jobs": 2})
    state.set_stage("baseline", 20)
    for i in range(7):
        state.started_sample(f"baseline-{i}")
        t.now += 1.0
        state.finished_sample(f"baseline-{i}")
    state.started_sample("baseline-7")
    t.now += 0.5
    state.started_sample("baseline-8")
    t.now += 2.0
    snap = state.snapshot()
    assert (snap.stage_done, snap.inflight, snap.runs) == (7, 2, 7)
    assert snap.oldest_age == 2.5
    # 7 runs in 9.5 s: 13 remaining take 13 * 9.5 / 7 = 17.6 s
    assert eta_seconds(snap) == 13 * 9.5 / 7
    assert render_line(snap) == (
        "0:09  baseline 7/20 ETA 0:17  18 files 4.1 kB  runs 7 (0.7/s)  in flight 2/2 oldest "
        "2.5s  accepted 0  θ after baseline"
    )


def test_stage_change_resets_count_and_pass_has_no_eta() -> None:
    t = FakeClock()
    state = ProgressState(clock=t)
    state.set_stage("baseline", 1)
    state.started_sample("baseline-1")
    state.finished_sample("baseline-1")
    state.set_stage("files", None)
    state.set_fields({"theta": 0.43, "accepted": 3})
    snap = state.snapshot()
    assert (snap.stage, snap.stage_done, snap.runs) == ("files", 0, 1)
    assert eta_seconds(snap) is None
    assert render_line(snap).startswith("0:00  files  size ?")
    assert "θ 0.430" in render_line(snap)
    assert "accepted 3" in render_line(snap)


def test_duplicate_sample_ids_are_counted_separately() -> None:
    state = ProgressState(clock=FakeClock())
    state.started_sample("files-3")
    state.started_sample("files-3")
    assert state.snapshot().inflight == 2
    state.finished_sample("files-3")
    assert state.snapshot().inflight == 1
    state.finished_sample("files-3")
    state.finished_sample("files-3")  # unmatched finish: ignored
    assert (state.snapshot().inflight, state.snapshot().runs) == (0, 2)


def test_the_traced_run_is_a_stage_not_an_oracle_run() -> None:
    state = ProgressState(clock=FakeClock())
    state.set_stage("traced run", 1)
    state.started_sample(TRACE_SAMPLE_ID)
    state.finished_sample(TRACE_SAMPLE_ID)
    state.started_sample("files-1")
    state.finished_sample("files-1")
    snap = state.snapshot()
    assert (snap.stage_done, snap.runs) == (2, 1)


def test_legacy_phase_update_sets_stage_once() -> None:
    t = FakeClock()
    state = ProgressState(clock=t)
    state.set_stage("lines", None)
    state.started_sample("x")
    state.finished_sample("x")
    state.set_fields({"phase": "lines", "runs": 0})
    assert state.snapshot().stage_done == 1
    state.set_fields({"phase": "tokens", "runs": 5})
    assert (state.snapshot().stage, state.snapshot().stage_done, state.snapshot().runs) == (
        "tokens",
        0,
        5,
    )


def test_formatters() -> None:
    assert [clock(s) for s in (0, 59.9, 61, 3600 + 62)] == ["0:00", "0:59", "1:01", "1:01:02"]
    assert [human_bytes(n) for n in (0, 999, 1000, 4123, 3_200_000)] == [
        "0 B",
        "999 B",
        "1.0 kB",
        "4.1 kB",
        "3.2 MB",
    ]


class Recorder(NullProgress):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def sample_started(self, sample_id: str) -> None:
        self.events.append(("start", sample_id))

    def sample_finished(self, sample_id: str, reproduced: bool | None = None) -> None:
        self.events.append(("finish", sample_id))


class BlockingRunner:
    backend = "host"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.killed = False

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        self.release.wait(5)
        if request.command == "boom":
            raise RuntimeError("engine gone")
        return Outcome(exit_code=1)

    def describe(self) -> dict[str, Any]:
        return {"backend": "host", "inner": True}

    def close(self) -> None:
        pass

    def kill_all(self) -> None:
        self.killed = True


def test_observed_runner_reports_runs_in_flight_and_forwards() -> None:
    inner = BlockingRunner()
    rec = Recorder()
    runner = ObservedRunner(inner, rec)
    tree = Tree.of({})
    worker = threading.Thread(target=runner.run, args=(tree, RunRequest("x", {}, 1.0, "b-1")))
    worker.start()
    while not rec.events:
        threading.Event().wait(0.01)
    assert rec.events == [("start", "b-1")]
    inner.release.set()
    worker.join()
    assert rec.events == [("start", "b-1"), ("finish", "b-1")]
    assert runner.describe() == {"backend": "host", "inner": True}
    runner.kill_all()
    assert inner.killed and runner.backend == "host"


def test_observed_runner_finishes_on_error() -> None:
    inner = BlockingRunner()
    inner.release.set()
    rec = Recorder()
    with contextlib.suppress(RuntimeError):
        ObservedRunner(inner, rec).run(Tree.of({}), RunRequest("boom", {}, 1.0, "c-1"))
    assert rec.events == [("start", "c-1"), ("finish", "c-1")]


def test_notices_in_a_pipe_and_quiet(capsys: Any) -> None:
    from repomin.app.progress import LogProgress, NoticeProgress, make_progress

    assert isinstance(make_progress(quiet=True, verbose=True), NullProgress)
    assert type(make_progress(quiet=False, verbose=False)) is NoticeProgress  # stderr is no tty
    assert type(make_progress(quiet=False, verbose=True)) is LogProgress
    NoticeProgress().message("hidden")
    NoticeProgress().notice("first\nsecond")
    LogProgress().message("shown")
    NullProgress().notice("never")
    assert capsys.readouterr().err == "repomin: first\nrepomin: second\nrepomin: shown\n"


def test_diagnosis_stages_are_not_called_passes_in_a_pipe(capsys: Any) -> None:
    """A run made to explain a baseline (in your shell, traced, with ignored files) is a stage
    of its own in a pipe, not ``pass your shell (diagnosis)``; a real pass still is one."""
    from repomin.app.progress import NoticeProgress

    progress = NoticeProgress()
    for name in (
        "your shell (diagnosis)",
        "traced run (diagnosis)",
        "ignore check (unfiltered tree)",
    ):
        progress.stage(name, 1)
    progress.stage("lines")
    err = capsys.readouterr().err
    assert "pass your shell" not in err and "pass traced run" not in err
    assert "pass ignore check" not in err
    assert " your shell (diagnosis) (1 run): " in err
    assert " traced run (diagnosis) (1 run): " in err
    assert " ignore check (unfiltered tree) (1 run): " in err
    assert " pass lines: " in err
