"""The cuts that follow an edit which may have left files unloaded: the re-traced run's cut and
the reference cut (``trace``, ``refs``, when scheduled).

Such edits come from ``ordered`` after every file whose content changed, and from the passes
that propose once per reduction from the baseline's failing output (``carve``, ``shortcut``,
``stack``, ``alone``: :class:`FromFailures`) after their accepted candidate. The re-traced run
goes where the search layer puts it (``problem.later``, owned by the pass that asked: with batch
slots in the background, its cut proposed when the search settles that pass's work; with one
slot at once); a trace cut that has not made its first cut yet, and the reference cut, simply
run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from repomin.passes.trace import TraceCut
from repomin.search.problem import Pass, Problem

T = TypeVar("T")

#: The cuts, in the order they run.
CUTS: tuple[str, ...] = ("trace", "refs")


def scheduled_cuts(instances: Mapping[str, Pass]) -> list[Pass]:
    """The cut instances among a reduction's passes, in :data:`CUTS` order."""
    return [instances[n] for n in CUTS if n in instances]


def follow(problem: Problem, cuts: list[Pass], owner: str) -> None:
    """Run ``cuts`` after an edit of ``owner``'s (see the module docstring)."""
    for cut in cuts:
        if isinstance(cut, TraceCut) and cut.done:
            cut.retrace(problem, owner)
        else:
            cut.run(problem)


class FromFailures:
    """What the once-per-reduction passes share: the failing output they read, the cuts they
    hand an accepted candidate to, and that they propose only on their first run."""

    def __init__(self, failures: Sequence[tuple[str, str]] = ()) -> None:
        #: (output, working directory) of failing runs: the first reproducing baseline run.
        self.failures = tuple(failures)
        self.cuts: list[Pass] = []
        self.done = False

    def bind(self, instances: Mapping[str, Pass]) -> None:
        """Take the scheduled cuts from the pass instances."""
        self.cuts = scheduled_cuts(instances)

    def first_run(self) -> bool:
        """True once: on the run that may propose."""
        if self.done:
            return False
        self.done = True
        return True

    def gather(self, read: Callable[[str, str], Sequence[T]]) -> list[T]:
        """What ``read(output, workdir)`` finds in every failing output, each once, in order."""
        found: list[T] = []
        for output, workdir in self.failures:
            found += [item for item in read(output, workdir) if item not in found]
        return found
