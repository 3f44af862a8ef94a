"""The failing call: which in-tree function was running when the failure was raised, and with
which arguments.

A failure raised at *run time* deep inside a dependency (webpack's compiler calling
``createHash(options.hashFunction)`` on a Node whose OpenSSL lacks MD4) is reached through
code that deletions cannot shortcut: a CLI, a configuration, a compiler's plugin hooks. The
same failure is often one call away: ``require("webpack/lib/util/createHash.js")("md4")``.
This module finds that call in two steps:

1. **The frame** (:func:`innermost_frame`): the first frame of the failing output's Node stack
   (``at fn (/abs/path.js:LINE:COL)``, ``at /abs/path.js:LINE:COL``) that names a file of the
   tree (mapped as :func:`repomin.analysis.loadframes.in_tree` does). A module's top-level
   frame (``Object.<anonymous>``) is the load shortcut's case, not a call: None.
2. **The capture** (:func:`capture_calls`): the command runs once more (an event, never an
   oracle sample) with a Node preload (``failingcall.js``, through ``NODE_OPTIONS``). It
   opens an in-process inspector session, pauses on every thrown exception whose top frame
   is in a file of the failing stack, in Node's internals or in code not loaded from a file
   (every other file is blackboxed, so the many exceptions a program throws and catches
   elsewhere cost nothing), and at the throw whose innermost in-tree frame is that frame, or
   whose error's own stack names it (an error is printed where it was made, which is not
   where it is thrown when a helper makes it), it records, for that frame and up to seven
   in-tree callers: the file, the function's parameter names (read from its source), their
   values when they are JavaScript primitives or plain data (arrays and plain objects of
   primitives, as JSON; read without side effects: ``throwOnSideEffect``), and whether the
   function is the module's ``module.exports`` or an own property of it (compared by the
   function's source location, so no getter runs). Then it resumes: the run goes on as
   without the preload.

Only what a plain ``require`` can reach is recorded as callable (an export); values are
those at the moment of the throw (a parameter reassigned before it differs from the value
passed in). The capture needs the host backend on this machine: the preload and its record
live in a private directory outside the sample, as the trace log does. A run that cannot be
captured (no Node, the command sets ``NODE_OPTIONS`` to something that fails, the throw never
comes) gives no calls; nothing here raises.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.analysis.loadframes import in_tree
from repomin.runners.base import TRACE_SAMPLE_ID, Runner, RunRequest
from repomin.runners.scratch import make_sink, read_regular
from repomin.tree import Tree

log = logging.getLogger(__name__)

#: Most bytes of the capture's record that are read.
CALLS_LIMIT = 16 * 1024 * 1024
#: The preload, shipped beside this module.
PRELOAD = Path(__file__).with_name("failingcall.js")
#: The capture run may take this many times the configured timeout (the inspector slows it).
TIMEOUT_FACTOR = 3.0

_FRAME = re.compile(
    r"^\s*at (?:(?P<name>[^\n()]+?) \((?P<path>/[^()\n]+?):(?P<line>\d+):(?P<col>\d+)\)"
    r"|(?P<bare>/[^()\n\s]+?):(?P<bline>\d+):(?P<bcol>\d+))\s*$",
    re.M,
)


@dataclass(frozen=True, slots=True)
class Frame:
    """A stack frame in the tree: its file (tree path), 1-based line and column; ``stack``:
    the tree files of the whole failing stack (where the error may be thrown from)."""

    path: str
    line: int
    column: int
    stack: tuple[str, ...] = ()


class Undefined:
    """A captured ``undefined`` argument (JSON has none)."""

    def __repr__(self) -> str:
        return "undefined"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class Unwritten(Undefined):
    """An argument the capture could not write (an object with methods, a class instance, a
    function): the call is proposed with ``undefined`` in its place, after the calls whose
    every argument was written (a parameter that is optional often still fails the same way)."""

    def __repr__(self) -> str:
        return "unwritten"


#: A captured argument: a JavaScript primitive, or plain data (arrays and plain objects of
#: primitives, as JSON).
Value = str | int | float | bool | None | Undefined | list[Any] | dict[str, Any]


@dataclass(frozen=True, slots=True)
class Call:
    """A recorded call that a ``require`` reaches: ``export`` is ``module.exports`` or
    ``exports.NAME`` / ``exports["NAME"]``; ``values`` the parameters' values, in order."""

    path: str
    export: str
    values: tuple[Value, ...]

    @property
    def complete(self) -> bool:
        """Was every argument written as it was passed?"""
        return not any(isinstance(v, Unwritten) for v in self.values)


def innermost_frame(output: str, workdir: str, tree: Tree) -> Frame | None:
    """The first frame of ``output``'s Node stack that is in ``tree``; None when there is
    none or it is a module's top-level code."""
    found: list[tuple[str, int, int, str | None]] = []
    for m in _FRAME.finditer(output):
        rel = in_tree(m.group("path") or m.group("bare"), workdir, tree)
        if rel is not None:
            line = m.group("line") or m.group("bline")
            col = m.group("col") or m.group("bcol")
            found.append((rel, int(line), int(col), m.group("name")))
    if not found or found[0][3] == "Object.<anonymous>":
        return None
    stack = tuple(dict.fromkeys(f[0] for f in found))
    return Frame(found[0][0], found[0][1], found[0][2], stack)


