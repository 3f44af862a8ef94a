"""Reduction passes: small named objects that propose smaller trees to a :class:`Problem`.

A pass never starts threads, samples or touches the disk; it proposes candidates through
``problem.try_first`` and reads ``problem.current``. The driver (``repomin.reducer``) owns the
fixpoint and the order. Register a pass in :data:`REGISTRY` to make it schedulable.
"""

from __future__ import annotations

from repomin.passes.base import Pass, Problem
from repomin.passes.files import DeleteFiles
from repomin.passes.lines import DeleteLines

REGISTRY: dict[str, type[Pass]] = {
    DeleteFiles.name: DeleteFiles,
    DeleteLines.name: DeleteLines,
}

#: The default schedule: cheap, high-yield passes first.
DEFAULT_SCHEDULE: tuple[str, ...] = ("files", "lines")

__all__ = ["DEFAULT_SCHEDULE", "REGISTRY", "Pass", "Problem"]
