"""Which Java methods the traced run called: the Java analogue of Python's and Node's coverage.

The traced run (``repomin.analysis.trace``), when its log goes to a host directory (the host
backend), exports ``JDK_JAVA_OPTIONS`` (read by the ``java`` launcher only: not by ``javac``)
with HotSpot's diagnostic ``-XX:+LogTouchedMethods -XX:+PrintTouchedMethodsAtExit``, its VM
output sent to ``<log directory>/jcov/jvm-pid<N>.log`` instead of the terminal. Every JVM the
command starts with ``java`` (a driver, a test runner's forked JVM) writes, when it exits, the
methods it invoked at least once: ``org/x/Outer$Inner.name:(ILjava/lang/String;)V``. HotSpot 9
to 17 at least has the flags; ``-XX:+IgnoreUnrecognizedVMOptions`` makes a JVM without them
start as usual and write no list (no coverage). The launcher prints one ``NOTE: Picked up
JDK_JAVA_OPTIONS`` line to stderr, in the traced run only.

:func:`read_javacoverage` maps the records to the tree's ``.java`` files. A method is
identified by its class's nesting (``Outer$Inner``), its name and its number of parameters;
source methods that share all three are touched when any is (overloads with the same count are
not told apart, which only keeps more). Constructors, initializers, lambdas, anonymous and
local classes are left alone. Every other method with a body that never started -- in every
``.java`` file of the tree, once some JVM of the run touched a method of the tree -- is a
never-run body whose inside the ``coverage`` pass replaces with ``throw null;`` (valid in any
method whatever it returns: the signature, and so every caller, compiles as before).

Nothing here is evidence: the records only shape *proposals* the oracle decides. Records are
read as hostile input: regular files only, bounded in size and count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repomin.analysis.javalex import (
    IDENTIFIER,
    KEYWORDS,
    TYPE_KEYWORDS,
    assigns,
    java_tokens,
    parameters,
    params_start,
)
from repomin.analysis.v8coverage import FileCoverage
from repomin.runners.scratch import read_regular
from repomin.tree import Tree

#: The directory (inside the traced run's private log directory) the JVMs log into.
JCOV_DIR = "jcov"
#: Log files larger than this are skipped; at most :data:`MAX_RECORDS` are read.
MAX_RECORD_BYTES = 64 * 1024 * 1024
MAX_RECORDS = 256
#: What a never-run method's body becomes.
FILL = b"throw null;"
_HEADER = "# Method::print_touched_methods version 1"
_RECORD = re.compile(r"^([\w$/]+)\.([\w$]+|<init>|<clinit>):\(([^)]*)\)")


def jvm_options(directory: str) -> str:
    """The ``JDK_JAVA_OPTIONS`` words that make every ``java`` log its touched methods into
    ``directory`` (which must need no quoting)."""
    return (
        "-XX:+IgnoreUnrecognizedVMOptions -XX:+UnlockDiagnosticVMOptions "
        "-XX:+LogTouchedMethods -XX:+PrintTouchedMethodsAtExit "
        f"-XX:-DisplayVMOutput -XX:+LogVMOutput -XX:LogFile={directory}/jvm-%p.log"
    )


# -- the records --------------------------------------------------------------------------------

#: A touched method: (binary class name with ``/``, method name, number of parameters).
Touched = tuple[str, str, int]


def touched_methods(directory: Path) -> set[Touched] | None:
    """Every method some JVM logged as touched, or None when no log holds the list."""
    try:
        names = sorted(p for p in directory.iterdir() if p.suffix == ".log")[:MAX_RECORDS]
    except OSError:
        return None
    found: set[Touched] | None = None
    for name in names:
        data = read_regular(name, MAX_RECORD_BYTES + 1)
        if data is None or len(data) > MAX_RECORD_BYTES:
            continue
        methods = _parse_log(data.decode("utf-8", "replace"))
        if methods is not None:
            found = (found or set()) | methods
    return found


def _parse_log(text: str) -> set[Touched] | None:
    at = text.find(_HEADER)
    if at < 0:
        return None
    out: set[Touched] = set()
    for line in text[at + len(_HEADER) :].splitlines():
        line = line.strip().replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        if line.startswith("<"):
            break
        match = _RECORD.match(line)
        if match is not None:
            count = descriptor_arity(match[3])
            if count is not None:
                out.add((match[1], match[2], count))
    return out


def descriptor_arity(params: str) -> int | None:
    """The number of parameters of a JVM descriptor's parameter part (``I[JLjava/a/B;``: 3)."""
    count = i = 0
    while i < len(params):
        while i < len(params) and params[i] == "[":
            i += 1
        if i >= len(params):
            return None
        if params[i] == "L":
            end = params.find(";", i)
            if end < 0:
                return None
            i = end + 1
        elif params[i] in "BCDFIJSZ":
            i += 1
        else:
            return None
        count += 1
    return count


# -- the sources --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JavaMethod:
    """A method with a body: its classes' nesting, name, parameter count and body's inside,
    and whether it returns ``void`` (its body may then simply end)."""

    classes: tuple[str, ...]
    name: str
    arity: int
    start: int
    end: int
    void: bool = False