def capture_script(command: str, sink: str, frame: Frame) -> str:
    """The POSIX shell script that runs ``command`` with the preload (``sink``: the private
    host directory holding the preload and receiving the record)."""
    quoted = shlex.quote(command)
    d = shlex.quote(sink)
    target = shlex.quote(f"/{frame.path}:{frame.line}:{frame.column}")
    files = "".join(f'"$__rm_r"{shlex.quote("/" + f)}"$__rm_n"' for f in frame.stack)
    return f"""
__rm_r=$(pwd -P)
__rm_n='
'
export REPOMIN_CARVE_ROOT="$__rm_r"
export REPOMIN_CARVE_TARGET="$__rm_r"{target}
export REPOMIN_CARVE_FILES={files or "''"}
export REPOMIN_CARVE_OUT={d}/calls.json
export NODE_OPTIONS="--require {d}/failingcall.js${{NODE_OPTIONS:+ $NODE_OPTIONS}}"
/bin/sh -c {quoted}
"""


def capture_calls(
    runner: Runner,
    tree: Tree,
    command: str,
    env: Mapping[str, str],
    timeout: float,
    frame: Frame,
) -> list[Call]:
    """Run ``command`` once on ``tree`` with the preload; the calls it recorded, innermost
    first (none when it cannot be captured; see the module docstring)."""
    if runner.backend != "host" or runner.describe().get("dispatch_engine") is not None:
        return []
    sink = str(make_sink("repomin-carve-"))
    try:
        shutil.copy2(PRELOAD, Path(sink) / PRELOAD.name)
        request = RunRequest(
            capture_script(command, sink, frame), env, timeout * TIMEOUT_FACTOR, TRACE_SAMPLE_ID
        )
        try:
            outcome = runner.run(tree, request)
        except Exception as exc:  # a capture problem is never fatal
            log.warning("carve: the capture run failed: %s", exc)
            return []
        try:
            # The sample wrote it: no links, no FIFOs, bounded.
            raw = read_regular(Path(sink) / "calls.json", CALLS_LIMIT)
            record = json.loads((raw or b"").decode("utf-8"))
        except (OSError, ValueError):
            return []
        return calls_of(record, outcome.workdir, tree)
    finally:
        shutil.rmtree(sink, ignore_errors=True)


def calls_of(record: Any, workdir: str, tree: Tree) -> list[Call]:
    """The callable frames of a preload record, innermost first (see :class:`Call`)."""
    out: list[Call] = []
    frames = record.get("frames") if isinstance(record, dict) else None
    for frame in frames if isinstance(frames, list) else []:
        if not isinstance(frame, dict) or "unsupported" in frame:
            continue
        export, path = frame.get("export"), frame.get("path")
        values = _values(frame.get("values"))
        if not isinstance(export, str) or not isinstance(path, str) or values is None:
            continue
        rel = in_tree(path, record.get("root", workdir) or workdir, tree)
        if rel is not None:
            out.append(Call(rel, export, values))
    return out


def _values(raw: Any) -> tuple[Value, ...] | None:
    if not isinstance(raw, list):
        return None
    out: list[Value] = []
    for v in raw:
        if isinstance(v, dict):
            if v == {"undefined": True}:
                out.append(Undefined())
                continue
            text = v.get("json")
            try:
                out.append(json.loads(text) if isinstance(text, str) else Unwritten())
            except ValueError:
                out.append(Unwritten())
        elif v is None or isinstance(v, str | int | float | bool):
            out.append(v)
        else:
            return None
    return tuple(out)


def js_call(entry: str, call: Call) -> bytes | None:
    """One statement in ``entry`` that requires ``call``'s module and calls it with the
    recorded values (unwritten ones as ``undefined``, trailing ``undefined`` dropped); None
    when the export is not a name."""
    rel = os.path.relpath(call.path, os.path.dirname(entry) or ".")
    rel = rel if rel.startswith(".") else "./" + rel
    target = f"require({json.dumps(rel)})"
    if call.export != "module.exports":
        name = call.export.removeprefix("exports")
        if not (name.startswith(".") or name.startswith("[")):
            return None
        target += name
    values = list(call.values)
    while values and isinstance(values[-1], Undefined):
        values.pop()
    args = ", ".join("undefined" if isinstance(v, Undefined) else json.dumps(v) for v in values)
    return f"{target}({args});\n".encode()


__all__ = [
    "PRELOAD",
    "Call",
    "Frame",
    "Undefined",
    "Unwritten",
    "Value",
    "calls_of",
    "capture_calls",
    "capture_script",
    "innermost_frame",
    "js_call",
]
