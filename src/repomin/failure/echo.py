"""Which output lines count for ``--match``: everything except source code a tool echoed.

Tools print the source line where a failure happened next to the failure: Python tracebacks
(the indented line under each ``File "…", line N`` and its ``^^^^`` carets), pytest (the
function's source in a failure section, the failing line marked ``>``), compilers (gcc's and
rustc's numbered ``12 |   code`` lines; javac's and older gcc's source line above a caret),
Node's code frame (the throwing line above its ``^``) and TypeScript's (above ``~~~``). Such a
line says *where* the failure is, not *what* it is: once a reduction deletes the assertion, the
assertion's message can still sit in the echoed source of whatever fails instead. So a
``--match`` hit counts only on the other lines.

Owns :func:`counted_text` (the output as ``--match`` sees it) and :func:`echoed_lines` (the
indexes it leaves out). The rules, each a property of a tool's own format:

1. **Python frames**: after a ``File "…", line N`` line, every following line indented deeper
   than it (source and carets), up to the next line that is not. Exception-group margins
   (``|``) count as indentation.
2. **pytest failure sections** (between a ``____ name ____`` header and the next section,
   ``Captured`` block or header): lines that start with ``>`` or with four spaces, unless the
   section is a native traceback (``--tb=native``: rule 1 applies there, and indented lines
   after the exception line are its message). Rules 1 and 4 also read an ``E`` line's text
   (pytest reports a collected module's ``SyntaxError`` there, with its source and caret).
3. **Numbered code frames**: ``   12 |   code`` (gcc, clang, rustc).
4. **Caret lines**: a line made only of ``^``/``~`` (and spaces, ``-``) and the line directly
   above it (javac, Node, TypeScript, older gcc).
"""

from __future__ import annotations

import re

from repomin.failure.normalise import strip_ansi

_PY_FRAME = re.compile(r'^[\s|]*File ".*", line \d+')
_PYTEST_FAILURE_HEADER = re.compile(r"^_{3,} .+ _{3,}$")
_PYTEST_SECTION_END = re.compile(r"^(?:={3,}.*={3,}|-{3,} .* -{3,})$")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):$")
_NUMBERED_FRAME = re.compile(r"^\s*\d+\s*\|")
_CARETS = re.compile(r"^\s*(?=[-\s]*[\^~])[\^~\-\s]+$")


def _margin(line: str) -> int:
    """The indentation of a line, exception-group margins (``|``) included."""
    return len(line) - len(line.lstrip(" |"))


def echoed_lines(lines: list[str]) -> set[int]:
    """The indexes of the lines a tool printed as source (see the module docstring)."""
    echoed: set[int] = set()
    frame_margin: int | None = None
    in_failure = native = False
    for index, raw in enumerate(lines):
        text = strip_ansi(raw).rstrip()
        explained = in_failure and (text.startswith("E ") or text == "E")
        # pytest's explanation of an error (E lines) can hold a report with source, e.g. a
        # collected module's SyntaxError: rules 1 and 4 read the text after the E.
        line = text[1:] if explained else text
        if frame_margin is not None:
            if line.strip() and _margin(line) > frame_margin:
                echoed.add(index)
                continue
            frame_margin = None
        if _PY_FRAME.match(line):
            frame_margin = _margin(line)
            continue
        if _PYTEST_FAILURE_HEADER.match(line):
            in_failure, native = True, False
            continue
        if _PYTEST_SECTION_END.match(line):
            in_failure = False
            continue
        if in_failure and _TRACEBACK.match(line):
            native = True  # --tb=native: rule 1 finds the source; indented lines are message
        pytest_source = in_failure and not native and text.startswith((">", "    "))
        if pytest_source or _NUMBERED_FRAME.match(line):
            echoed.add(index)
        elif _CARETS.match(line) and line.strip():
            echoed.add(index)
            if index > 0 and lines[index - 1].strip():
                echoed.add(index - 1)
    return echoed


def counted_text(output: str) -> str:
    """The output without its echoed source lines: what a ``--match`` regex searches."""
    lines = output.split("\n")
    echoed = echoed_lines(lines)
    if not echoed:
        return output
    return "\n".join(line for index, line in enumerate(lines) if index not in echoed)
