"""Reading Python exceptions out of command output: every format CPython and pytest print.

Owns :func:`parse_exceptions` and :func:`last_exception` (and the records :class:`RawFrame`,
:class:`RawException`): one line-oriented scanner for plain tracebacks, chains ("The above
exception was the direct cause…" / "During handling of the above exception…"), ``SyntaxError``
reports (with or without a ``Traceback`` header), exception groups (``+ Exception Group
Traceback``), pytest's long/short/line reports (``path.py:12: in f``, ``E   KeyError: 'x'``,
``path.py:12: KeyError``) and, only when no traceback is printed at all, pytest's short summary
(``FAILED tests/test_a.py::test_x - KeyError: 'x'``). What of it becomes the signature is
:mod:`repomin.failure.python_exc`'s business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from repomin.failure.normalise import strip_ansi

_SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})
_CHAIN_LINES = {
    "The above exception was the direct cause of the following exception:": "cause",
    "During handling of the above exception, another exception occurred:": "context",
}

_TB_HEADER = re.compile(r"^(?:Exception Group )?Traceback \(most recent call last\):$")
_GROUP_START = re.compile(r"^(\s*)\+ Exception Group Traceback \(most recent call last\):$")
_GROUP_LINE = re.compile(r"^(\s*)([|+])(.*)$")
_GROUP_SEPARATOR = re.compile(r"^(\s*)\+(-\+)?-+(?: (?P<title>\S+) -+)?$")
_FRAME = re.compile(r'^\s+File "(?P<file>.+)", line \d+(?:, in (?P<function>.+))?$')
_EXC_LINE = re.compile(
    r"^(?P<cls>[A-Za-z_]\w*(?:\.(?:[A-Za-z_]\w*|<locals>))*)(?::(?: (?P<msg>.*))?)?$"
)
_PYTEST_LOC = re.compile(r"^(?P<file>(?:[A-Za-z]:)?[^\s:]*\.py):\d+:(?: (?P<rest>.*))?$")
_PYTEST_E = re.compile(r"^E(?:\s(?P<text>.*))?$")
_PYTEST_SECTION = re.compile(r"^(?:_{3,} .* _{3,}|={3,}.*={3,})$")
_PYTEST_CAPTURED = re.compile(r"^-{3,} Captured .* -{3,}$")
_PYTEST_ENTRY_SEP = re.compile(r"^(?:_ ){3,}_?$")
_DEF = re.compile(r"^>?\s*(?:async\s+)?def\s+(?P<name>\w+)\s*[(\[]")
_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (?P<node>\S+)(?: - (?P<rest>.*))?$")


@dataclass(frozen=True, slots=True)
class RawFrame:
    """One frame as printed (file not yet normalised)."""

    file: str
    function: str


@dataclass(frozen=True, slots=True)
class RawException:
    """One reported exception, before normalisation.

    ``link`` says how it follows the previous record ("cause", "context" or ``None`` when it is
    unrelated); ``summary`` marks a pytest short-summary line (used only when no traceback was
    printed); ``group`` lists the direct members of an exception group.
    """

    exception_class: str
    message: str
    frames: tuple[RawFrame, ...] = ()
    link: str | None = None
    summary: bool = False
    group: tuple[tuple[str, str], ...] = ()


def parse_exceptions(text: str) -> list[RawException]:
    """Every exception the output reports, in order of appearance."""
    return _Scanner(strip_ansi(text).splitlines()).run()


def last_exception(records: list[RawException]) -> tuple[RawException, list[RawException]] | None:
    """The signature's exception and its whole chain, earliest first, ending with it.

    Each record's ``link`` says how it follows the one before it, so ``chain[i + 1].link`` is
    how ``chain[i]`` relates to its successor ("cause" or "context").
    """
    pool = [r for r in records if not r.summary] or records
    if not pool:
        return None
    index = len(pool) - 1
    while index > 0 and pool[index].link is not None:
        index -= 1
    return pool[-1], pool[index:]


class _Scanner:
    """A single pass over the output lines; pytest state is carried between lines."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = [line.rstrip() for line in lines]
        self.records: list[RawException] = []
        self.link: str | None = None
        self.skipping = False
        self.pt_frames: list[RawFrame] = []
        self.pt_def: str | None = None
        self.pt_exc: tuple[str | None, str] | None = None

    def run(self) -> list[RawException]:
        index = 0
        while index < len(self.lines):
            index = self._step(index)
        self._flush_pytest(None)
        return self.records

    def _emit(self, record: RawException) -> None:
        self.records.append(replace(record, link=self.link))
        self.link = None

    def _reset_pytest(self) -> None:
        self.pt_frames = []
        self.pt_def = None
        self.pt_exc = None

    def _flush_pytest(self, terminal: RawFrame | None, terminal_class: str | None = None) -> None:
        """Emit the pending pytest exception (``terminal`` is long style's last location)."""
        if self.pt_exc is None:
            return
        cls, message = self.pt_exc
        frames = [*self.pt_frames, terminal] if terminal is not None else self.pt_frames
        cls = cls or terminal_class
        if cls is None and message.startswith("assert"):
            cls = "AssertionError"
        self._reset_pytest()
        if cls is not None:
            self._emit(RawException(cls, message, tuple(frames)))

    def _step(self, index: int) -> int:
        line = self.lines[index]
        if self.skipping:
            if not _PYTEST_SECTION.match(line):
                return index + 1
            self.skipping = False
        if self.pt_exc is not None:
            if _PYTEST_E.match(line) or not line:
                return index + 1
            loc = _PYTEST_LOC.match(line)
            if loc and not (loc["rest"] or "").startswith("in "):
                exc = _EXC_LINE.match((loc["rest"] or "").strip())
                terminal = RawFrame(loc["file"], self.pt_def or "")
                self._flush_pytest(terminal, exc["cls"] if exc else None)
                return index + 1
            self._flush_pytest(None)
        group = _GROUP_START.match(line)
        if group:
            return self._group(index, len(group.group(1)))
        if _TB_HEADER.match(line):
            record, after = parse_native(self.lines, index + 1)
            if record is None:
                return index + 1
            self._emit(record)
            return after
        frame = _FRAME.match(line)
        if frame and frame["function"] is None:
            record, after = parse_native(self.lines, index)
            if record is None or record.exception_class not in _SYNTAX_ERRORS:
                return index + 1
            self._emit(record)
            return after
        if line in _CHAIN_LINES:
            self.link = _CHAIN_LINES[line]
            return index + 1
        return self._pytest_step(index, line)

    def _pytest_step(self, index: int, line: str) -> int:
        if _PYTEST_SECTION.match(line):
            self._reset_pytest()
            self.link = None
            return index + 1
        if _PYTEST_CAPTURED.match(line):
            self.skipping = True
            return index + 1
        if _PYTEST_ENTRY_SEP.match(line):
            self.pt_def = None
            return index + 1
        e_line = _PYTEST_E.match(line)
        if e_line:
            text = (e_line["text"] or "").strip()
            exc = _EXC_LINE.match(text)
            if exc and (exc["msg"] is not None or "." in exc["cls"] or _looks_like_class(text)):
                self.pt_exc = (exc["cls"], exc["msg"] or "")
            elif text:
                self.pt_exc = (None, text)
            return index + 1
        loc = _PYTEST_LOC.match(line)
        if loc:
            rest = loc["rest"] or ""
            if rest.startswith("in "):
                self.pt_frames.append(RawFrame(loc["file"], rest[3:].strip()))
                self.pt_def = None
            elif not rest.strip():
                self.pt_frames.append(RawFrame(loc["file"], self.pt_def or ""))
                self.pt_def = None
            return index + 1
        definition = _DEF.match(line.strip())
        if definition:
            if self.pt_def is None:
                self.pt_def = definition["name"]
            return index + 1
        summary = _SUMMARY.match(line)
        if summary:
            record = _summary_record(summary["node"], summary["rest"])
            if record is not None:
                self.records.append(record)
        return index + 1

    def _group(self, index: int, column: int) -> int:
        tagged: list[_Tag] = []
        end = index
        while end < len(self.lines):
            tag = _tag(self.lines[end], column)
            if tag is None:
                break
            tagged.append(tag)
            end += 1
        node = _group_node(tagged, column // 2)
        if node is not None:
            self._emit(node)
        return max(end, index + 1)


def _looks_like_class(text: str) -> bool:
    return text.endswith(("Error", "Exception", "Exit", "Interrupt", "Iteration", "Warning"))


def parse_native(lines: list[str], start: int) -> tuple[RawException | None, int]:
    """A CPython traceback body from ``start`` (frames, source, carets) to its exception line."""
    frames: list[RawFrame] = []
    index = start
    while index < len(lines):
        line = lines[index]
        frame = _FRAME.match(line)
        if frame:
            frames.append(RawFrame(frame["file"], frame["function"] or ""))
        elif not line.strip():
            return None, index
        elif not line[0].isspace():
            exc = _EXC_LINE.match(line)
            if exc is None:
                return None, index
            return RawException(exc["cls"], exc["msg"] or "", tuple(frames)), index + 1
        index += 1
    return None, index


def _summary_record(node: str, rest: str | None) -> RawException | None:
    if not rest:
        return None
    exc = _EXC_LINE.match(rest.strip())
    if exc and exc["msg"] is not None:
        cls, message = exc["cls"], exc["msg"]
    elif exc and _looks_like_class(rest.strip()):
        cls, message = exc["cls"], ""
    elif rest.startswith("assert"):
        cls, message = "AssertionError", rest
    else:
        return None
    parts = node.split("::")
    function = re.sub(r"\[.*\]$", "", parts[-1]) if len(parts) > 1 else ""
    return RawException(cls, message, (RawFrame(parts[0], function),), summary=True)


@dataclass(frozen=True, slots=True)
class _Tag:
    """One line of an exception-group block: text at a depth, or a member separator."""

    depth: int
    text: str | None
    title: str | None = None


def _tag(line: str, column: int) -> _Tag | None:
    match = _GROUP_LINE.match(line)
    if match is None or len(match.group(1)) < column:
        return None
    indent, margin, rest = len(match.group(1)), match.group(2), match.group(3)
    if margin == "|" or rest.startswith(" Exception Group Traceback"):
        return _Tag(indent // 2, rest[1:] if rest.startswith(" ") else rest)
    separator = _GROUP_SEPARATOR.match(line)
    if separator is None:
        return None
    depth = indent // 2 + (1 if separator.group(2) else 0)
    return _Tag(depth, None, separator["title"] or "")


def _group_node(tagged: list[_Tag], depth: int) -> RawException | None:
    """The exception at ``depth`` of a group block, with its direct members attached."""
    own = [tag.text for tag in tagged if tag.depth == depth and tag.text is not None]
    members: list[list[_Tag]] = []
    current: list[_Tag] | None = None
    for tag in tagged:
        if tag.text is None and tag.depth == depth + 1:
            current = [] if tag.title else None
            if current is not None:
                members.append(current)
        elif current is not None and tag.depth > depth:
            current.append(tag)
    records = [r for r in _Scanner(own).run() if not r.summary]
    if records:
        node = records[-1]
    else:
        bare = [m for m in map(_EXC_LINE.match, own) if m is not None]
        if not bare:
            return None
        node = RawException(bare[-1]["cls"], bare[-1]["msg"] or "")
    group = []
    for member in members:
        child = _group_node(member, depth + 1)
        if child is not None:
            group.append((child.exception_class, child.message))
    return replace(node, group=tuple(group), link=None)
