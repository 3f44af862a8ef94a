"""Elements of a bracket container: the units the ``brackets`` pass and the JavaScript search
delete (statements of a ``{...}`` or of the file, or comma-separated list members).

Each container -- the file, or the inside of a ``{...}``/``[...]`` -- splits into *elements*:

* statement containers (the file, a ``{}`` holding a top-level ``;``): elements end at ``;``,
  after a ``{...}`` block (with a directly following ``;``), at a blank line, or at the end of
  a preprocessor line; a block therefore goes together with its header (``int f(void) {...}``,
  ``if (x) {...}``, ``struct s {...};``);
* list containers (JSON everywhere, ``[...]``, a ``{...}`` with commas and no ``;``): elements
  are separated by ``,`` and a deleted element takes one adjacent comma with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from repomin.passes.jslex import Lexed

_SPACE = frozenset(b" \t\r\n\f\v")


@dataclass(frozen=True, slots=True)
class Element:
    """Bytes ``[start, end)`` to delete for one element, and its first line (1-based)."""

    start: int
    end: int
    line: int


@dataclass(frozen=True, slots=True)
class _Raw:
    start: int
    end: int
    sep: int | None


def mode_of(data: bytes, lexed: Lexed, lo: int, hi: int, opener: int | None, json: bool) -> str:
    if json or opener == ord("["):
        return ","
    if opener is None:
        return ";"
    semis = commas = 0
    for i in top_level(data, lexed, lo, hi):
        semis += data[i] == ord(";")
        commas += data[i] == ord(",")
    return ";" if semis or not commas else ","


def top_level(data: bytes, lexed: Lexed, lo: int, hi: int) -> Iterable[int]:
    """Positions in ``[lo, hi)`` at the container's own level (nested pairs and opaque skipped;
    opening brackets and the starts of opaque spans are yielded)."""
    i = lo
    while i < hi:
        yield i
        if i in lexed.opaque:
            i = lexed.opaque[i]
        elif i in lexed.pairs:
            i = lexed.pairs[i] + 1
        else:
            i += 1


def elements(
    data: bytes, lexed: Lexed, lo: int, hi: int, mode: str, directives: bool
) -> list[Element]:
    """The deletable elements of the container ``[lo, hi)`` (see the module docstring)."""
    raw: list[_Raw] = []
    start: int | None = None
    last = lo  # end of the last non-space byte of the current element
    newlines = 0
    i = lo
    while i < hi:
        if i in lexed.opaque:
            start = i if start is None else start
            i = last = lexed.opaque[i]
            newlines = 0
            continue
        c = data[i]
        if c in _SPACE:
            newlines += c == ord("\n")
            if newlines >= 2 and start is not None and mode == ";":
                raw.append(_Raw(start, last, None))
                start = None
            i += 1
            continue
        newlines = 0
        if start is None:
            start = i
            end = _directive_end(data, lexed, i, hi) if directives and mode == ";" else None
            if end is not None:
                raw.append(_Raw(i, end, None))
                start = None
                i = last = end
                continue
        if i in lexed.pairs:
            close = lexed.pairs[i]
            i = last = close + 1
            if mode == ";" and c == ord("{"):
                after = _skip_space(data, last, hi)
                if after < hi and data[after] == ord(";"):
                    i = last = after + 1
                raw.append(_Raw(start, last, None))
                start = None
            continue
        last = i + 1
        if (mode == ";" and c == ord(";")) or (mode == "," and c == ord(",")):
            raw.append(_Raw(start, i + 1, i))
            start = None
        i += 1
    if start is not None:
        raw.append(_Raw(start, last, None))
    return _expand(data, raw, mode)


def _directive_end(data: bytes, lexed: Lexed, i: int, hi: int) -> int | None:
    """End of the preprocessor line starting at ``i`` (continuations included, newline
    excluded), or None when ``i`` does not start one or a bracket opened in it closes later."""
    if data[i] != ord("#") or data[data.rfind(b"\n", 0, i) + 1 : i].strip():
        return None
    j = i
    while True:
        nl = data.find(b"\n", j, hi)
        end = hi if nl < 0 else nl
        if nl >= 0 and data[j:nl].rstrip(b"\r").endswith(b"\\"):
            j = nl + 1
            continue
        break
    if any(i <= o < end < c for o, c in lexed.pairs.items()):
        return None
    return end


def _skip_space(data: bytes, i: int, hi: int) -> int:
    while i < hi and data[i] in _SPACE:
        i += 1
    return i


def _expand(data: bytes, raw: Sequence[_Raw], mode: str) -> list[Element]:
    """Grow element spans to whole lines where they own them; a trailing list element without
    its own comma takes the previous comma."""
    out: list[Element] = []
    for k, r in enumerate(raw):
        start, end = r.start, r.end
        line_start = data.rfind(b"\n", 0, start) + 1
        nl = data.find(b"\n", end)
        line_end = len(data) if nl < 0 else nl + 1
        own_start = not data[line_start:start].strip()
        own_end = not data[end:line_end].strip()
        previous_sep = raw[k - 1].sep if k > 0 else None
        if mode == "," and r.sep is None and previous_sep is not None:
            start = previous_sep  # the line break after the element stays
        elif own_start and own_end:
            start, end = line_start, line_end
        out.append(Element(start, end, data.count(b"\n", 0, r.start) + 1))
    return out


__all__ = ["Element", "elements", "mode_of", "top_level"]
