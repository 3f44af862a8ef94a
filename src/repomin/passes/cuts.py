"""The cuts that follow an edit which may have left files unloaded: the re-traced run's cut and
the reference cut (``trace``, ``refs``, when scheduled).

Two passes make such edits: ``ordered`` after every file whose content changed, ``shortcut``
after its accepted entry. The re-traced run goes where the search layer puts it
(``problem.later``, owned by the pass that asked: with batch slots in the background, its cut
proposed when the search settles that pass's work; with one slot at once); a trace cut that
has not made its first cut yet, and the reference cut, simply run.
"""

from __future__ import annotations

from collections.abc import Mapping

from repomin.passes.trace import TraceCut
from repomin.search.problem import Pass, Problem

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
