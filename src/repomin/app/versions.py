"""The versions of the tools that produced the failure, for the people who read the report.

A reproducer is read with "which Python, which pytest, which compiler?" in mind: the same tree
can fail on one version and pass on the next. So each tool the command names is asked for its
version, once, and the first line it prints is recorded: ``python3`` -> ``Python 3.11.7``,
``python -m pytest`` -> ``pytest 9.2.0``, ``node`` -> ``v20.20.0``, ``gcc`` -> ``gcc (Debian
12.2.0-14) 12.2.0``; plus the operating system under ``os``. These are not samples: they run no
part of the tree, and a tool that is missing or does not answer is left out. Only tools named by
a bare name (found on ``PATH``) or an absolute path are asked; a relative path names a file of
the tree, which runs only inside a sample.

Where they are asked follows where the samples ran:

* **On this machine** (the host backend, no cluster): :func:`probe_versions` asks them the way
  the user's own shell would find them (their ``PATH`` and environment, plus ``--env``), in a
  scratch directory, each within :data:`PROBE_TIMEOUT` seconds; ``os`` is
  ``platform.platform()``.
* **Elsewhere** (a Docker image, cluster workers): :func:`probe_through` asks them *through the
  runner*, so the answers are those of the image or the worker the samples ran on: one run of
  :func:`probe_script` on an empty tree, with the samples' explicit environment, under a sample
  id that is not an oracle sample's (:data:`~repomin.runners.base.TRACE_SAMPLE_ID`: it is no
  evidence and the live display leaves it out of "runs"). Decision: the image's operating
  system goes under the same ``os`` key (its ``/etc/os-release`` ``PRETTY_NAME`` and ``uname
  -srm``), since it is the system the tools ran on; the report's ``execution`` says which
  backend that was. The run's output is hostile and parsed defensively
  (:func:`parse_probe_output`): each probe's output follows a marker line random per probe and
  per run, a marker seen twice drops its probe (so a tool's output can erase another's entry
  but never forge it), every line is bounded and stripped of non-printable characters, and a
  run that fails, times out or is interrupted gives no versions; it never fails the reduction.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence

from repomin.analysis.refs.graph import command_tokens
from repomin.failure.normalise import strip_ansi
from repomin.runners.base import TRACE_SAMPLE_ID, Runner, RunRequest
from repomin.tree import Tree

log = logging.getLogger(__name__)

#: Seconds a tool may take to print its version.
PROBE_TIMEOUT = 10.0

#: Longest version line recorded.
VERSION_LIMIT = 200

#: Lines of each probe's output the probe script passes on, and characters per line.
PROBE_LINES = 5
PROBE_LINE_CHARS = 400

#: Labels of the operating system's two probes in :func:`probe_script` (``os`` in the report).
OS_RELEASE, OS_KERNEL = "os-release", "os"

#: Tool name (a command's basename) -> the arguments that make it print its version.
VERSION_FLAGS: dict[str, tuple[str, ...]] = {
    "python": ("--version",),
    "pytest": ("--version",),
    "node": ("--version",),
    "npm": ("--version",),
    "tsc": ("--version",),
    "java": ("-version",),
    "javac": ("-version",),
    "mvn": ("-v",),
    "gradle": ("--version",),
    "gcc": ("--version",),
    "g++": ("--version",),
    "cc": ("--version",),
    "c++": ("--version",),
    "clang": ("--version",),
    "clang++": ("--version",),
    "make": ("--version",),
    "cmake": ("--version",),
    "rustc": ("--version",),
    "cargo": ("--version",),
    "go": ("version",),
}
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")


def tools_of(command: str) -> list[tuple[str, list[str]]]:
    """(label, argv) of each version probe for the tools ``command`` names, each once;
    ``python -m pytest`` asks that interpreter for its pytest."""
    tokens = command_tokens(command)
    probes: dict[str, list[str]] = {}
    for index, token in enumerate(tokens):
        if "/" in token and not token.startswith("/"):
            continue  # a path into the tree: never run outside a sample
        name = token.rsplit("/", 1)[-1]
        if _PYTHON.match(name):
            probes.setdefault(name, [token, "--version"])
            if tokens[index + 1 : index + 3] == ["-m", "pytest"]:
                probes.setdefault("pytest", [token, "-m", "pytest", "--version"])
        elif name in VERSION_FLAGS:
            probes.setdefault(name, [token, *VERSION_FLAGS[name]])
    return list(probes.items())


def probe_versions(command: str, env: Mapping[str, str]) -> dict[str, str]:
    """The operating system and the first line each named tool prints for its version."""
    found = {"os": platform.platform()}
    environ = {**os.environ, **env}
    with tempfile.TemporaryDirectory(prefix="repomin-versions-") as scratch:
        for label, argv in tools_of(command):
            if shutil.which(argv[0], path=environ.get("PATH")) is None:
                continue
            line = _first_line(argv, environ, scratch)
            if line:
                found[label] = line
    return found


def _first_line(argv: list[str], env: Mapping[str, str], cwd: str) -> str | None:
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = (proc.stdout + b"\n" + proc.stderr).decode("utf-8", "replace")
    for line in text.splitlines():
        clean = _clean(line)
        if clean:
            return clean
    return None


def _clean(line: str) -> str:
    """A line as recorded: no terminal escapes, non-printable characters or undecodable bytes
    (U+FFFD), tabs as spaces, at most :data:`VERSION_LIMIT` characters."""
    bounded = strip_ansi(line[: VERSION_LIMIT * 4]).replace("\t", " ")
    kept = "".join(ch for ch in bounded if ch.isprintable() and ch != "\ufffd")
    return kept.strip()[:VERSION_LIMIT]


# -- through a runner (a Docker image, cluster workers) ----------------------------------------


def probe_script(probes: Sequence[tuple[str, list[str]]], markers: Mapping[str, str]) -> str:
    """A POSIX shell script that prints, for each probe whose tool exists, its marker line
    (``markers[label]``), the first :data:`PROBE_LINES` lines of what the tool prints (stdout
    and stderr, each line cut to :data:`PROBE_LINE_CHARS` characters, within
    :data:`PROBE_TIMEOUT` seconds where ``timeout`` works) and a status line (the marker,
    ``-rc``, the tool's exit status); then the operating system's ``PRETTY_NAME`` line and
    ``uname -srm`` under the markers of :data:`OS_RELEASE` and :data:`OS_KERNEL`. Exits 0."""
    limit = f"head -n {PROBE_LINES} | cut -c 1-{PROBE_LINE_CHARS}"
    lines = [
        f"t=; if timeout {int(PROBE_TIMEOUT)} true >/dev/null 2>&1; then "
        f"t='timeout {int(PROBE_TIMEOUT)}'; fi",
        "r=./.repomin-probe-status",
    ]
    for label, argv in probes:
        words = " ".join(shlex.quote(word) for word in argv)
        mark = markers[label]
        lines.append(
            f"if command -v {shlex.quote(argv[0])} >/dev/null 2>&1; then "
            f"rm -f \"$r\"; printf '\\n%s\\n' {mark}; "
            f'{{ $t {words} </dev/null 2>&1; echo $? >"$r"; }} | {limit}; '
            f'printf \'\\n%s %s\\n\' {mark}-rc "$(cat "$r" 2>/dev/null)"; fi'
        )
    lines += [
        f"printf '\\n%s\\n' {markers[OS_RELEASE]}; cat /etc/os-release 2>/dev/null "
        f"| grep '^PRETTY_NAME=' | {limit}",
        f"printf '\\n%s\\n' {markers[OS_KERNEL]}; uname -srm 2>/dev/null | {limit}",
        "exit 0",
    ]
    return "\n".join(lines) + "\n"


#: Exit statuses of a probe that still count: success, and SIGPIPE once ``head`` had enough.
_ANSWERED = frozenset(("", "0", "141"))


def parse_probe_output(output: bytes, markers: Mapping[str, str]) -> dict[str, str]:
    """label -> the first non-empty line after its marker (see :func:`_clean`), up to the next
    marker or status line. Left out: a label whose marker or status line appears more than
    once (another probe's output forged it), whose status says the tool failed (``python3 -m
    pytest`` without pytest, a timeout), or whose marker never appears (a missing tool)."""
    label_of = {marker: label for label, marker in markers.items()}
    status_of = {f"{marker}-rc": label for label, marker in markers.items()}
    first: dict[str, str] = {}
    seen: set[str] = set()
    dropped: set[str] = set()
    current: str | None = None
    for line in output.decode("utf-8", "replace").splitlines():
        words = line.strip().split(" ")
        if len(words) == 1 and words[0] in label_of:
            current = label_of[words[0]]
            (dropped if current in seen else seen).add(current)
        elif len(words) <= 2 and words[0] in status_of:
            label, current = status_of[words[0]], None
            (dropped if f"{label}-rc" in seen else seen).add(f"{label}-rc")
            if (words[1] if len(words) == 2 else "") not in _ANSWERED:
                dropped.add(label)
        elif current is not None and current not in first:
            clean = _clean(line)
            if clean:
                first[current] = clean
    return {label: text for label, text in first.items() if label not in dropped}


def probe_through(runner: Runner, command: str, env: Mapping[str, str]) -> dict[str, str] | None:
    """The versions of the tools ``command`` names and the operating system, as the samples of
    ``runner`` see them: one run of :func:`probe_script` on an empty tree. None when that run
    fails, times out or is interrupted (never raises: the versions are descriptive)."""
    probes = tools_of(command)
    markers = {label: f"repomin-probe-{secrets.token_hex(16)}" for label, _ in probes}
    markers |= {k: f"repomin-probe-{secrets.token_hex(16)}" for k in (OS_RELEASE, OS_KERNEL)}
    timeout = PROBE_TIMEOUT * (len(probes) + 2)
    request = RunRequest(probe_script(probes, markers), dict(env), timeout, TRACE_SAMPLE_ID)
    try:
        outcome = runner.run(Tree.of({}), request)
    except Exception as exc:  # the versions are descriptive: never fatal
        log.warning("versions: the probe run failed: %s", exc)
        return None
    failed = outcome.timed_out or outcome.infrastructure_error or outcome.exit_code != 0
    if failed:
        log.warning("versions: the probe run failed (exit %s)", outcome.exit_code)
        return None
    found = parse_probe_output(outcome.stdout, markers)
    return _with_os(found)


def _with_os(found: dict[str, str]) -> dict[str, str]:
    """``os``: ``PRETTY_NAME (uname -srm)``, either alone when the other is missing."""
    release = found.pop(OS_RELEASE, "").removeprefix("PRETTY_NAME=").strip().strip("\"'")
    kernel = found.pop(OS_KERNEL, "")
    text = f"{release} ({kernel})" if release and kernel else release or kernel
    versions = {label: line for label, line in found.items()}
    if text:
        versions["os"] = text[:VERSION_LIMIT]
    return versions
