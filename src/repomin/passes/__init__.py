"""Reduction passes: small named objects that propose smaller trees to a :class:`Problem`.

A pass never starts threads, samples or touches the disk, and never sees how many candidates
run at once; it proposes candidates through ``problem.try_first`` (or a deletion search of
``repomin.search.deletion`` that does) and reads ``problem.current`` -- every member it may
use is declared in ``repomin.search.problem``. The driver (``repomin.search.reducer``) owns the
fixpoint, the order and the concurrency. Register a pass in :data:`REGISTRY` to make it
schedulable.
"""

from __future__ import annotations

from repomin.passes.alone import AloneCut
from repomin.passes.blocks import DeleteBlocks
from repomin.passes.brackets import DeleteBrackets
from repomin.passes.carve import CarveCall
from repomin.passes.coverage import CoverageCut
from repomin.passes.files import DeleteFiles
from repomin.passes.lines import DeleteLines
from repomin.passes.normalise import Normalise
from repomin.passes.ordered import TraceOrder
from repomin.passes.pairs import TwoPartEdits
from repomin.passes.pyexpr import PythonExpressions
from repomin.passes.python_ast import PythonReduce
from repomin.passes.refs import RefsCut
from repomin.passes.restart import Restart
from repomin.passes.semantic import SemanticReduce
from repomin.passes.shortcut import LoadShortcut
from repomin.passes.stack import StackCut
from repomin.passes.tokens import DeleteTokens
from repomin.passes.trace import TraceCut
from repomin.search.problem import Pass, Problem

REGISTRY: dict[str, type[Pass]] = {
    TraceCut.name: TraceCut,
    RefsCut.name: RefsCut,
    CarveCall.name: CarveCall,
    LoadShortcut.name: LoadShortcut,
    StackCut.name: StackCut,
    AloneCut.name: AloneCut,
    CoverageCut.name: CoverageCut,
    TraceOrder.name: TraceOrder,
    DeleteFiles.name: DeleteFiles,
    Normalise.name: Normalise,
    PythonReduce.name: PythonReduce,
    DeleteBlocks.name: DeleteBlocks,
    DeleteBrackets.name: DeleteBrackets,
    DeleteLines.name: DeleteLines,
    PythonExpressions.name: PythonExpressions,
    TwoPartEdits.name: TwoPartEdits,
    Restart.name: Restart,
    DeleteTokens.name: DeleteTokens,
    SemanticReduce.name: SemanticReduce,
}

#: The default schedule: the trace cut and the reference cut, the entry point making the
#: failing call directly (``carve``, once; before ``shortcut``, whose shorter entry would
#: make a carved entry that needs fewer files look no smaller), the entry point loading the
#: module whose top-level code failed (``shortcut``, once), the Python files on the failing
#: stack and what they import (``stack``, once: after ``shortcut``, whose entry may need
#: fewer files), the other tests of the failing test's file deleted (``alone``, once: after
#: ``stack``, on the tree it leaves), emptying the JavaScript and Python bodies
#: the traced run never executed (``coverage``: before ``normalise``, which would make the
#: coverage of every file it edits stale), comment stripping over every file at once, then
#: ``ordered`` (the content passes file by file in the traced run's first-open order, each
#: changed file followed by the cuts: entry points shrink first, so whole loaded
#: subtrees fall out), then cheap, high-yield passes first; structure before lines (a valid
#: structural deletion replaces many line candidates). The stand-alone content passes skip the
#: files ``ordered`` finished in the same round. ``semantic`` is added after ``files`` only with
#: ``--semantic-endpoint``. ``pairs`` and ``restart`` are opt-in (``--passes``).
DEFAULT_SCHEDULE: tuple[str, ...] = (
    "trace",
    "refs",
    "carve",
    "shortcut",
    "stack",
    "alone",
    "coverage",
    "normalise",
    "ordered",
    "files",
    "python",
    "blocks",
    "brackets",
    "lines",
    "pyexpr",
    "tokens",
)

#: Expensive passes the driver runs only in a round where every other pass made no progress
#: (in schedule order; the first that makes progress gives the others another round).
STALL_ONLY: frozenset[str] = frozenset({"pyexpr", "pairs", "tokens", "restart"})

__all__ = ["DEFAULT_SCHEDULE", "REGISTRY", "STALL_ONLY", "Pass", "Problem"]
