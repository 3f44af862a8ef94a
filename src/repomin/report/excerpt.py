"""A few lines of the failing output that say what failed (``failure_excerpt``, ``REPOMIN.md``).

The report's counts say *that* the failure reproduced; a reader also wants to see *which*
failure, as the tool printed it. :func:`failure_excerpt` picks, from the output of the
baseline's first run that reproduced, the lines that identify the failure, by the first rule
that finds any:

1. **pytest**: the first failure's ``E`` lines, the ``>`` line above them and the
   ``file:line: Exception`` line below (when the output is pytest's: such a line follows, or a
   ``test session starts`` banner is there);
2. **Python traceback**: the last ``Traceback (most recent call last):``, its exception line
   (the first line after it at the margin) and up to :data:`TRACEBACK_ABOVE` lines above it;
3. **compiler**: the first ``error`` diagnostic (gcc, clang, javac ``file:line[:col]: error``;
   rustc ``error[E…]:``; tsc ``file(l,c): error`` / ``file:l:c - error``), the first one that
   ``--match`` matches if any does, with the lines under it up to its last caret line;
4. **match**: the last lines that ``--match`` matched;
5. **tail**: the output's last lines.

At most :data:`EXCERPT_LINES` lines of at most :data:`LINE_LIMIT` characters. Output is hostile:
every line loses terminal escapes (CSI, OSC, other ``ESC`` sequences) and every non-printable
character (controls, bidirectional overrides, undecodable bytes), the sample's working
directory is dropped from paths, and only a bounded part of the output is read.
:func:`fenced` writes the lines as a Markdown code block that no line can close.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Most lines in an excerpt, and characters per line (longer ones end in ``…``).
EXCERPT_LINES = 15
LINE_LIMIT = 200
#: Lines above a traceback's exception line; ``E`` lines of a pytest failure.
TRACEBACK_ABOVE = 8
PYTEST_E_LINES = 12
#: Lines under a compiler diagnostic that may belong to it.
DIAGNOSTIC_BELOW = 10
#: Only the output's last characters are read, each line cut to ``SCAN_LINE`` first.
SCAN_CHARS = 1 << 20
SCAN_LINE = 4 * LINE_LIMIT

KINDS = ("pytest", "python_traceback", "compiler", "match", "tail")

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (titles, hyperlinks)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]"  # two-character escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_PYTEST_E = re.compile(r"^E(?: |$)")
_PYTEST_WHERE = re.compile(r"^\S+:\d+: \w")
_PYTEST_BANNER = re.compile(r"^=+ test session starts =+$")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$")
_DIAGNOSTIC = re.compile(
    r"^(?:error(?:\[\w+\])?:"  # rustc, cargo
    r"|\S+?:\d+(?::\d+)?: (?:fatal )?error\b"  # gcc, clang, javac
    r"|\S+?\(\d+,\d+\): error\b"  # tsc
    r"|\S+?:\d+:\d+ - error\b)"  # tsc --pretty
)
_LOCATED = re.compile(r"^\S+?:\d+(?::\d+)?: ")
_CARET = re.compile(r"^[\s|]*[-~^\s]*[\^~](?:\s|$)")


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Which rule picked the lines (:data:`KINDS`) and the lines, cleaned and bounded."""

    kind: str
    lines: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"source": "baseline", "kind": self.kind, "lines": list(self.lines)}


def printable(text: str) -> str:
    """``text`` without terminal escapes, non-printable characters (controls, bidirectional
    overrides, line breaks) or undecodable bytes (U+FFFD); tabs as spaces."""
    text = _ESCAPES.sub("", text).replace("\t", "    ")
    return "".join(ch for ch in text if ch.isprintable() and ch != "\ufffd")


def clean_line(line: str) -> str:
    """:func:`printable`, trailing space dropped, at most :data:`LINE_LIMIT` characters."""
    text = printable(line[:SCAN_LINE]).rstrip()
    return text if len(text) <= LINE_LIMIT else text[: LINE_LIMIT - 1] + "…"


