"""Stopping the search: the run/time :class:`Budget`, interruption, and the exceptions that
carry them out of a pass.

Owns :class:`Budget` (``--max-runs``, ``--max-time``), :class:`Guard` (checks both and the stop
flag before every budgeted sample), :class:`StopSearch` and :class:`Cancelled`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from repomin.errors import UsageError


class StopSearch(Exception):
    """Raised inside the search when a budget is exhausted or the user interrupted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Cancelled(Exception):
    """A speculative candidate lost the race; its evaluation stops between samples."""


@dataclass(frozen=True, slots=True)
class Budget:
    max_runs: int | None = None
    max_seconds: float | None = None

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
