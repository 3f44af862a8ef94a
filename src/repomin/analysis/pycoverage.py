"""Which Python functions and lines the traced run ran: the Python analogue of Node's V8 coverage.

The traced run (``repomin.analysis.trace``) writes, when its log goes to a host directory (the
host backend), a ``sitecustomize.py`` into ``<log directory>/pycov`` and puts that directory in
front of ``PYTHONPATH``. Every Python process of the command that reads ``PYTHONPATH`` (not
``-E``/``-I``/``-S``, and not when the command sets ``PYTHONPATH`` itself) then imports it at
start-up. It:

* records each code object the process starts, and each line it runs of code outside the
  interpreter's prefixes (the standard library and installed packages are not the tree), once:
  with ``sys.monitoring`` (Python 3.12 and later) ``PY_START`` and ``LINE`` callbacks that
  disable themselves for that code or line at once, so the cost is one call per function and
  per line; before 3.12 a global ``sys.settrace`` function (one call per Python call) with a
  local one for the lines, up to :data:`LINE_BUDGET` line events, after which the process
  records no lines at all;
* takes its own directory off ``sys.path`` again and imports the ``sitecustomize`` it shadowed
  (Debian ships one), so the program sees the path and the start-up it would have seen;
* writes, when the process exits normally (``atexit``; not ``os._exit``, not a signal), one JSON
  record: its initial working directory and, per ``co_filename``, the first lines of the code
  objects that started (``0`` for a module's own code) and the lines that ran (``null`` when it
  ran out of budget).

:func:`read_pycoverage` maps the records to the tree's ``.py`` files. A file counts as
*covered* only when some process ran its module code (then that process saw every call into
it). For a covered file, every ``def`` whose code never started -- its first line is the first
decorator's, as in ``co_firstlineno`` -- is a never-run function, and its body is a unit the
``coverage`` pass replaces with ``...`` (``passes.coverage``). Inside code that ran, every block
(the body of an ``if``, ``elif``, ``else``, loop, ``with``, ``try``, ``except``, ``finally`` or
``case``) none of whose lines ran in any process is a unit too, replaced the same way; when some
process recorded no lines, only functions count. Nested definitions and blocks are looked at
only inside code that ran. A file that does not parse is left out.

Nothing here is evidence: the records are written by the command and only shape *proposals*,
which the oracle accepts or rejects like any other candidate. Records are read as hostile
input: regular files only, bounded in size and count, every field type-checked.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from repomin.analysis.records import json_records, relative_to_roots
from repomin.analysis.v8coverage import FileCoverage
from repomin.tree import Tree

#: The directory (inside the traced run's private log directory) with the start-up hook and
#: the records it writes.
PYCOV_DIR = "pycov"
#: Records larger than this are skipped; at most :data:`MAX_RECORDS` are read.
MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_RECORDS = 4096
#: The body that replaces a never-run function's.
FILL = b"..."

#: Line events a process records before Python 3.12 (a trace function per line of the tree's code;
#: ``sys.monitoring`` costs one call per line, once). A process that runs out records no lines,
#: and then no file's lines are used (:func:`read_pycoverage`).
LINE_BUDGET = 2_000_000

#: The start-up hook (see the module docstring). Only the standard library; no names left in
#: ``sitecustomize``'s namespace but the chained module's.
HOOK = '''\
"""ReproMin's traced run: record which code objects start (removed with the run's log)."""


def _repomin_pycov():
    import atexit
    import json
    import os
    import sys
    import threading

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = ""
    seen = set()
    lines = set()
    budget = [LINE_BUDGET]
    skip = ("<",) + tuple(
        os.path.join(os.path.abspath(p), "")
        for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    )
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in (5, 4, 3):
            try:
                monitoring.use_tool_id(tool, "repomin")
            except ValueError:
                continue

            def start(code, offset):
                seen.add(code)
                return monitoring.DISABLE

            def line(code, number):
                if not code.co_filename.startswith(skip):
                    lines.add((code.co_filename, number))
                return monitoring.DISABLE

            events = monitoring.events
            monitoring.register_callback(tool, events.PY_START, start)
            monitoring.register_callback(tool, events.LINE, line)
            monitoring.set_events(tool, events.PY_START | events.LINE)
            break
    else:

        def local(frame, event, arg):
            if event == "line":
                lines.add((frame.f_code.co_filename, frame.f_lineno))
                budget[0] -= 1
                if budget[0] <= 0:
                    frame.f_trace_lines = False
                    return None
            return local

        def hook(frame, event, arg):
            code = frame.f_code
            seen.add(code)
            if budget[0] > 0 and not code.co_filename.startswith(skip):
                return local
            return None

        sys.settrace(hook)
        threading.settrace(hook)

    def write():
        files = {}
        for code in list(seen):
            first = 0 if code.co_name == "<module>" else code.co_firstlineno
            files.setdefault(code.co_filename, set()).add(first)
        ran = None
        if budget[0] > 0:
            ran = {}
            for filename, number in list(lines):
                ran.setdefault(filename, set()).add(number)
            ran = {k: sorted(v) for k, v in ran.items()}
        record = {"cwd": cwd, "files": {k: sorted(v) for k, v in files.items()}, "lines": ran}
        name = os.path.join(here, "%d-%s" % (os.getpid(), os.urandom(4).hex()))
        try:
            with open(name + ".tmp", "w") as out:
                json.dump(record, out)
            os.replace(name + ".tmp", name + ".json")
        except OSError:
            pass

    atexit.register(write)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    own = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  (the one this file shadowed, if any)
    except ImportError as exc:
        if exc.name != "sitecustomize":
            raise
    finally:
        if own is not None:
            sys.modules.setdefault("sitecustomize", own)


_repomin_pycov()
del _repomin_pycov
'''.replace("LINE_BUDGET", str(LINE_BUDGET))


def install(directory: Path) -> None:
    """Write the start-up hook into ``directory`` (created; the caller's private log dir)."""
    directory.mkdir(mode=0o700, exist_ok=True)
    (directory / "sitecustomize.py").write_text(HOOK, "utf-8")


def read_pycoverage(
    directory: Path, roots: Sequence[str], tree: Tree
) -> dict[str, FileCoverage] | None:
    """The never-run function bodies and blocks of ``tree``'s covered ``.py`` files (None: no
    record)."""
    found = _started(directory, roots, tree)
    if found is None:
        return None
    started, ran = found
    out: dict[str, FileCoverage] = {}
    for path, lines in sorted(started.items()):
        if 0 not in lines:
            continue  # its module code never ran here: nothing is known about its calls
        data = tree[path].data
        bodies = never_run_bodies(data, lines, None if ran is None else ran.get(path, set()))
        if bodies is not None:
            out[path] = FileCoverage(data, tuple((s, e, True) for s, e in bodies))
    return out


def _started(
    directory: Path, roots: Sequence[str], tree: Tree
) -> tuple[dict[str, set[int]], dict[str, set[int]] | None] | None:
    """Per tree path, the first lines of the code objects that started in any process, and the
    lines that ran in any process (None when some process recorded no lines)."""
    records = json_records(directory, MAX_RECORD_BYTES, MAX_RECORDS)
    if records is None:
        return None
    started: dict[str, set[int]] = {}
    ran: dict[str, set[int]] | None = {}
    for record in records:
        for path, lines in _record_files(record, "files", roots, tree):
            started.setdefault(path, set()).update(lines)
        if not isinstance(record, dict) or not isinstance(record.get("lines"), dict):
            ran = None
        if ran is not None:
            for path, lines in _record_files(record, "lines", roots, tree):
                ran.setdefault(path, set()).update(lines)
    return started, ran


def _record_files(
    record: object, field: str, roots: Sequence[str], tree: Tree
) -> Iterable[tuple[str, set[int]]]:
    if not isinstance(record, dict) or not isinstance(record.get(field), dict):
        return
    cwd = record.get("cwd")
    base = cwd if isinstance(cwd, str) and cwd.startswith("/") else None
    for filename, lines in record[field].items():
        if not isinstance(filename, str) or not isinstance(lines, list):
            continue
        path = _tree_path(filename, base, roots)
        entry = tree.entries.get(path) if path is not None else None
        if path is None or entry is None or entry.kind != "file" or not path.endswith(".py"):
            continue
        yield path, {n for n in lines if isinstance(n, int) and not isinstance(n, bool)}


def _tree_path(filename: str, cwd: str | None, roots: Sequence[str]) -> str | None:
    if not filename.startswith("/"):
        if cwd is None or filename.startswith("<"):
            return None
        filename = os.path.join(cwd, filename)
    return relative_to_roots(filename, roots) or None


def never_run_bodies(
    data: bytes, started: set[int], ran: set[int] | None = None
) -> list[tuple[int, int]] | None:
    """The byte spans ``[start, end)`` of the bodies of the functions of ``data`` whose code
    never started and, given the lines that ran (``ran``), of the blocks in code that ran none
    of whose lines ran (outermost only, sorted); None when ``data`` is not Python that parses."""
    try:
        module = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    starts = _line_starts(data)
    spans: list[tuple[int, int]] = []

    def visit(block: Sequence[ast.stmt]) -> None:
        for stmt in block:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                if _first_line(stmt) in started:
                    visit(stmt.body)
                    continue
                span = _body_span(stmt, starts)
                if span is not None and data[span[0] : span[1]].strip() != FILL:
                    spans.append(span)
                continue
            if isinstance(stmt, ast.ClassDef):
                visit(stmt.body)  # its statement ran, so did its body
                continue
            for inner in _blocks(stmt, data, starts):
                span = None if ran is None else _block_span(inner, data, starts)
                if span is None or ran is None or _any_ran(inner, ran):
                    visit(inner)
                elif data[span[0] : span[1]].strip() not in (FILL, b"pass"):
                    spans.append(span)

    visit(module.body)
    return sorted(spans)


def _blocks(stmt: ast.stmt, data: bytes, starts: Sequence[int]) -> list[list[ast.stmt]]:
    """The statement lists of a compound statement: bodies, ``else``/``finally`` blocks,
    handlers' and cases' bodies. An ``elif`` is not a block of its own: its ``if`` is."""
    out: list[list[ast.stmt]] = []
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            if field == "orelse" and len(block) == 1 and isinstance(block[0], ast.If):
                at = starts[block[0].lineno - 1] + block[0].col_offset
                if data.startswith(b"elif", at):
                    out += _blocks(block[0], data, starts)
                    continue
            out.append(block)
    for field in ("handlers", "cases"):
        for part in getattr(stmt, field, None) or []:
            body = getattr(part, "body", None)
            if isinstance(body, list) and body:
                out.append(body)
    return out


def _first_line(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _any_ran(block: Sequence[ast.stmt], ran: set[int]) -> bool:
    last = block[-1].end_lineno or block[-1].lineno
    return any(n in ran for n in range(_first_line(block[0]), last + 1))


def _block_span(
    block: Sequence[ast.stmt], data: bytes, starts: Sequence[int]
) -> tuple[int, int] | None:
    """Bytes of a statement list, from its first statement (decorators included) to the end of
    its last."""
    first, last = block[0], block[-1]
    if last.end_lineno is None or last.end_col_offset is None:
        return None
    line = _first_line(first)
    if line == first.lineno:
        start = starts[line - 1] + first.col_offset
    else:  # a decorated definition: from its first line's first non-blank byte (the ``@``)
        start = starts[line - 1]
        while data[start : start + 1] in (b" ", b"\t"):
            start += 1
    end = starts[last.end_lineno - 1] + last.end_col_offset
    return (start, end) if start < end else None


@dataclass(frozen=True)
class Definition:
    """A never-run function's whole definition: its name, the byte span of its lines (first
    decorator to the end of the body's last line) and their indentation, the statement list
    holding it (``block``: an id unique in the file) and that list's length; ``method``: it is
    defined directly in a class body; ``toplevel``: in the module's own body (a name another
    module can import)."""

    name: str
    start: int
    end: int
    indent: bytes
    block: int
    size: int
    method: bool
    toplevel: bool


def never_run_definitions(
    data: bytes, bodies: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], Definition]:
    """For each body span of :func:`never_run_bodies` over ``data``, its function's whole
    definition (only those that stand on lines of their own); empty when ``data`` does not
    parse."""
    try:
        module = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    starts = _line_starts(data)
    wanted = set(bodies)
    out: dict[tuple[int, int], Definition] = {}
    blocks = 0
    for node in ast.walk(module):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            for k, stmt in enumerate(block):
                if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                span = _body_span(stmt, starts)
                if span is None or span not in wanted or stmt.end_lineno is None:
                    continue
                first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
                begin = starts[first - 1]
                end = starts[stmt.end_lineno] if stmt.end_lineno < len(starts) else len(data)
                prev_end = block[k - 1].end_lineno if k else None
                following = block[k + 1].lineno if k + 1 < len(block) else None
                indent = data[begin : begin + stmt.col_offset]
                alone = (
                    not indent.strip()
                    and (prev_end is None or prev_end < first)
                    and (following is None or following > stmt.end_lineno)
                )
                if alone:
                    out[span] = Definition(
                        stmt.name,
                        begin,
                        end,
                        indent,
                        blocks,
                        len(block),
                        isinstance(node, ast.ClassDef) and field == "body",
                        node is module,
                    )
            blocks += 1
    return out


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    at = data.find(b"\n")
    while at >= 0:
        starts.append(at + 1)
        at = data.find(b"\n", at + 1)
    return starts


def _body_span(
    node: ast.FunctionDef | ast.AsyncFunctionDef, starts: Sequence[int]
) -> tuple[int, int] | None:
    """Bytes of ``node``'s body, from its first statement to the end of its last."""
    first, last = node.body[0], node.body[-1]
    if last.end_lineno is None or last.end_col_offset is None:
        return None
    start = starts[first.lineno - 1] + first.col_offset
    end = starts[last.end_lineno - 1] + last.end_col_offset
    return (start, end) if start < end else None


__all__ = [
    "FILL",
    "HOOK",
    "PYCOV_DIR",
    "Definition",
    "install",
    "never_run_bodies",
    "never_run_definitions",
    "read_pycoverage",
]
