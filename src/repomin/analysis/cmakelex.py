"""CMake's language, as far as ReproMin reads it: commands and their arguments, with offsets.

:func:`commands` reads a ``CMakeLists.txt`` or ``*.cmake`` file as CMake's grammar has it: a
command is a name, ``(``, arguments, ``)``; arguments are unquoted words, ``"quoted"`` strings
(with ``\\`` escapes) or ``[=[bracket]=]`` strings; ``#`` comments run to the end of the line
and ``#[[...]]`` bracket comments as far as they go; parentheses inside the arguments nest
(``if((a) AND b)``). :func:`well_formed` adds what CMake checks before it runs anything: the
blocks (``if``/``endif``, ``foreach``, ``while``, ``function``, ``macro``, ``block``) close in
order. Linear in the file's length; more than :data:`MAX_COMMANDS` commands and the file is not
read (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: At most this many commands are read per file.
MAX_COMMANDS = 20_000

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_SPACE = re.compile(rb"[ \t\r\n]*")
_BRACKET = re.compile(rb"\[(=*)\[")
_BRACKET_COMMENT = re.compile(rb"#\[(=*)\[")
#: A quoted argument (its escapes whole) and an unquoted one, as the scanner reads them.
_QUOTED = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_UNQUOTED = re.compile(rb'(?:[^ \t\r\n()#"\\]|\\.)+', re.S)
_BLOCKS = {
    b"if": b"endif",
    b"foreach": b"endforeach",
    b"while": b"endwhile",
    b"function": b"endfunction",
    b"macro": b"endmacro",
    b"block": b"endblock",
}
_CLOSERS = set(_BLOCKS.values())


@dataclass(frozen=True, slots=True)
class Arg:
    text: bytes
    start: int
    end: int
    quoted: bool


@dataclass(frozen=True, slots=True)
class Command:
    name: bytes  # lower case
    args: tuple[Arg, ...]
    start: int
    end: int


def commands(data: bytes) -> list[Command] | None:
    """The commands of a CMake file in order; None when it does not lex."""
    out: list[Command] = []
    i, n = _skip(data, 0), len(data)
    while i < n:
        m = _WORD.match(data, i)
        if m is None:
            return None
        j = m.end()
        while j < n and data[j : j + 1] in (b" ", b"\t"):
            j += 1
        if data[j : j + 1] != b"(":
            return None
        parsed = _arguments(data, j + 1)
        if parsed is None:
            return None
        args, end = parsed
        out.append(Command(m.group().lower(), tuple(args), i, end))
        if len(out) > MAX_COMMANDS:
            return None
        i = _skip(data, end)
    return out


def _skip(data: bytes, i: int) -> int:
    """``i`` moved past white space and comments."""
    n = len(data)
    while True:
        space = _SPACE.match(data, i)  # matches the empty string too
        i = space.end() if space is not None else i
        if i >= n or data[i] != ord("#"):
            return i
        i = _comment_end(data, i)


def _comment_end(data: bytes, i: int) -> int:
    bracket = _BRACKET_COMMENT.match(data, i)
    if bracket is not None:
        close = data.find(b"]" + bracket.group(1) + b"]", bracket.end())
        return len(data) if close < 0 else close + len(bracket.group(1)) + 2
    nl = data.find(b"\n", i)
    return len(data) if nl < 0 else nl


def _arguments(data: bytes, i: int) -> tuple[list[Arg], int] | None:
    """The arguments from just after ``(`` to the matching ``)``; (args, end after it)."""
    args: list[Arg] = []
    depth, n = 0, len(data)
    while (i := _skip(data, i)) < n:
        c = data[i]
        if c == ord("("):
            depth += 1
            i += 1
        elif c == ord(")"):
            if depth == 0:
                return args, i + 1
            depth -= 1
            i += 1
        elif c == ord('"'):
            quoted = _QUOTED.match(data, i)
            if quoted is None:
                return None  # not terminated
            args.append(Arg(data[i + 1 : quoted.end() - 1], i, quoted.end(), True))
            i = quoted.end()
        elif bracket := _BRACKET.match(data, i):
            close = data.find(b"]" + bracket.group(1) + b"]", bracket.end())
            if close < 0:
                return None
            end = close + len(bracket.group(1)) + 2
            args.append(Arg(data[bracket.end() : close], i, end, True))
            i = end
        else:
            word = _UNQUOTED.match(data, i)
            if word is None:
                return None  # a lone backslash at the end
            args.append(Arg(word.group(), i, word.end(), False))
            i = word.end()
    return None


def well_formed(data: bytes) -> bool:
    """Does ``data`` read as commands whose blocks close in order (what CMake checks first)?"""
    cmds = commands(data)
    if cmds is None:
        return False
    stack: list[bytes] = []
    for cmd in cmds:
        if cmd.name in _BLOCKS:
            stack.append(_BLOCKS[cmd.name])
        elif cmd.name in _CLOSERS and (not stack or stack.pop() != cmd.name):
            return False
    return not stack


def is_cmake(path: str) -> bool:
    """A CMake file by its name."""
    name = path.rsplit("/", 1)[-1]
    return name == "CMakeLists.txt" or name.endswith(".cmake")


__all__ = ["MAX_COMMANDS", "Arg", "Command", "commands", "is_cmake", "well_formed"]
