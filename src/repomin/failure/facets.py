"""The facets of a failure's identity: what each kind of tool output says the failure *is*.

Owns :data:`FACETS` (name -> extractor) and the extractors. One extractor reads one kind of
output and returns every failure of that kind the output reports, each as a flat ``{field:
text}`` value (a *candidate*); :mod:`repomin.failure.identity` decides which candidates the
baseline pins and compares them. What each facet holds, and why no more:

- ``python`` (plain tracebacks, pytest in every ``--tb`` mode, unittest): ``exception_class``,
  ``message`` (normalised, :mod:`repomin.failure.normalise`), ``file`` (the innermost frame
  inside the tree, relative to it; ``""`` when no frame is) and, under a test runner,
  ``runner`` and ``test`` (pytest's node id, unittest's ``name (module.Class.name)``). The
  raising *function* is not pinned: a reduction that moves the failing call to the module's
  top level keeps the bug and the file (measured on the real suite).
- ``java`` (``printStackTrace`` output, JUnit, Surefire): the root cause's ``exception_class``
  and ``message`` and ``frame_class``, the class of its innermost frame outside the JDK and
  the test harness.
- ``node``: ``error_class`` (with Node's ``[ERR_CODE]``), ``message``, ``file`` (the innermost
  frame inside the tree).
- ``compiler`` (gcc/clang, rustc, javac, tsc; errors only -- a warning that does not fail the
  build is not the failure): ``tool``, ``code`` (flag, error code, lint or key; see
  :mod:`repomin.failure.diagnostics`) and ``file``.
- ``signal``: the signal that ended the command (``SIGSEGV``; a shell's or an engine's 128+N
  status reads the same); an ordinary exit code is not a facet (``--exit-code`` pins it).
- ``sanitizer``: ``sanitizer`` and ``error`` of an AddressSanitizer/ThreadSanitizer/… report,
  or UndefinedBehaviorSanitizer's ``runtime error`` head.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from repomin.failure.diagnostics import parse_diagnostics
from repomin.failure.java_exc import last_trace, normalise_method, parse_traces
from repomin.failure.node_exc import parse_node_errors
from repomin.failure.normalise import Normaliser, strip_ansi
from repomin.failure.process import KIND_SIGNAL, classify
from repomin.failure.python_parse import RawException, last_exception, parse_exceptions
from repomin.runners.base import Outcome

Candidate = dict[str, str]
Extractor = Callable[[Outcome, Normaliser], list[Candidate]]

_PYTEST_SUMMARY = re.compile(r"^(?P<status>FAILED|ERROR) (?P<node>.+?)(?: - (?P<rest>.*))?$")
_PYTEST_HEADER = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$")
_PYTEST_BLOCK = re.compile(r"^={3,} (?P<title>FAILURES|ERRORS) ={3,}$")
_PYTEST_OTHER_BLOCK = re.compile(r"^={3,}.*={3,}$")
_UNITTEST_HEADER = re.compile(r"^(?:FAIL|ERROR): (?P<test>.+)$")
_UNITTEST_RULE = re.compile(r"^(?:-{20,}|={20,})$")
_CLASS_PREFIX = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)(?::|$)")
_HARNESS = (
    "java.",
    "javax.",
    "jdk.",
    "sun.",
    "com.sun.",
    "kotlin.",
    "scala.",
    "org.junit.",
    "junit.",
    "org.apache.maven.",
    "org.gradle.",
)
_SANITIZER = re.compile(
    r"^(?:==\d+==ERROR|SUMMARY): (?P<san>\w+Sanitizer):? (?P<err>[A-Za-z][\w-]*)"
)
_CODE_FRAME = re.compile(r"^>?\s*\d+\s*\|")
_CARET_LINE = re.compile(r"^[-\s~^]*\^[-\s~^]*$")
_POSITION_ONLY = re.compile(r"^\S+:\d+(?::\d+)?$")
_COLON_POSITION = re.compile(r"(?<=\w):\d+(?::\d+)?\b")
_WORD_POSITION = re.compile(r"\b(line|column|col|char|position|offset) \d+\b")
_JAVAC_WERROR = re.compile(r"^error: warnings found and -Werror specified$", re.MULTILINE)
_UBSAN = re.compile(r"runtime error: (?P<what>[^:'\"0-9]+)")


def identity_message(norm: Normaliser, raw: str) -> str:
    """A message as the identity pins it: normalised (:meth:`Normaliser.message`), without the
    parts that say *where* rather than *what* -- a template engine's or a parser's code frame
    inside the message (``  > 4| p(class=…``, ``-------^``) and a line that is only a position
    (``views/about.pug:4:1``) -- and with positions inside the text (``:4:1``, ``line 4``,
    ``column 2``) masked: a reduction moves lines, and the failure stays the same."""
    parts = [part.strip() for part in re.split(r"\n| / ", raw)]
    kept = [
        part
        for part in parts
        if part
        and not _CODE_FRAME.match(part)
        and not _CARET_LINE.match(part)
        and not _POSITION_ONLY.match(part)
    ]
    text = " / ".join(kept)
    text = _COLON_POSITION.sub(":<n>", text)
    text = _WORD_POSITION.sub(lambda m: f"{m.group(1)} <n>", text)
    return norm.message(text)


def _in_tree(path: str) -> bool:
    return bool(path) and not path.startswith(("<", "/", "node:")) and ":" not in path[:3]


def _python_value(record: RawException, norm: Normaliser) -> Candidate:
    files = [norm.path(frame.file) for frame in record.frames]
    inside = [path for path in files if _in_tree(path)]
    return {
        "exception_class": record.exception_class.removeprefix("builtins."),
        "message": identity_message(norm, record.message),
        "file": inside[-1] if inside else "",
    }


def _last(text: str) -> RawException | None:
    picked = last_exception(parse_exceptions(text))
    return picked[0] if picked else None


def python_facet(outcome: Outcome, norm: Normaliser) -> list[Candidate]:
    """pytest's failures, else unittest's, else the last traceback of a plain run."""
    lines = strip_ansi(outcome.output).splitlines()
    found = _pytest(lines, norm)
    if found:
        return found
    found = _unittest(lines, norm)
    if found:
        return found
    record = _last(outcome.output)
    return [] if record is None else [{"runner": "", "test": "", **_python_value(record, norm)}]


def _sections(lines: list[str]) -> dict[str, list[str]]:
    """pytest's failure sections (title -> lines), from its FAILURES and ERRORS blocks."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    inside = False
    for line in lines:
        if _PYTEST_BLOCK.match(line):
            inside, current = True, None
        elif _PYTEST_OTHER_BLOCK.match(line):
            inside, current = False, None
        elif inside and (header := _PYTEST_HEADER.match(line)):
            current = sections.setdefault(header["title"], [])
        elif current is not None:
            current.append(line)
    return sections


def _pytest(lines: list[str], norm: Normaliser) -> list[Candidate]:
    sections = _sections(lines)
    found: list[Candidate] = []
    for line in lines:
        summary = _PYTEST_SUMMARY.match(line)
        if summary is None:
            continue
        node = summary["node"]
        text = _section_of(sections, summary["status"], node)
        record = _section_record(text) if text is not None else None
        if record is None:
            record = _summary_only(summary["rest"] or "", node)
        if record is None:
            continue
        found.append({"runner": "pytest", "test": node, **_python_value(record, norm)})
    if not found and sections:
        for title, text in sections.items():
            record = _section_record(text)
            if record is not None:
                found.append({"runner": "pytest", "test": title, **_python_value(record, norm)})
    return found


def _section_record(text: list[str]) -> RawException | None:
    """A failure section's exception; its message is the whole explanation pytest printed
    (the last block of ``E`` lines: ``AssertionError: total mismatch`` *and* ``assert 1.25 ==
    1.26``), so that the values an assertion compared are part of the identity."""
    record = _last("\n".join(text))
    if record is None:
        return None
    blocks: list[list[str]] = [[]]
    for line in text:
        if line.startswith("E ") or line == "E":
            blocks[-1].append(line[1:].strip())
        elif blocks[-1]:
            blocks.append([])
    explanation = [part for part in next((b for b in reversed(blocks) if b), []) if part]
    if not explanation:
        return record
    first = explanation[0]
    for prefix in (f"{record.exception_class}: ", f"{record.exception_class}:"):
        if first.startswith(prefix):
            explanation[0] = first[len(prefix) :]  # the class is a field of its own
            break
    else:
        if first == record.exception_class:
            explanation = explanation[1:]
    return replace(record, message=" / ".join(part for part in explanation if part))


def _section_of(sections: dict[str, list[str]], status: str, node: str) -> list[str] | None:
    """The failure section pytest printed for a summary line's node: ``TestA.test_b[1]`` for a
    failure, ``ERROR at setup of …``/``ERROR at teardown of …`` for a fixture's error, and
    ``ERROR collecting PATH`` for a module's, where PATH is written from the rootdir while the
    summary writes it from where pytest started (they agree from the end)."""
    parts = node.split("::")
    name = ".".join(parts[1:])
    if status == "FAILED":
        return sections.get(name)
    if len(parts) > 1:
        return sections.get(f"ERROR at setup of {name}") or sections.get(
            f"ERROR at teardown of {name}"
        )
    for title, text in sections.items():
        path = title.removeprefix("ERROR collecting ")
        if path != title and (
            path == node or node.endswith("/" + path) or path.endswith("/" + node)
        ):
            return text
    return None


def _summary_only(rest: str, node: str) -> RawException | None:
    rest = rest.strip()
    cls = _CLASS_PREFIX.match(rest)
    if rest.startswith("assert"):
        return RawException("AssertionError", rest)
    if cls is None:
        return None
    message = rest[len(cls["cls"]) :].removeprefix(":").strip()
    return RawException(cls["cls"], message)


def _unittest(lines: list[str], norm: Normaliser) -> list[Candidate]:
    found: list[Candidate] = []
    index = 0
    while index < len(lines):
        header = _UNITTEST_HEADER.match(lines[index])
        ruled = index + 1 < len(lines) and _UNITTEST_RULE.match(lines[index + 1])
        if header is None or not ruled:
            index += 1
            continue
        end = index + 2
        while end < len(lines) and not _UNITTEST_RULE.match(lines[end]):
            end += 1
        record = _last("\n".join(lines[index + 2 : end]))
        if record is not None:
            test = header["test"].strip()
            found.append({"runner": "unittest", "test": test, **_python_value(record, norm)})
        index = end
    return found


def java_facet(outcome: Outcome, norm: Normaliser) -> list[Candidate]:
    """The root cause of the trace the Java signature reads (the last one not the build
    tool's own)."""
    trace = last_trace(parse_traces(outcome.output))
    if trace is None:
        return []
    root = trace.root
    frames = [normalise_method(frame) for frame in root.frames]
    own = [frame for frame in frames if not frame.startswith(_HARNESS)]
    frame_class = own[0].rsplit(".", 1)[0].split("$", 1)[0] if own else ""
    return [
        {
            "exception_class": root.exception_class,
            "message": identity_message(norm, root.message),
            "frame_class": frame_class,
        }
    ]


def node_facet(outcome: Outcome, norm: Normaliser) -> list[Candidate]:
    """Every Node error-with-stack the output shows."""
    found: list[Candidate] = []
    for error in parse_node_errors(outcome.output):
        inside = [path for path in map(norm.path, error.files) if _in_tree(path)]
        found.append(
            {
                "error_class": error.error_class,
                "message": identity_message(norm, error.message),
                "file": inside[0] if inside else "",
            }
        )
    return found


def compiler_facet(outcome: Outcome, norm: Normaliser) -> list[Candidate]:
    """Every error diagnostic; a warning only when the compiler made warnings errors (javac's
    ``-Werror`` prints the warnings and then one error without a file)."""
    output = outcome.output
    warnings_fail = _JAVAC_WERROR.search(strip_ansi(output)) is not None
    return [
        {"tool": d.tool, "code": d.code, "file": norm.path(d.file)}
        for d in parse_diagnostics(output)
        if d.is_error or (warnings_fail and d.tool == "javac")
    ]


def signal_facet(outcome: Outcome, norm: Normaliser) -> list[Candidate]:
    """The signal that ended the command, when one did."""
    status = classify(outcome.exit_code, outcome.signal)
    if status is None or status["kind"] != KIND_SIGNAL:
        return []
    return [{"signal": str(status["signal_name"])}]


def sanitizer_facet(outcome: Outcome, norm: Normaliser) -> list[Candidate]:
    """Every sanitizer report: ASan/TSan/MSan/LSan's kind, UBSan's runtime-error head."""
    found: list[Candidate] = []
    for line in strip_ansi(outcome.output).splitlines():
        report = _SANITIZER.match(line.strip())
        if report:
            found.append({"sanitizer": report["san"], "error": report["err"]})
            continue
        ubsan = _UBSAN.search(line)
        if ubsan:
            what = ubsan["what"].strip()
            found.append({"sanitizer": "UndefinedBehaviorSanitizer", "error": what})
    return found


#: The fields of each facet's values (what the report's validator checks).
FACET_FIELDS: dict[str, frozenset[str]] = {
    "python": frozenset({"runner", "test", "exception_class", "message", "file"}),
    "java": frozenset({"exception_class", "message", "frame_class"}),
    "node": frozenset({"error_class", "message", "file"}),
    "compiler": frozenset({"tool", "code", "file"}),
    "signal": frozenset({"signal"}),
    "sanitizer": frozenset({"sanitizer", "error"}),
}

#: Every facet, in the order they are shown.
FACETS: dict[str, Extractor] = {
    "python": python_facet,
    "java": java_facet,
    "node": node_facet,
    "compiler": compiler_facet,
    "signal": signal_facet,
    "sanitizer": sanitizer_facet,
}