def failure_excerpt(output: str, workdir: str = "", match: str | None = None) -> Excerpt | None:
    """The lines of ``output`` that identify the failure (module docstring), or None when it
    has no printable line. ``workdir``: the sample's directory, dropped from paths;
    ``match``: the contract's ``--match`` (a valid regular expression)."""
    text = output[-SCAN_CHARS:]
    if workdir:
        text = text.replace(workdir.rstrip("/") + "/", "").replace(workdir, ".")
    lines = [clean_line(line) for line in text.splitlines()]
    regex = re.compile(match) if match is not None else None
    for kind, rule in (("pytest", _pytest), ("python_traceback", _traceback)):
        found = rule(lines)
        if found:
            return _bounded(kind, found)
    found = _compiler(lines, regex)
    if found:
        return _bounded("compiler", found)
    matched = [line for line in lines if regex is not None and regex.search(line)]
    if matched:
        return _bounded("match", matched[-EXCERPT_LINES:])
    while lines and not lines[-1].strip():
        lines.pop()
    return _bounded("tail", lines[-EXCERPT_LINES:]) if lines else None


def _bounded(kind: str, lines: Sequence[str]) -> Excerpt:
    return Excerpt(kind, tuple(lines[:EXCERPT_LINES]))


def _pytest(lines: list[str]) -> list[str]:
    """The first failure's ``>`` line, ``E`` lines and ``file:line: Exception`` line."""
    banner = any(_PYTEST_BANNER.match(line) for line in lines)
    start = 0
    while True:
        first = next((i for i in range(start, len(lines)) if _PYTEST_E.match(lines[i])), None)
        if first is None:
            return []
        end = first
        while end < len(lines) and _PYTEST_E.match(lines[end]):
            end += 1
        after = [line for line in lines[end : end + 3] if line.strip()][:1]
        where = after if after and _PYTEST_WHERE.match(after[0]) else []
        if where or banner:
            above = [ln for ln in lines[max(0, first - 10) : first] if ln.startswith(">")][-1:]
            return [*above, *lines[first:end][:PYTEST_E_LINES], *where]
        start = end


def _traceback(lines: list[str]) -> list[str]:
    """The last traceback's exception line and the lines above it."""
    start = next((i for i in reversed(range(len(lines))) if _TRACEBACK.match(lines[i])), None)
    if start is None:
        return []
    at = next(
        (i for i in range(start + 1, len(lines)) if lines[i].strip() and lines[i][0] != " "),
        None,
    )
    if at is None:
        return []
    top = max(start, at - TRACEBACK_ABOVE)
    head = [lines[start], "  ..."] if top > start else []
    return [*head, *lines[top : at + 1]]


def _compiler(lines: list[str], regex: re.Pattern[str] | None) -> list[str]:
    """The first error diagnostic (the first ``regex`` matches, if any) with its caret lines."""
    found = [i for i, line in enumerate(lines) if _DIAGNOSTIC.match(line)]
    if not found:
        return []
    chosen = next((i for i in found if regex is not None and regex.search(lines[i])), found[0])
    block = [lines[chosen]]
    for line in lines[chosen + 1 : chosen + 1 + DIAGNOSTIC_BELOW]:
        if not line.strip() or _DIAGNOSTIC.match(line) or _LOCATED.match(line):
            break
        block.append(line)
    carets = [i for i, line in enumerate(block) if i and _CARET.match(line)]
    if carets:
        end = carets[-1] + 1
        while end < len(block) and block[end][:1].isspace():  # rustc's labels under it
            end += 1
        block = block[:end]
    return block


def fenced(lines: Sequence[str], info: str = "text") -> list[str]:
    """``lines`` (cleaned again: a report may come from anyone) as a Markdown code block whose
    fence is longer than any run of backticks in them, so that no line can close it."""
    body = [clean_line(str(line)) for line in lines[:EXCERPT_LINES]]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, *body, fence]
