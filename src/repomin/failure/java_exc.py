"""The Java exception signature: the last stack trace in the output, identified by its root cause.

The parser reads what ``Throwable.printStackTrace`` prints -- ``Exception in thread "main" …``
or a bare ``pkg.SomeException: message`` line followed by ``at`` frames, ``Caused by:`` chains,
``... N more`` (the shared outer frames are restored from the enclosing trace), and
``Suppressed:`` blocks (recorded, never compared) -- wherever it appears: plain ``java`` runs,
JUnit 4/5 runners and Maven Surefire reports (``[ERROR]`` prefixes and colours are ignored).
Traces thrown by the build tool itself (``org.apache.maven.…``, ``org.gradle.…``) only say that
tests failed, so a test's own trace is preferred to them.

Identity is the **root cause** (the last ``Caused by:``, or the thrown exception when there is
none): class, normalised first message line and its innermost :data:`FRAMES_COMPARED` frames
(``package.Class.method``; file names, line numbers and module prefixes dropped). Wrappers such
as ``InvocationTargetException`` or ``RuntimeException(e)`` come and go with harness code that a
reduction may remove; the root cause is where the bug is thrown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from repomin.failure.normalise import FRAME_LIMIT, Normaliser, strip_ansi
from repomin.runners.base import Outcome

KIND = "java_exception"

#: How many innermost frames of the pinned root cause must reappear in an observed one.
FRAMES_COMPARED = 3

#: Message continuation lines tolerated between a header and its first frame.
_CONTINUATION_LIMIT = 20

_CLASS = r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*"
_EXC = re.compile(rf"^(?P<cls>{_CLASS})(?:: ?(?P<msg>.*))?$")
_THREAD_HEADER = re.compile(r'^Exception in thread ".*?" (?P<rest>.+)$')
_JUNIT5_HEADER = re.compile(r"^=> (?P<rest>.+)$")
_CAUSED = re.compile(r"^Caused by: (?P<rest>.+)$")
_SUPPRESSED = re.compile(r"^Suppressed: (?P<rest>.+)$")
_FRAME = re.compile(r"^(?:at\s+)?(?P<method>[^\s()]+)\((?P<location>[^()]*)\)$")
_MORE = re.compile(r"^\.\.\. (?P<count>\d+) (?:more|common frames omitted)$")
_CIRCULAR = re.compile(r"^\[CIRCULAR REFERENCE")
_LOG_PREFIX = re.compile(r"^\[(?:ERROR|WARNING|WARN|INFO|DEBUG)\] ?")
_MODULE_PREFIX = re.compile(r"^[\w.-]*(?:@[^/\s]*)?//?(?=[\w$])")
_HIDDEN_LAMBDA = re.compile(r"\$\$Lambda(?:\$\d+)?/0x[0-9a-fA-F]+")
_GENERATED = re.compile(
    r"(GeneratedMethodAccessor|GeneratedConstructorAccessor"
    r"|GeneratedSerializationConstructorAccessor|\$Proxy)\d+"
)
_SYNTHETIC_INDEX = re.compile(r"\$\d+")
_EXCEPTION_NAME = re.compile(r"(?:Exception|Error|Throwable|Failure)$")
_BUILD_TOOL_PREFIXES = ("org.apache.maven.", "org.gradle.", "org.codehaus.plexus.")


@dataclass(slots=True)
class JavaThrowable:
    """One exception of a printed trace; ``frames`` innermost first, as Java prints them."""

    exception_class: str
    message: str
    frames: list[str] = field(default_factory=list)
    omitted: int = 0


@dataclass(slots=True)
class JavaTrace:
    """A whole printed trace: the thrown exception, its causes, and suppressed exceptions."""

    chain: list[JavaThrowable]
    suppressed: list[JavaThrowable] = field(default_factory=list)

    @property
    def root(self) -> JavaThrowable:
        return self.chain[-1]


def normalise_method(raw: str) -> str:
    """``java.base/java.util.HashMap.get`` -> ``java.util.HashMap.get``; synthetic indices
    (``App$1``, ``lambda$main$0``, ``$$Lambda$14/0x…``, ``GeneratedMethodAccessor12``) become
    ``<n>`` because deleting an unrelated lambda or inner class renumbers them."""
    method = _MODULE_PREFIX.sub("", raw, count=1)
    method = _HIDDEN_LAMBDA.sub("$$Lambda", method)
    method = _GENERATED.sub(r"\1<n>", method)
    return _SYNTHETIC_INDEX.sub("$<n>", method)


def _clean(line: str) -> str:
    return _LOG_PREFIX.sub("", line.rstrip())


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _exception(text: str) -> JavaThrowable | None:
    match = _EXC.match(text.strip())
    if match is None:
        return None
    return JavaThrowable(match["cls"], match["msg"] or "")


def _header(lines: list[str], index: int) -> JavaThrowable | None:
    """The exception a trace starts with at ``index``, if one starts there."""
    text = lines[index].strip()
    for pattern in (_THREAD_HEADER, _JUNIT5_HEADER):
        match = pattern.match(text)
        if match:
            return _exception(match["rest"])
    exc = _exception(text)
    if exc is None:
        return None
    for offset, follower in enumerate(lines[index + 1 : index + 2 + _CONTINUATION_LIMIT]):
        follower = follower.strip()
        if follower.startswith("at ") and _FRAME.match(follower):
            return exc if offset == 0 or _EXCEPTION_NAME.search(exc.exception_class) else None
        if not follower or _CAUSED.match(follower) or _header_start(follower):
            return None
    return None


def _header_start(text: str) -> bool:
    return bool(_THREAD_HEADER.match(text) or _JUNIT5_HEADER.match(text))


def parse_traces(text: str) -> list[JavaTrace]:
    """Every stack trace in the output, in order of appearance."""
    lines = [_clean(line) for line in strip_ansi(text).splitlines()]
    traces: list[JavaTrace] = []
    index = 0
    while index < len(lines):
        first = _header(lines, index)
        if first is None:
            index += 1
            continue
        trace, index = _parse_trace(lines, index, first)
        traces.append(trace)
    return traces


def _parse_trace(lines: list[str], start: int, first: JavaThrowable) -> tuple[JavaTrace, int]:
    trace = JavaTrace([first])
    base = _indent(lines[start])
    in_suppressed = False
    awaiting_frame = True
    continuation = 0
    index = start + 1
    while index < len(lines):
        line = lines[index]
        text = line.strip()
        indent = _indent(line)
        caused = _CAUSED.match(text)
        if caused and indent <= base:
            exc = _exception(caused["rest"])
            if exc is None:
                break
            trace.chain.append(exc)
            in_suppressed, awaiting_frame, continuation = False, True, 0
        elif (suppressed := _SUPPRESSED.match(text)) and indent > base:
            if not in_suppressed and (exc := _exception(suppressed["rest"])) is not None:
                trace.suppressed.append(exc)
            in_suppressed = True
        elif (
            in_suppressed
            and indent > base
            and (_FRAME.match(text) or _MORE.match(text) or _CAUSED.match(text))
        ):
            pass
        elif frame := _FRAME.match(text):
            trace.chain[-1].frames.append(normalise_method(frame["method"]))
            awaiting_frame = False
        elif more := _MORE.match(text):
            trace.chain[-1].omitted = int(more["count"])
        elif _CIRCULAR.match(text):
            pass
        elif awaiting_frame and text and continuation < _CONTINUATION_LIMIT:
            continuation += 1
        else:
            break
        index += 1
    _restore_omitted(trace.chain)
    return trace, index


def _restore_omitted(chain: list[JavaThrowable]) -> None:
    """``... N more``: a cause's last N frames are the last N of the exception it caused."""
    for enclosing, cause in pairwise(chain):
        if cause.omitted and enclosing.frames:
            cause.frames.extend(enclosing.frames[-cause.omitted :])