def java_methods(data: bytes) -> list[JavaMethod] | None:
    """The methods with a body declared directly in the class bodies of ``data`` (nested
    classes included, constructors and anything inside a method not), or None when the file
    does not lex or its braces do not balance."""
    tokens = java_tokens(data)
    if tokens is None:
        return None
    methods: list[JavaMethod] = []
    # each open brace: ("class", name) | ("enum", name) before its ';' | ("other", "")
    stack: list[tuple[str, str]] = []
    header: list[bytes] = []
    for index, (offset, text) in enumerate(tokens):
        if text == b"{":
            kind = _open(stack, header)
            if kind[0] == "method":
                close = _matching(tokens, index)
                if close is None:
                    return None
                classes = tuple(name for k, name in stack if k in ("class", "enum", "enumbody"))
                methods.append(
                    JavaMethod(
                        classes,
                        kind[1],
                        parameters(header)[0],
                        offset + 1,
                        tokens[close][0],
                        b"void" in header[: params_start(header) or 0],
                    )
                )
                stack.append(("other", ""))
            else:
                stack.append(kind)
            header = []
        elif text == b"}":
            if not stack:
                return None
            stack.pop()
            header = []
        elif text == b";":
            if stack and stack[-1][0] == "enum":
                stack[-1] = ("enumbody", stack[-1][1])
            header = []
        else:
            header.append(text)
    return methods if not stack else None


def _open(stack: Sequence[tuple[str, str]], header: Sequence[bytes]) -> tuple[str, str]:
    """What the brace after ``header`` opens, given the enclosing braces."""
    in_class = bool(stack) and stack[-1][0] in ("class", "enumbody")
    for k, word in enumerate(header[:-1]):
        name = header[k + 1].decode()
        if (
            word.decode() in TYPE_KEYWORDS
            and (k == 0 or header[k - 1] != b".")
            and IDENTIFIER.fullmatch(name)
            and name not in KEYWORDS
        ):
            if stack and not in_class:
                return ("local", name)  # a local class: its binary name is Outer$1Name
            return ("enum" if word == b"enum" else "class", name)
    if not in_class or not header or assigns(header):
        return ("other", "")
    params = params_start(header)
    if params is None or params == 0:
        return ("other", "")
    name = header[params - 1].decode()
    if not IDENTIFIER.fullmatch(name) or name in KEYWORDS or name == stack[-1][1]:
        return ("other", "")  # a constructor, or not a method
    return ("method", name)


def _matching(tokens: Sequence[tuple[int, bytes]], index: int) -> int | None:
    depth = 0
    for k in range(index, len(tokens)):
        text = tokens[k][1]
        if text == b"{":
            depth += 1
        elif text == b"}":
            depth -= 1
            if depth == 0:
                return k
    return None


# -- records to files ---------------------------------------------------------------------------


def read_javacoverage(directory: Path, tree: Tree) -> dict[str, FileCoverage] | None:
    """The never-run method bodies of ``tree``'s ``.java`` files (None: no record, or no method
    of the tree among the records). Each record keeps the touched set, so that the bodies of a
    file edited since can be found again by method (:func:`never_run_methods`)."""
    touched = touched_methods(directory)
    if not touched:
        return None
    frozen = frozenset(touched)
    outers = {binary.split("$", 1)[0] for binary, _, _ in touched}
    out: dict[str, FileCoverage] = {}
    seen_tree = False
    for path, entry in sorted(tree.entries.items()):
        if entry.kind != "file" or not path.endswith(".java"):
            continue
        package = _package(entry.data)
        methods = java_methods(entry.data) or []
        seen_tree = seen_tree or any(
            (package + "$".join(m.classes)).split("$", 1)[0] in outers for m in methods
        )
        never = never_run_methods(entry.data, frozen)
        if never:
            out[path] = FileCoverage(entry.data, never, frozen)
    return out if seen_tree else None


def never_run_methods(
    data: bytes, touched: frozenset[Touched]
) -> tuple[tuple[int, int, bool], ...]:
    """The bodies of ``data``'s methods that are not in ``touched`` and not already empty or
    ``throw null;`` (by class nesting, name and parameter count, so they are found again in a
    file edited since the traced run)."""
    methods = java_methods(data)
    if methods is None:
        return ()
    package = _package(data)
    never: list[tuple[int, int, bool]] = []
    for method in methods:
        binary = package + "$".join(method.classes)
        if (binary, method.name, method.arity) in touched:
            continue
        if data[method.start : method.end].strip() not in (b"", FILL):
            never.append((method.start, method.end, True))
    return tuple(never)


def void_bodies(data: bytes) -> frozenset[int]:
    """The starts of the bodies of ``data``'s ``void`` methods: emptied, they become ``{}``
    (valid, and 11 bytes fewer than ``throw null;``)."""
    return frozenset(m.start for m in java_methods(data) or () if m.void)


_PACKAGE = re.compile(rb"^\s*package\s+([\w.\s]+?)\s*;", re.M)


def _package(data: bytes) -> str:
    """The binary-name prefix of the file's package (``org/x/``; empty for the default one)."""
    match = _PACKAGE.search(data)
    if match is None:
        return ""
    return re.sub(rb"\s+", b"", match[1]).decode("utf-8", "replace").replace(".", "/") + "/"


__all__ = [
    "FILL",
    "JCOV_DIR",
    "JavaMethod",
    "descriptor_arity",
    "java_methods",
    "jvm_options",
    "never_run_methods",
    "read_javacoverage",
    "touched_methods",
    "void_bodies",
]
