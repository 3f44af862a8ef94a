"""Adaptive candidate timeouts: a hung candidate costs a multiple of the baseline, not --timeout.

After the baseline, candidate runs get ``min(--timeout, max(10 x slowest baseline run, 5 s))``
unless ``--fixed-timeout``. A run that times out at that limit is run once more at
``--timeout`` and only that second outcome counts (so a candidate that is merely slower than
the baseline is never refused for it). Baseline, final validation, holdout and traced runs keep
``--timeout`` (3x for the traced run).

:class:`AdaptiveTimeoutRunner` wraps the runner the oracle uses: while armed (during the
search), a request carrying the user's timeout runs at the adaptive limit; requests with any
other timeout (the traced run) pass through unchanged. The retry is an extra process run of the
same sample, counted in ``execution.adaptive_timeout_retries``, not as a second oracle sample.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace

from repomin.runners.base import Outcome, Runner, RunnerWrapper, RunRequest
from repomin.tree import Tree

#: Candidate limit = max(FACTOR x slowest baseline run, FLOOR), at most --timeout.
FACTOR = 10.0
FLOOR = 5.0
RULE = "adaptive-10x-slowest-baseline-min-5s-v1"
FIXED = "fixed"


def adaptive_limit(user_timeout: float, durations: Iterable[float]) -> float:
    """The candidate timeout for baseline run ``durations`` (seconds)."""
    slowest = max(durations, default=0.0)
    return min(user_timeout, max(FACTOR * slowest, FLOOR))


class AdaptiveTimeoutRunner(RunnerWrapper):
    """A :class:`Runner` that applies the adaptive candidate limit while armed."""

    def __init__(self, runner: Runner, user_timeout: float) -> None:
        super().__init__(runner)
        self.user_timeout = user_timeout
        self.limit: float | None = None  # None: not armed (every run at its own timeout)
        #: The limit the search used (kept after ``disarm`` for the report).
        self.armed_limit: float | None = None
        self.retries = 0
        self._lock = threading.Lock()

    def arm(self, durations: Iterable[float]) -> float:
        """Start applying the limit computed from the baseline ``durations``; returns it."""
        limit = adaptive_limit(self.user_timeout, durations)
        self.limit = self.armed_limit = limit if limit < self.user_timeout else None
        return limit

    def disarm(self) -> None:
        self.limit = None

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        limit = self.limit
        # Final runs (also those started during the search: prefetch.py) use the user's.
        final = request.sample_id.startswith("final-")
        if limit is None or request.timeout != self.user_timeout or final:
            return self.inner.run(tree, request)
        outcome = self.inner.run(tree, replace(request, timeout=limit))
        if not outcome.timed_out:
            return outcome
        with self._lock:
            self.retries += 1
        return self.inner.run(tree, replace(request, sample_id=f"{request.sample_id}-retry"))
