"""The ``carve`` pass: the failing call, carved out of its run and made the entry point.

When a Node failure is raised at run time inside a function of the tree, whatever the
program did before that call -- a CLI, a configuration, a compiler's plugin hooks -- only
leads there, and deletions cannot shortcut it: the call is made with values the program
computed. :mod:`repomin.analysis.failingcall` finds the call (the innermost in-tree frame of
the baseline's failing output, then one capture run that records the calls on the stack
at that throw, with their plain-data arguments and whether the module exports them). This
pass proposes, for the JavaScript entry file the command names, one candidate per recorded
call, innermost first (the calls with an argument the capture could not write -- an object
with methods, a class instance -- last, that argument passed as ``undefined``): the entry's
whole content replaced by one statement that requires the module and makes the call
(``require("./node_modules/webpack/lib/util/createHash.js")("md4");``).
The oracle decides as for any candidate; the first accepted one wins and the cuts follow at
once (the re-traced run and the reference cut drop what the new entry no longer loads).

webpack 4.46 on Node 20, with its ``node_modules`` (3,646 files), fails in
``util/createHash.js`` called from the compiler (``createHash(outputOptions.hashFunction)``):
the entry becomes that call with ``"md4"`` and the tree two files.

It runs once per reduction (one capture run, then at most one oracle decision per recorded
call) and only with a Node stack in the failing output and the host backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

from repomin.analysis.failingcall import Call, Frame, innermost_frame, js_call
from repomin.passes.cuts import FromFailures, follow
from repomin.passes.shortcut import entries
from repomin.search.problem import Problem
from repomin.tree import Tree

_JS = (".js", ".cjs")

#: Runs the command once on a tree with the capture preload (the pipeline's runner).
Capture = Callable[[Tree, Frame], Sequence[Call]]


class CarveCall(FromFailures):
    """Proposes the carved calls once (see the module docstring)."""

    name: ClassVar[str] = "carve"

    def __init__(
        self,
        command: str = "",
        failures: Sequence[tuple[str, str]] = (),
        capture: Capture | None = None,
    ) -> None:
        super().__init__(failures)
        self.command = command
        self.capture = capture

    def run(self, problem: Problem) -> None:
        if self.capture is None or not self.first_run():
            return
        tree = problem.current
        targets = [e for e in entries(self.command, tree) if e.endswith(_JS)]
        if not targets:
            return
        frame = next(
            (f for out, wd in self.failures if (f := innermost_frame(out, wd, tree))), None
        )
        if frame is None:
            return
        calls = self.capture(tree, frame)
        problem.note(self.name, f"capture at {frame.path}:{frame.line}: {len(calls)} call(s)")
        if not calls:
            return
        won = problem.try_first(self.name, self._candidates(problem, tree, targets, calls))
        if won is None:
            return
        follow(problem, self.cuts, self.name)

    def _candidates(
        self, problem: Problem, tree: Tree, targets: list[str], calls: Sequence[Call]
    ) -> Iterator[tuple[Tree, str]]:
        for entry in targets:
            if problem.protected(entry):
                continue
            # every argument written first, innermost first; then those with an argument
            # the capture could not write, as ``undefined``
            for call in sorted(calls, key=lambda c: not c.complete):
                text = js_call(entry, call)
                if text is None or call.path == entry or text == tree[entry].data:
                    continue
                yield tree.replace(entry, text), f"call {call.export} of {call.path} from {entry}"


__all__ = ["Capture", "CarveCall"]
