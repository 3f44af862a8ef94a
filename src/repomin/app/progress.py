"""Progress display and its observer interface. Only this module (and the CLI) writes to the
terminal while a reduction runs.

The pipeline feeds a :class:`Progress` with *events* and never with pre-rendered text:

* ``stage(name, total)`` when a stage begins: ``"selection"``, ``"baseline"`` (``total`` =
  baseline runs), ``"traced run"``, a pass name (no total), ``"final"`` (final runs),
  ``"holdout"`` (holdout runs). A stage with a total shows ``done/total`` and an ETA.
* ``sample_started(sample_id)`` / ``sample_finished(sample_id, reproduced)`` around every run
  the runner executes. :class:`ObservedRunner` emits both for any :class:`Runner`, so wrapping
  the runner once is all the wiring samples need (oracle samples, retries, the traced run).
* ``update(files=, bytes=, accepted=, jobs=, theta=)`` for the incumbent's size, the accepted
  mutation count, the job slots and the candidate threshold θ the report records
  (``execution.min_candidate_rate``; call again when the policy switch halves it).
* ``message(text)`` for a line worth keeping (printed above the live line in verbose mode).
* ``notice(text)`` for what the user must see at once, e.g. the first baseline run that did not
  reproduce (printed above the live line, or on stderr in a pipe; silent only with ``--quiet``).

:class:`LiveProgress` redraws on rich's auto-refresh thread (:data:`REFRESH_HZ` per second)
from a snapshot of that state, so the clock, the in-flight count and the age of the oldest
running sample move while a run is in flight. In a pipe (stderr not a terminal)
:class:`NoticeProgress` prints notices, one plain line per stage (:func:`stage_line`) and, when
:data:`HEARTBEAT_SECONDS` passed without a line, the status line (:func:`render_line`);
:class:`LogProgress` prints messages too (``--verbose``). :class:`NullProgress` is silent
(``--quiet``). All methods are thread-safe: samples finish on worker threads.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from repomin.runners.base import TRACE_SAMPLE_ID, Outcome, Runner, RunnerWrapper, RunRequest
from repomin.tree import Tree

if TYPE_CHECKING:
    from rich.text import Text

#: Redraws per second of the live line (at least 2 for a display that reads as live).
REFRESH_HZ = 4

#: In a pipe, seconds without a line after which the status line is printed (at most one per
#: this many seconds; stage lines come as they happen).
HEARTBEAT_SECONDS = 30.0


class Progress(Protocol):
    """What the pipeline calls; see the module docstring for the event vocabulary."""

    def start(self) -> None: ...

    def stage(self, name: str, total: int | None = None) -> None: ...

    def sample_started(self, sample_id: str) -> None: ...

    def sample_finished(self, sample_id: str, reproduced: bool | None = None) -> None: ...

    def update(self, **fields: Any) -> None: ...

    def message(self, text: str) -> None: ...

    def notice(self, text: str) -> None: ...

    def stop(self) -> None: ...


class NullProgress:
    """Silent; also the base of the other displays (every event is optional)."""

    def start(self) -> None:
        pass

    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def sample_started(self, sample_id: str) -> None:
        pass

    def sample_finished(self, sample_id: str, reproduced: bool | None = None) -> None:
        pass

    def update(self, **fields: Any) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def notice(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass


@dataclass(slots=True)
class Snapshot:
    """Everything one frame shows, copied under the lock (pure data, easy to test)."""

    elapsed: float
    stage: str
    stage_total: int | None
    stage_done: int
    stage_elapsed: float
    files: int | None
    bytes: int | None
    runs: int
    accepted: int
    inflight: int
    jobs: int
    oldest_age: float | None
    theta: float | None


@dataclass(slots=True)
class ProgressState:
    """The display's model: counters fed by events, read by :meth:`snapshot`."""

    clock: Callable[[], float] = time.monotonic
    stage: str = "starting"
    stage_total: int | None = None
    stage_done: int = 0
    files: int | None = None
    bytes: int | None = None
    runs: int = 0
    accepted: int = 0
    jobs: int = 1
    theta: float | None = None
    started: float = 0.0
    stage_started: float = 0.0
    running: dict[str, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.started = self.stage_started = self.clock()

    def set_stage(self, name: str, total: int | None) -> None:
        with self.lock:
            self.stage, self.stage_total, self.stage_done = name, total, 0
            self.stage_started = self.clock()

    def started_sample(self, sample_id: str) -> None:
        with self.lock:
            self.running.setdefault(sample_id, []).append(self.clock())

    def finished_sample(self, sample_id: str) -> None:
        with self.lock:
            starts = self.running.get(sample_id)
            if not starts:
                return
            starts.pop(0)
            if not starts:
                del self.running[sample_id]
            if sample_id != TRACE_SAMPLE_ID:  # "runs" are oracle runs, as in the summary
                self.runs += 1
            self.stage_done += 1

    def set_fields(self, fields: dict[str, Any]) -> None:
        phase = fields.get("phase")
        if phase is not None and phase != self.stage:  # the pre-event ``update(phase=...)``
            self.set_stage(str(phase), None)
        with self.lock:
            for name in ("files", "bytes", "accepted", "jobs", "theta"):
                if fields.get(name) is not None:
                    setattr(self, name, fields[name])
            if isinstance(fields.get("runs"), int):  # callers that count runs themselves
                self.runs = max(self.runs, fields["runs"])

    def snapshot(self) -> Snapshot:
        with self.lock:
            now = self.clock()
            oldest = min((t for starts in self.running.values() for t in starts), default=None)
            return Snapshot(
                elapsed=now - self.started,
                stage=self.stage,
                stage_total=self.stage_total,
                stage_done=self.stage_done,
                stage_elapsed=now - self.stage_started,
                files=self.files,
                bytes=self.bytes,
                runs=self.runs,
                accepted=self.accepted,
                inflight=sum(len(starts) for starts in self.running.values()),
                jobs=self.jobs,
                oldest_age=None if oldest is None else now - oldest,
                theta=self.theta,
            )


def eta_seconds(snap: Snapshot) -> float | None:
    """Remaining time of a fixed-size stage from its observed throughput; None if unknown."""
    if snap.stage_total is None or snap.stage_done == 0 or snap.stage_elapsed <= 0:
        return None
    remaining = max(0, snap.stage_total - snap.stage_done)
    return remaining * snap.stage_elapsed / snap.stage_done


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) for the elapsed time."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def human_bytes(n: int) -> str:
    """``812 B``, ``4.1 kB``, ``3.2 MB`` (decimal units, as ``ls -h --si``)."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def render_line(snap: Snapshot) -> str:
    """The status line, plain text: every field is always present (``?`` until known)."""
    stage = snap.stage
    if snap.stage_total is not None:
        stage += f" {min(snap.stage_done, snap.stage_total)}/{snap.stage_total}"
        eta = eta_seconds(snap)
        stage += f" ETA {clock(eta)}" if eta is not None else " ETA ?"
    size = (
        f"{snap.files} files {human_bytes(snap.bytes)}"
        if snap.files is not None and snap.bytes is not None
        else "size ?"
    )
    rate = snap.runs / snap.elapsed if snap.elapsed > 0 else 0.0
    age = f" oldest {snap.oldest_age:.1f}s" if snap.oldest_age is not None else ""
    theta = f"θ {snap.theta:.3f}" if snap.theta is not None else "θ after baseline"
    # The clock comes first so that a narrow terminal (the line is cut at its width) keeps it.
    return "  ".join(
        (
            clock(snap.elapsed),
            stage,
            size,
            f"runs {snap.runs} ({rate:.1f}/s)",
            f"in flight {snap.inflight}/{snap.jobs}{age}",
            f"accepted {snap.accepted}",
            theta,
        )
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _size(snap: Snapshot) -> str:
    if snap.files is None or snap.bytes is None:
        return "size ?"
    return f"{_plural(snap.files, 'file')}, {human_bytes(snap.bytes)}"


def stage_line(snap: Snapshot, label: str) -> str:
    """One stage's plain line: ``m:ss LABEL: N files, B; R runs; A accepted``."""
    return (
        f"{clock(snap.elapsed)} {label}: {_size(snap)}; {_plural(snap.runs, 'run')}; "
        f"{snap.accepted} accepted"
    )