def last_trace(traces: list[JavaTrace]) -> JavaTrace | None:
    """The signature's trace: the last one not thrown by the build tool itself."""
    own = [t for t in traces if not t.chain[0].exception_class.startswith(_BUILD_TOOL_PREFIXES)]
    pool = own or traces
    return pool[-1] if pool else None


class JavaExceptionMode:
    """``--java-exception``: see the module docstring for what is compared."""

    flag: str = "java_exception"
    report_field: str = "java_exception_signature"

    def extract(self, outcome: Outcome) -> dict[str, Any] | None:
        if outcome.timed_out or outcome.resource_exhausted or outcome.infrastructure_error:
            return None
        trace = last_trace(parse_traces(outcome.output))
        if trace is None:
            return None
        norm = Normaliser.for_outcome(outcome)
        top = _describe(trace.chain[0], norm)
        return {
            "kind": KIND,
            **top,
            "caused_by": [_describe(cause, norm) for cause in trace.chain[1:]],
            "suppressed": [
                {"exception_class": s.exception_class, "message": norm.message(s.message)}
                for s in trace.suppressed
            ],
            "root_cause": _describe(trace.root, norm, with_frames=False),
        }

    def matches(self, pinned: dict[str, Any], observed: dict[str, Any]) -> bool:
        if pinned.get("kind", KIND) != KIND or observed.get("kind", KIND) != KIND:
            return False
        want, got = _root(pinned), _root(observed)
        if want.get("exception_class") != got.get("exception_class"):
            return False
        if want.get("message") != got.get("message"):
            return False
        want_frames, got_frames = _frames(want.get("frames")), _frames(got.get("frames"))
        k = min(FRAMES_COMPARED, len(want_frames))
        return len(got_frames) >= k and want_frames[:k] == got_frames[:k]


def _describe(exc: JavaThrowable, norm: Normaliser, *, with_frames: bool = True) -> dict[str, Any]:
    described: dict[str, Any] = {
        "exception_class": exc.exception_class,
        "message": norm.message(exc.message),
    }
    if with_frames:
        described["frames"] = [{"method": method} for method in exc.frames[:FRAME_LIMIT]]
    return described


def _root(signature: dict[str, Any]) -> dict[str, Any]:
    causes = signature.get("caused_by")
    if isinstance(causes, list) and causes and isinstance(causes[-1], dict):
        return causes[-1]
    return signature


def _frames(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(f.get("method")) for f in value if isinstance(f, dict)]
