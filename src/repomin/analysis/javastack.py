"""Java methods on the failing stack end at the statement that threw: the rest never ran.

The failing output's uncaught Java trace names, for every frame, the method and the line that
was executing when the exception left it (``at org.x.Util.format(Util.java:130)``). Whatever
that method's body holds after the statement on that line never ran in the failing run: the
exception propagated out of the method from there. :func:`stack_cut` finds, for every frame
whose file is in the tree and unchanged since the failing run, the method by name and line
(:func:`repomin.analysis.javacoverage.java_methods`) and, when the line's statement is at the
top level of the body (not inside a nested block: a ``try`` could catch, a loop could come
back), the rest of the body after the statement's ``;``; the edit replaces that rest with
``throw null;`` (the body still cannot complete normally, so a method that returns a value
compiles), or with nothing after a ``return`` or ``throw`` and in a ``void`` method. The
calls, types and helpers only the rest named then fall to the member and file cuts of the
reference graph.

Lambdas, constructors, initializers and anonymous classes are left alone (their frames name
no method of the class body). Nothing here is evidence: the cut is one candidate the oracle
decides. The output is hostile input: frames are matched by a bounded regular expression and
used only to look up files and lines of the tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from repomin.analysis.javacoverage import java_methods
from repomin.analysis.javalex import java_tokens
from repomin.failure.java_exc import normalise_method
from repomin.failure.normalise import strip_ansi

#: What a cut body's rest becomes.
FILL = b" throw null;"
#: Frames read per output at most.
MAX_FRAMES = 256

_FRAME = re.compile(
    r"^\s*(?:\[\w+\]\s*)?at\s+(?P<method>[\w$./@-]{1,512})"
    r"\((?P<file>[\w$]{1,256}\.java):(?P<line>\d{1,9})\)\s*$"
)


def failing_frames(outputs: Iterable[str]) -> list[tuple[str, str, int]]:
    """(path suffix ``org/x/Util.java``, method name, line) of every ``at`` frame that names a
    ``.java`` file and line, in order, at most :data:`MAX_FRAMES`."""
    out: list[tuple[str, str, int]] = []
    seen: set[tuple[str, str, int]] = set()
    for text in outputs:
        for line in strip_ansi(text).splitlines():
            match = _FRAME.match(line)
            if match is None:
                continue
            qualified = normalise_method(match["method"])
            owner, _, method = qualified.rpartition(".")
            package = owner.rpartition(".")[0]
            suffix = (package.replace(".", "/") + "/" if package else "") + match["file"]
            frame = (suffix, method, int(match["line"]))
            if frame not in seen:
                seen.add(frame)
                out.append(frame)
            if len(out) >= MAX_FRAMES:
                return out
    return out


def stack_cut(
    frames: Sequence[tuple[str, str, int]], files: Mapping[str, bytes]
) -> dict[str, bytes]:
    """The edited contents of the files (by tree path) whose frames' methods have a rest after
    the frame's statement; ``files`` holds the tree's ``.java`` files as the failing run saw them.
    """
    edits: dict[str, list[tuple[int, int, bytes]]] = {}
    for suffix, method, line in frames:
        path = _path_of(suffix, files)
        if path is None:
            continue
        edit = _rest_after(files[path], method, line)
        if edit is not None and edit not in edits.setdefault(path, []):
            edits[path].append(edit)
    out: dict[str, bytes] = {}
    for path, spans in edits.items():
        data = files[path]
        kept: list[tuple[int, int, bytes]] = []
        for span in sorted(spans):
            if kept and span[0] < kept[-1][1]:
                continue  # nested in another method's cut rest (a local class): the outer wins
            kept.append(span)
        for start, end, fill in reversed(kept):
            data = data[:start] + fill + data[end:]
        out[path] = data
    return out


def _path_of(suffix: str, files: Mapping[str, bytes]) -> str | None:
    found = [p for p in files if p == suffix or p.endswith("/" + suffix)]
    return found[0] if len(found) == 1 else None


def _rest_after(data: bytes, method: str, line: int) -> tuple[int, int, bytes] | None:
    """``(start, end, fill)``: the rest of ``method``'s body after the top-level statement on
    ``line``, or None."""
    if line < 1:
        return None
    at = 0
    for _ in range(line - 1):
        at = data.find(b"\n", at) + 1
        if at == 0:
            return None
    line_end = data.find(b"\n", at)
    line_end = len(data) if line_end < 0 else line_end
    methods = java_methods(data)
    if not methods:
        return None
    holding = [m for m in methods if m.start <= at and line_end <= m.end]
    if not holding:
        return None
    body = max(holding, key=lambda m: m.start)  # the innermost
    if body.name != method:
        return None
    tokens = java_tokens(data[body.start : body.end])
    if tokens is None:
        return None
    braces = parens = 0
    first = True  # at the start of a statement
    statement = b""
    on_line = False
    for offset, text in tokens:
        position = body.start + offset
        if not on_line and position >= at:
            if position >= line_end or braces != 0:
                return None  # nothing on the line at the top level
            on_line = True
        if first and braces == 0 and parens == 0:
            statement, first = text, False
        if text == b"(":
            parens += 1
        elif text == b")":
            parens -= 1
        elif text == b"{":
            braces += 1
        elif text == b"}":
            braces -= 1
            if braces == 0 and parens == 0 and on_line:
                return None  # a block statement (if, try, a loop) holds the line
            if braces == 0 and parens == 0:
                first = True
        elif text == b";" and braces == 0 and parens == 0:
            if on_line:
                rest = data[position + 1 : body.end]
                if not rest.strip():
                    return None
                fill = b"" if statement in (b"return", b"throw") or body.void else FILL
                newline = rest.rfind(b"\n")
                tail = rest[newline:] if newline >= 0 and not rest[newline:].strip() else b""
                return position + 1, body.end, fill + tail
            first = True
    return None


__all__ = ["FILL", "failing_frames", "stack_cut"]
