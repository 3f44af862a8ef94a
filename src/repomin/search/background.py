"""Work the passes leave running beside the search (``Problem.later``), one piece per phase.

A pass may hand the search a piece of work whose result it proposes later (the ``lines`` pass's
next file, a re-trace). :class:`Background` starts it in a thread of its own when ``beside()``
says the search has room (batch slots: the next pass's samples keep the slots busy meanwhile),
otherwise does it at once; it is finished when its phase is settled -- by the pass itself, or
by the driver after the next pass that draws samples (``search/reducer.py: run_passes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from repomin.sampling.parallel import in_background

T = TypeVar("T")


class Background:
    """Pieces of work by phase, started beside the search or done at once (module doc)."""

    def __init__(self, beside: Callable[[], bool]) -> None:
        self._beside = beside
        self._waiting: dict[str, tuple[Future[Any], Callable[[Any], None]]] = {}

    def later(self, phase: str, work: Callable[[], T], finish: Callable[[T], None]) -> None:
        self.settle(phase)
        if self._beside():
            self._waiting[phase] = (in_background(work), finish)
        else:
            finish(work())

    def settle(self, phase: str, propose: bool = True) -> None:
        job = self._waiting.pop(phase, None)
        if job is None:
            return
        result = job[0].result()
        if propose:
            job[1](result)

    def waiting(self, phase: str) -> bool:
        """Has ``phase`` work running beside the search, not yet settled?"""
        return phase in self._waiting

    def drop(self) -> None:
        """Wait for every piece of work and discard its result (the search stopped)."""
        for phase in list(self._waiting):
            self.settle(phase, propose=False)


__all__: Sequence[str] = ("Background",)
