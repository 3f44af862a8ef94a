"""Reading compiler diagnostics out of command output: gcc/clang, rustc, javac and TypeScript.

Owns :class:`Diagnostic` and :func:`parse_diagnostics`. Each compiler prints a diagnostic as a
header line in its own format; what identifies one is its **severity** and its **code**:

- gcc/clang: ``file.c:3:5: error: unused variable 'x' [-Werror=unused-variable]``; the code is
  the bracketed flag, or the message's head (text before a quote or colon) when there is none.
- rustc: ``error[E0425]: cannot find value `x` in this scope`` followed by `` --> file:l:c``;
  the code is the ``E`` number, or the lint named in the diagnostic's ``#[deny(lint)]`` note
  (``unused_variables``), or the message's head. Summary lines (``aborting due to…``, ``could
  not compile…``) have no ``-->`` line and are not diagnostics.
- javac: ``Foo.java:3: error: cannot find symbol``; the code is the raw key when run with
  ``-XDrawDiagnostics`` (``compiler.err.cant.resolve.location``), a bracketed lint
  (``[deprecation]``), or the message's head.
- TypeScript: ``src/a.ts(3,5): error TS2322: …`` or ``src/a.ts:3:5 - error TS2322: …``.

Only what the output says is read; nothing is compiled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repomin.failure.normalise import strip_ansi

_GCC = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?P<sev>fatal error|error|warning): "
    r"(?P<msg>.*?)(?: \[(?P<flag>-W[^\]]+)\])?$"
)
_RUSTC = re.compile(r"^(?P<sev>error|warning)(?:\[(?P<code>E\d{4})\])?: (?P<msg>.+)$")
_RUSTC_ARROW = re.compile(r"^\s*--> (?P<file>[^:]+):\d+:\d+$")
_RUSTC_LINT = re.compile(r"#!?\[(?:deny|warn|forbid)\((?P<lint>[\w:]+)\)\]")
_RUSTC_FLAG = re.compile(r"`-[DF] (?P<lint>[\w:-]+)`")
_JAVAC = re.compile(r"^(?P<file>\S+\.java):(?P<line>\d+):(?:\d+:)? (?P<rest>.+)$")
_JAVAC_SEVERITY = re.compile(r"^(?P<sev>error|warning): (?P<msg>.*)$")
_JAVAC_RAW = re.compile(r"^(?P<key>compiler\.(?P<sev>err|warn)\.[\w.]+)")
_JAVAC_LINT = re.compile(r"^\[(?P<lint>[\w-]+)\]")
_TSC = re.compile(
    r"^(?P<file>\S+?)(?:\((?P<pos>\d+,\d+)\): | ?:\d+:\d+ - )"
    r"(?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_HEAD = re.compile(r"^[^'\"`‘:;(\[]*")
_RUSTC_LOOKAHEAD = 40


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One compiler diagnostic: which tool printed it, severity, code, file and message."""

    tool: str
    severity: str
    code: str
    file: str
    message: str

    @property
    def is_error(self) -> bool:
        return self.severity in ("error", "fatal error")


def _head(message: str) -> str:
    """A message's stable head: the text before its first quoted name or colon."""
    match = _HEAD.match(message.strip())
    head = match.group(0).strip() if match else ""
    return head or message.strip()[:60]


def parse_diagnostics(text: str) -> list[Diagnostic]:
    """Every diagnostic the output reports, in order of appearance."""
    lines = [strip_ansi(line).rstrip() for line in text.splitlines()]
    found: list[Diagnostic] = []
    for index, line in enumerate(lines):
        diagnostic = _one(lines, index, line)
        if diagnostic is not None:
            found.append(diagnostic)
    return found


def _one(lines: list[str], index: int, line: str) -> Diagnostic | None:
    ts = _TSC.match(line)
    if ts:
        return Diagnostic("tsc", ts["sev"], ts["code"], ts["file"], ts["msg"])
    java = _JAVAC.match(line)
    if java:
        return _javac(java["file"], java["rest"])
    rust = _RUSTC.match(line)
    if rust:
        return _rustc(lines, index, rust)
    gcc = _GCC.match(line)
    if gcc:
        code = gcc["flag"] or _head(gcc["msg"])
        return Diagnostic("gcc", gcc["sev"], code, gcc["file"], gcc["msg"])
    return None


def _javac(file: str, rest: str) -> Diagnostic | None:
    raw = _JAVAC_RAW.match(rest)
    if raw:
        severity = "error" if raw["sev"] == "err" else "warning"
        return Diagnostic("javac", severity, raw["key"], file, rest)
    plain = _JAVAC_SEVERITY.match(rest)
    if plain is None:
        return None
    message = plain["msg"]
    lint = _JAVAC_LINT.match(message)
    code = f"[{lint['lint']}]" if lint else _head(message)
    return Diagnostic("javac", plain["sev"], code, file, message)


def _rustc_lint(body: list[str]) -> str | None:
    """The lint a rustc diagnostic names: its ``= note: `#[deny(lint)]` …`` or ``-D lint``
    note, else the attribute on the line under "the lint level is defined here"."""
    body = body[: next((i for i, line in enumerate(body) if _RUSTC.match(line)), len(body))]
    for line in body:
        if line.lstrip().startswith("= note:"):
            lint = _RUSTC_LINT.search(line) or _RUSTC_FLAG.search(line)
            if lint:
                return lint["lint"].replace("-", "_")
    after = next((i for i, line in enumerate(body) if "lint level is defined here" in line), None)
    if after is not None:
        for line in body[after:]:
            lint = _RUSTC_LINT.search(line)
            if lint:
                return lint["lint"]
    return None


def _rustc(lines: list[str], index: int, header: re.Match[str]) -> Diagnostic | None:
    if index + 1 >= len(lines):
        return None
    arrow = _RUSTC_ARROW.match(lines[index + 1])
    if arrow is None:
        return None
    code = header["code"] or _rustc_lint(lines[index + 2 : index + 2 + _RUSTC_LOOKAHEAD])
    return Diagnostic(
        "rustc", header["sev"], code or _head(header["msg"]), arrow["file"], header["msg"]
    )