class NoticeProgress(NullProgress):
    """The display in a pipe (stderr is not a terminal), as plain ``repomin:`` lines on stderr:
    every notice; one line per stage (the baseline's when it has ended -- the first θ, so that
    a baseline that fails or is interrupted says only its error --, the traced run, each pass as
    it starts, the final test, the runs in your shell, the holdout, the export; a traced or
    capture run inside a pass is part of the pass); and, from :meth:`start` to :meth:`stop`,
    :func:`render_line`'s status line whenever ``heartbeat`` seconds passed without a line."""

    def __init__(
        self,
        *,
        heartbeat: float = HEARTBEAT_SECONDS,
        clock_fn: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = ProgressState(clock=clock_fn)
        self._heartbeat = heartbeat
        self._lock = threading.Lock()
        self._said = self.state.started  # when the last line was printed
        self._baseline = False  # the baseline started and its line is not printed yet
        self._pass: str | None = None  # the pass running (a traced run in it is its own)
        self._aside = False  # an event inside the pass (a re-trace, a capture run) is running
        self._stopped = threading.Event()
        self._timer: threading.Thread | None = None

    def _print(self, text: str) -> None:
        with self._lock:
            for line in text.splitlines():
                print(f"repomin: {line}", file=sys.stderr, flush=True)
            self._said = self.state.clock()

    def notice(self, text: str) -> None:
        self._print(text)

    def start(self) -> None:
        if self._timer is None and self._heartbeat > 0:
            self._timer = threading.Thread(target=self._beat, name="repomin-status", daemon=True)
            self._timer.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.join()

    def _beat(self) -> None:
        while True:
            with self._lock:
                due = self._said + self._heartbeat
            if self._stopped.wait(max(0.0, due - self.state.clock())):
                return
            if self.state.clock() >= self._said + self._heartbeat:
                self._print(render_line(self.state.snapshot()))

    def stage(self, name: str, total: int | None = None) -> None:
        if self._baseline:
            self._end_baseline()
        self.state.set_stage(name, total)
        if name in ("selection", "baseline"):
            self._baseline = name == "baseline"
            return
        if name in _ASIDE and self._pass is not None:
            self._aside = True
            return
        if self._aside and name == self._pass:  # back in the pass after a re-trace
            self._aside = False
            return
        self._pass, self._aside = (None if is_stage(name) else name), False
        self._print(stage_line(self.state.snapshot(), _label(name, total)))

    def sample_started(self, sample_id: str) -> None:
        self.state.started_sample(sample_id)

    def sample_finished(self, sample_id: str, reproduced: bool | None = None) -> None:
        self.state.finished_sample(sample_id)

    def update(self, **fields: Any) -> None:
        self.state.set_fields(fields)
        if self._baseline and fields.get("theta") is not None:
            self._end_baseline()  # the policy is learnt (or restored): the baseline has ended

    def _end_baseline(self) -> None:
        self._baseline = False
        snap = self.state.snapshot()
        done = (  # all its runs (a traced run beside it counts in stage_done too)
            f"{_plural(snap.stage_total, 'run')} in {snap.stage_elapsed:.1f} s"
            if snap.stage_total is not None
            else "restored from the session"
        )
        theta = f", θ {snap.theta:.3f}" if snap.theta is not None else ""
        self._print(stage_line(snap, f"baseline ({done}{theta})"))


class LogProgress(NoticeProgress):
    """The pipe's display with messages too (pipes with --verbose)."""

    def message(self, text: str) -> None:
        self._print(text)


#: Stages that are not passes (the pipe's display names every other stage ``pass NAME``); a
#: stage named ``STAGE (why)``, e.g. ``your shell (diagnosis)``, is one of them too.
_STAGES = frozenset(
    (
        "selection",
        "baseline",
        "traced run",
        "capture run",
        "ignore check",
        "final",
        "your shell",
        "holdout",
        "export",
    )
)


def is_stage(name: str) -> bool:
    """Is ``name`` a stage that is not a pass (:data:`_STAGES`, with or without ``(why)``)?"""
    return name.split(" (", 1)[0] in _STAGES


#: Events that a pass may start inside itself (the display then comes back to the pass).
_ASIDE = ("traced run", "capture run")


def _label(name: str, total: int | None) -> str:
    label = {"final": "final test"}.get(name, name if is_stage(name) else f"pass {name}")
    if total is not None and name not in _ASIDE:
        label += f" ({_plural(total, 'run')})"
    return label


class LiveProgress(NullProgress):
    """A rich live status line, redrawn by a timer thread whether or not events arrive."""

    def __init__(self, verbose: bool = False, *, clock_fn: Callable[[], float] = time.monotonic):
        from rich.console import Console
        from rich.live import Live

        self.state = ProgressState(clock=clock_fn)
        self._console = Console(stderr=True)
        self._live = Live(
            console=self._console,
            get_renderable=self._renderable,
            auto_refresh=True,
            refresh_per_second=REFRESH_HZ,
            transient=True,
        )
        self._verbose = verbose

    def _renderable(self) -> Text:
        from rich.text import Text

        return Text(render_line(self.state.snapshot()), no_wrap=True, overflow="ellipsis")

    def start(self) -> None:
        self._live.start(refresh=True)

    def stage(self, name: str, total: int | None = None) -> None:
        self.state.set_stage(name, total)

    def sample_started(self, sample_id: str) -> None:
        self.state.started_sample(sample_id)

    def sample_finished(self, sample_id: str, reproduced: bool | None = None) -> None:
        self.state.finished_sample(sample_id)

    def update(self, **fields: Any) -> None:
        self.state.set_fields(fields)

    def message(self, text: str) -> None:
        if self._verbose:
            self.notice(text)

    def notice(self, text: str) -> None:
        for line in text.splitlines():
            self._console.print(f"repomin: {line}", highlight=False, markup=False, soft_wrap=True)

    def stop(self) -> None:
        self._live.stop()


class ObservedRunner(RunnerWrapper):
    """A :class:`Runner` that reports every run to a :class:`Progress` (start and finish).

    Everything else (``backend``, ``describe``, ``close``, ``kill_all``, backend-specific
    attributes) is the wrapped runner's, so it can stand in for it anywhere.
    """

    def __init__(
        self, runner: Runner, progress: Progress, started: threading.Event | None = None
    ) -> None:
        super().__init__(runner)
        self._progress = progress
        self._started = started

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        if self._started is not None:
            self._started.set()  # a run has started (app.execute defers imports until then)
        self._progress.sample_started(request.sample_id)
        try:
            return self.inner.run(tree, request)
        finally:
            self._progress.sample_finished(request.sample_id)


def make_progress(*, quiet: bool, verbose: bool) -> Progress:
    if quiet:
        return NullProgress()
    if sys.stderr.isatty():
        return LiveProgress(verbose)
    return LogProgress() if verbose else NoticeProgress()
