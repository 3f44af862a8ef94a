"""Reading Node.js errors out of command output: the error line and its ``at`` frames.

Owns :class:`NodeError` and :func:`parse_node_errors`. Node prints an uncaught error (and
``console.error(err)`` prints a caught one) as its ``stack``: a line ``TypeError: message``
(``Error [ERR_CODE]: message`` for errors with a code, a custom class's name for subclasses)
followed by frames ``    at fn (/path/file.js:12:3)``, ``    at /path/file.js:12:3`` or
``    at async fn (file:///path/file.mjs:4:1)``. The code frame Node prints above it for an
uncaught error is echoed source (:mod:`repomin.failure.echo`) and is not read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repomin.failure.normalise import strip_ansi

_ERROR_LINE = re.compile(r"^(?:Uncaught )?(?P<cls>[A-Z][\w$]*(?: \[[\w.-]+\])?)(?:: (?P<msg>.*))?$")
_AT = re.compile(
    r"^\s+at (?:async )?(?:(?P<fn>.+?) \((?P<loc1>[^()]+?(?::\d+){1,2}|native|<anonymous>)\)"
    r"|(?P<loc2>[^\s()]+?(?::\d+){1,2}))$"
)
_NAMED = re.compile(r"(?:Error|Exception)(?: \[[\w.-]+\])?$")
#: Lines an error's message may span before its first frame.
_MESSAGE_LINES = 12
_LOCATION = re.compile(r"^(?P<file>.+?)(?::\d+){1,2}$")


@dataclass(frozen=True, slots=True)
class NodeError:
    """One printed error: its class (with the code, when Node shows one), message, frames'
    files (innermost first, as printed)."""

    error_class: str
    message: str
    files: tuple[str, ...]


def parse_node_errors(text: str) -> list[NodeError]:
    """Every error-with-stack the output shows, in order of appearance."""
    lines = [strip_ansi(line).rstrip() for line in text.splitlines()]
    errors: list[NodeError] = []
    index = 0
    while index < len(lines):
        head = _ERROR_LINE.match(lines[index])
        first = _first_frame(lines, index, head)
        if head is None or first is None:
            index += 1
            continue
        message = " / ".join(
            part for part in [head["msg"] or "", *map(str.strip, lines[index + 1 : first])] if part
        )
        files: list[str] = []
        index = first
        while index < len(lines) and (frame := _AT.match(lines[index])) is not None:
            location = frame["loc1"] or frame["loc2"] or ""
            where = _LOCATION.match(location)
            files.append((where["file"] if where else location).removeprefix("file://"))
            index += 1
        errors.append(NodeError(head["cls"], message, tuple(files)))
    return errors


def _first_frame(lines: list[str], index: int, head: re.Match[str] | None) -> int | None:
    """Where the error starting at ``index`` has its first ``at`` frame: the next line, or --
    for an error class (``…Error``, ``…Exception``) whose message runs over several lines, as
    ``assert.strictEqual``'s does -- within :data:`_MESSAGE_LINES` lines."""
    if head is None:
        return None
    named = _NAMED.search(head["cls"]) is not None
    limit = _MESSAGE_LINES if named else 1
    for offset in range(1, limit + 1):
        if index + offset >= len(lines):
            return None
        line = lines[index + offset]
        if _AT.match(line):
            return index + offset
        if offset > 1 and _ERROR_LINE.match(line):
            return None
    return None
