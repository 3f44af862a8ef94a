"""Stopping the search: the run/time :class:`Budget`, the total :class:`Deadline`,
interruption, and the exceptions that carry them out of a pass.

Owns :class:`Budget` (``--max-runs``, ``--max-time``, ``--deadline``), :class:`Deadline` (one
wall-clock bound on the whole reduction, shared by the search's guard and the stages after it),
:func:`after_search_seconds` (the time the search leaves for them), :class:`Guard` (checks the
budgets, the deadline and the stop flag before every budgeted sample), :class:`StopSearch` and
:class:`Cancelled`.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from repomin.errors import UsageError

#: Seconds kept for what follows the last run: export, report (its environment digest alone
#: takes 0.4 s), pictures, summary, the process's exit -- measured 1.7 s on an idle 2-core
#: machine, 2.5 s beside another reduction.
AFTER_RUNS_SECONDS = 3.0

#: The estimate of the runs after the search is raised by this fraction (runs vary).
ESTIMATE_MARGIN = 0.2

#: A process older than this when :func:`process_started` is asked: the clocks disagree.
MAX_START_AGE = 60.0

#: What a deadline can cut, in the report's words (``execution.deadline_cuts``).
DEADLINE_CUTS = ("search", "final_test", "user_shell")


class StopSearch(Exception):
    """Raised inside the search when a budget is exhausted or the user interrupted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Cancelled(Exception):
    """A speculative candidate lost the race; its evaluation stops between samples."""


def process_started() -> float:
    """The :func:`time.monotonic` time at which this process started (Linux: its start time in
    ``/proc``, so the interpreter's own start-up counts), else now. Asked by the CLI within
    seconds of its start: an age over :data:`MAX_START_AGE` means the clocks disagree (now)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])  # field 22, starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    now = time.monotonic()
    return now - age if 0.0 <= age <= MAX_START_AGE else now


class Deadline:
    """``--deadline``: a total wall-clock bound, counted from ``started`` (default: now).

    The search's :class:`Guard` stops the search once the time left is no more than what
    :meth:`keep_after_search` says the stages after it need (re-estimated at every check); the
    stages after the search ask :meth:`left` and record what they :meth:`cut`. One per
    reduction: it is a clock, shared by the guard and the pipeline, not a configuration value.
    """

    def __init__(self, seconds: float, started: float | None = None) -> None:
        if not seconds > 0 or not math.isfinite(seconds):
            raise UsageError(f"--deadline {seconds} must be positive (seconds)")
        self.seconds = seconds
        self.started = time.monotonic() if started is None else started
        self._after: Callable[[], float] = lambda: 0.0
        self._cuts: list[str] = []
        self._lock = threading.Lock()

    def left(self) -> float:
        """Seconds until the deadline (negative once it has passed)."""
        return self.seconds - (time.monotonic() - self.started)

    def at(self) -> float:
        """The deadline as a :func:`time.monotonic` time."""
        return self.started + self.seconds

    def keep_after_search(self, estimate: Callable[[], float]) -> None:
        """Seconds the stages after the search need (:func:`after_search_seconds`), asked anew
        at every check of the guard."""
        self._after = estimate

    def search_over(self) -> bool:
        return self.left() <= self._after()

    def kept(self) -> float:
        """The current estimate of the stages after the search, in seconds."""
        return self._after()

    def cut(self, what: str) -> None:
        """Record that the deadline cut ``what`` (one of :data:`DEADLINE_CUTS`), once."""
        if what not in DEADLINE_CUTS:
            raise ValueError(f"unknown deadline cut {what!r}")
        with self._lock:
            if what not in self._cuts:
                self._cuts.append(what)

    @property
    def cuts(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._cuts)


class StopOrTime(threading.Event):
    """A stop flag that is also set from ``until`` (a :func:`time.monotonic` time) on, for a
    stage that only watches a stop flag (the runs in your shell under ``--deadline``); setting
    it sets the flag it wraps."""

    def __init__(self, stop: threading.Event, until: float) -> None:
        super().__init__()
        self._stop = stop
        self.until = until

    def is_set(self) -> bool:
        return self._stop.is_set() or time.monotonic() >= self.until

    def set(self) -> None:
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            step = self.until - time.monotonic()
            if end is not None:
                if time.monotonic() >= end:
                    return False
                step = min(step, end - time.monotonic())
            self._stop.wait(max(0.0, step))
        return True


def after_search_seconds(
    per_run: float, *, jobs: int, final_runs: int, shell_runs: int, holdout_runs: int
) -> float:
    """Seconds the stages after the search need: the final test's and the holdout's runs in
    rounds of ``jobs``, the runs in your shell one after another, one more round for the
    samples still running when the search stops -- each ``per_run`` seconds (the mean sample's
    wall time), :data:`ESTIMATE_MARGIN` more -- plus :data:`AFTER_RUNS_SECONDS`."""
    jobs = max(1, jobs)
    rounds = math.ceil(final_runs / jobs) + shell_runs + math.ceil(holdout_runs / jobs) + 1
    return rounds * max(0.0, per_run) * (1 + ESTIMATE_MARGIN) + AFTER_RUNS_SECONDS


@dataclass(frozen=True, slots=True)
class Budget:
    max_runs: int | None = None
    max_seconds: float | None = None
    #: ``--deadline`` (the whole reduction; the search stops early enough for what follows).
    deadline: Deadline | None = None

    def __post_init__(self) -> None:
        if self.max_runs is not None and self.max_runs < 1:
            raise UsageError("--max-runs must be at least 1")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise UsageError("--max-time must be positive (seconds)")


class Guard:
    """Budget and interruption: raises :class:`StopSearch` when the search must stop."""

    def __init__(self, budget: Budget, stop: threading.Event) -> None:
        self.budget = budget
        self.stop = stop
        self.started = time.monotonic()

    def check(self, samples: int, budgeted: bool) -> None:
        if self.stop.is_set():
            raise StopSearch("interrupted")
        if not budgeted:
            return
        b = self.budget
        if b.max_runs is not None and samples >= b.max_runs:
            raise StopSearch("max_runs")
        if b.max_seconds is not None and time.monotonic() - self.started >= b.max_seconds:
            raise StopSearch("max_time")
        if b.deadline is not None and b.deadline.search_over():
            b.deadline.cut("search")  # a time budget too: the report's stop_reason is max_time
            raise StopSearch("max_time")
