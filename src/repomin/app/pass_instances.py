"""The pass instances of one reduction, wired to their inputs.

The trace cut gets the first traced run, the references cut the command, the shortcut the
command and the baseline's failing output, the stack cut and ``alone`` that output, the carve
pass those and the capture run, the semantic pass its client and failure context, and every
pass the shared search hints (trace and reference-distance priors of the learning deletion
search, the re-trace callback); the line search whether the statement search runs beside it;
then the content passes learn what the ordered pass settled and the restart pass what it
restarts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from repomin.analysis.refs import distances as refs_distances
from repomin.analysis.semantic import SemanticClient, describe_spec, failure_context
from repomin.analysis.trace import TraceResult
from repomin.app.options import ReduceOptions
from repomin.passes import REGISTRY, Pass
from repomin.passes.alone import AloneCut
from repomin.passes.carve import Capture, CarveCall
from repomin.passes.hints import SearchHints, attach
from repomin.passes.lines import DeleteLines
from repomin.passes.ordered import wrap_unsettled
from repomin.passes.refs import RefsCut
from repomin.passes.restart import bind_restart
from repomin.passes.semantic import SemanticReduce
from repomin.passes.shortcut import LoadShortcut
from repomin.passes.stack import StackCut
from repomin.passes.trace import TraceCut
from repomin.tree import Tree


def pass_instances(
    options: ReduceOptions,
    trace: TraceResult,
    retrace: Callable[[Tree], TraceResult] | None = None,
    failures: Sequence[tuple[str, str]] = (),
    capture: Capture | None = None,
) -> dict[str, Pass]:
    """One instance per scheduled pass (see the module docstring)."""
    instances: dict[str, Pass] = {name: REGISTRY[name]() for name in options.schedule}
    hints = SearchHints(
        retrace=retrace if trace.usable else None,
        distances=lambda tree: refs_distances(tree, command=options.command),
    )
    hints.update_trace(trace)
    if "trace" in instances:
        instances["trace"] = TraceCut(trace)
    if "refs" in instances:
        instances["refs"] = RefsCut(options.command, failures=failures)
    shortcut = LoadShortcut(options.command, failures) if "shortcut" in instances else None
    if shortcut is not None:
        instances["shortcut"] = shortcut
    stack = StackCut(failures) if "stack" in instances else None
    if stack is not None:
        instances["stack"] = stack
    alone = AloneCut(failures) if "alone" in instances else None
    if alone is not None:
        instances["alone"] = alone
    carve = CarveCall(options.command, failures, capture) if "carve" in instances else None
    if carve is not None:
        instances["carve"] = carve
    if "semantic" in instances and options.semantic is not None:
        context = failure_context(options.command, describe_spec(options.spec))
        instances["semantic"] = SemanticReduce(SemanticClient(options.semantic), context)
    attach(instances, hints)
    lines = instances.get("lines")
    if isinstance(lines, DeleteLines):
        lines.bind(instances)
    wrap_unsettled(instances)
    bind_restart(instances)
    for one in (shortcut, stack, alone, carve):
        if one is not None:
            one.bind(instances)
    return instances
