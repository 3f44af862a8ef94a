"""Trace-guided first cut: which files of the tree does one run of the command touch?

After the baseline, one extra sample runs the command wrapped in a small POSIX shell script:

* **strace** (when ``strace`` is on the sample's ``PATH`` and ptrace is permitted):
  ``strace -f -qq -y -s 4096 -e trace=%file,fchdir`` logs every path-taking system call of the
  command and its children. ``-y`` annotates descriptors with their paths, so relative paths
  resolve against the directory descriptor or the process's working directory, and opened
  descriptors show the real file behind a symlink. ``--seccomp-bpf`` (when this strace has
  it) stops only at the traced calls: the same log, 0.24 s instead of 0.37 s for a small run.
* **atime** (otherwise, when the sample's filesystem records access times): every file's
  access time is set to 1970 before the run, and the files read during it are those with a
  recent one afterwards (``find -atime -1``). A probe file checks first that reads do update
  access times (not on ``noatime`` mounts). Coarser than strace: a file only ``stat``-ed or
  listed is not seen.

Where the log goes: with the host backend it is written to a private directory on the host,
outside the sample directory (which the runner deletes), so its size is unbounded; its name
carries ReproMin's PID, and directories of dead runs are removed before the next traced run.
With any other backend (Docker) it is written to ``$TMPDIR`` inside the sample and printed to stderr
after the command, between random markers; the runner keeps 1 MiB of head and tail, and a log
cut by that truncation is discarded, never half-used. In a container without ``strace`` the
atime method is used when the container filesystem supports it; otherwise the trace is
``unavailable`` and the reason is recorded in the events.

**Source access check**: when samples can see SRC (no namespace could be made, see
:mod:`repomin.runners.sandbox`), the strace log is also searched for the first system call whose
path argument lies under SRC's absolute path (``forbidden``); the caller stops the reduction
on it unless ``--allow-src-access``. Only path arguments of calls count (not ``argv`` strings),
failed calls included: an attempt that finds SRC's copy is exactly what would break the payload.

The traced sample is not an oracle sample and is no evidence for anything: it only yields a
*proposal* (delete every file never touched) that the oracle then accepts or rejects like any
other candidate. A wrong trace costs one rejected candidate.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shlex
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from repomin.analysis.javacoverage import JCOV_DIR, jvm_options, read_javacoverage
from repomin.analysis.pycoverage import PYCOV_DIR, install, read_pycoverage
from repomin.analysis.records import relative_to_roots
from repomin.analysis.v8coverage import COVERAGE_DIR, FileCoverage, read_coverage
from repomin.runners.base import TRACE_SAMPLE_ID, Outcome, Runner, RunRequest
from repomin.runners.scratch import make_sink, read_regular
from repomin.tree import Tree

log = logging.getLogger(__name__)

#: Values of ``execution.trace`` in the report.
TRACE_METHODS = ("strace", "atime", "unavailable", "disabled")

#: The traced run may take this many times the configured timeout (ptrace slows syscalls).
TIMEOUT_FACTOR = 3.0

_TRUNCATION = b"[... repomin: output truncated ...]"
#: Most bytes read from one file of a host trace sink (a larger log is cut, never trusted whole).
SINK_LIMIT = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TraceResult:
    """What the traced run saw: tree-relative paths it touched, or why there is no answer."""

    method: str
    opened: frozenset[str] | None
    reason: str
    duration: float = 0.0
    exit_code: int | None = None
    reproduced: bool | None = None
    #: The first path under a ``forbidden`` root the command reached (strace only).
    forbidden_access: str | None = None
    #: The paths of ``opened`` in the order the run first named them (strace: log order, so
    #: entry points come before what they load); empty when the method gives no order.
    order: tuple[str, ...] = ()
    #: Node's V8 coverage of the run's files (``repomin.analysis.v8coverage``; host log only), or
    # None.
    coverage: Mapping[str, FileCoverage] | None = None
    #: Paths outside the tree the run named (strace, host log only), each once in log order,
    #: with whether its first call found it: ``~/...`` under the sample's HOME, else absolute.
    #: What the user's own shell may see differently (:mod:`repomin.app.user_shell`).
    outside: tuple[tuple[str, bool], ...] = ()

    @property
    def usable(self) -> bool:
        return self.opened is not None


def disabled(reason: str = "disabled with --no-trace") -> TraceResult:
    return TraceResult("disabled", None, reason)


def wrapper_script(command: str, sink: str | None, token: str, methods: Sequence[str]) -> str:
    """The POSIX shell script that runs ``command`` traced. ``sink`` is an absolute host
    directory for the log, or None to print it to stderr between markers."""
    directory = shlex.quote(sink) if sink else '"${TMPDIR:-/tmp}/.repomin-trace-' + token + '"'
    quoted = shlex.quote(with_python_hook(command, sink) if sink else command)
    strace = (
        "command -v strace >/dev/null 2>&1 && strace -qq -o /dev/null true >/dev/null 2>&1"
        if "strace" in methods
        else "false"
    )
    atime = "true" if "atime" in methods else "false"
    # Node's coverage, outside the tree (repomin.analysis.v8coverage)
    coverage_dir = f'"$__rm_d/{COVERAGE_DIR}"'
    cover = (
        f'[ -n "${{NODE_V8_COVERAGE+x}}" ] || export NODE_V8_COVERAGE={coverage_dir}\n'
        f'export PYTHONPATH="$__rm_d/{PYCOV_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
        if sink
        else ""
    )
    if sink and shlex.quote(sink) == sink:  # the JVM splits its options at spaces
        jcov = f"{sink}/{JCOV_DIR}"
        cover += (
            f'mkdir -p "{jcov}" && export JDK_JAVA_OPTIONS="{jvm_options(jcov)}'
            '${JDK_JAVA_OPTIONS:+ $JDK_JAVA_OPTIONS}"\n'
        )
    script = f"""
__rm_d={directory}
mkdir -p "$__rm_d" || exit 125
pwd > "$__rm_d/root"; pwd -P >> "$__rm_d/root"; printf '%s\n' "$HOME" > "$__rm_d/home"
{cover}if {strace}; then
  echo strace > "$__rm_d/method"
  strace -f -qq --seccomp-bpf -e trace=%file -o /dev/null true >/dev/null 2>&1 \\
    && __rm_s=--seccomp-bpf || __rm_s=
  strace -f -qq $__rm_s -y -s 4096 -e trace=%file,fchdir -e signal=none -o "$__rm_d/log" \\
    /bin/sh -c {quoted}
  __rm_rc=$?
else
  __rm_p=.repomin-atime-probe-{token}
  __rm_ok=
  if {atime} && : > "$__rm_p" 2>/dev/null && touch -a -t 197001010000 "$__rm_p" 2>/dev/null \\
      && cat "$__rm_p" >/dev/null && [ -n "$(find "$__rm_p" -atime -1 2>/dev/null)" ]; then
    __rm_ok=1
  fi
  rm -f "$__rm_p"
  if [ -n "$__rm_ok" ]; then
    echo atime > "$__rm_d/method"
    find . -type f -exec touch -a -t 197001010000 {{}} + 2>/dev/null
    /bin/sh -c {quoted}
    __rm_rc=$?
    find . -type f -atime -1 > "$__rm_d/log" 2>/dev/null
  else
    echo none > "$__rm_d/method"
    /bin/sh -c {quoted}
    __rm_rc=$?
  fi
fi
"""
    if sink is None:
        script += f"""{{
  printf '\\n@@repomin-trace-begin-{token}@@\\n'
  cat "$__rm_d/method" "$__rm_d/root"
  echo @@repomin-trace-log-{token}@@
  cat "$__rm_d/log" 2>/dev/null
  printf '\\n@@repomin-trace-end-{token}@@\\n'
}} >&2
rm -rf "$__rm_d"
"""
    return script + 'exit "$__rm_rc"\n'


_PYTHONPATH_WORD = re.compile(r"(^|[\s;&|(`'\"])PYTHONPATH=(?=[^\s;&|)])")


def with_python_hook(command: str, sink: str) -> str:
    """``command`` with the Python start-up hook's directory in front of every non-empty
    ``PYTHONPATH=`` assignment it makes itself (``PYTHONPATH=src python -m pytest``), which would
    otherwise hide the one the wrapper exports (:mod:`repomin.analysis.pycoverage`). Only the
    traced run's command is changed, and only when the directory needs no quoting."""
    directory = f"{sink}/{PYCOV_DIR}"
    if shlex.quote(directory) != directory:
        return command
    return _PYTHONPATH_WORD.sub(lambda m: f"{m[1]}PYTHONPATH={directory}:", command)


def trace_opened_files(
    runner: Runner,
    tree: Tree,
    command: str,
    env: Mapping[str, str],
    timeout: float,
    *,
    methods: Sequence[str] = ("strace", "atime"),
    in_band: bool | None = None,
    reproduces: Callable[[Outcome], bool] | None = None,
    forbidden: Sequence[str] = (),
) -> TraceResult:
    """Run ``command`` once on ``tree`` under a tracer; never raises for a tracing problem.

    ``in_band`` forces the stderr transport (default: only for non-host backends and clusters).
    ``reproduces`` (the failure contract) is only used to say in the event whether the traced
    run failed the same way.
    """
    token = secrets.token_hex(8)
    sink = _make_sink(runner, in_band)
    request = RunRequest(
        wrapper_script(command, sink, token, methods),
        env,
        timeout * TIMEOUT_FACTOR,
        TRACE_SAMPLE_ID,
    )
    run = _run_traced(runner, tree, request, sink, token)
    if isinstance(run, TraceResult):
        return run
    outcome = run.outcome
    reproduced = reproduces(outcome) if reproduces is not None else None
    method, opened, reason, order, reached = _read_log(run, tree, forbidden)
    found = (method, opened, reason, run.duration, outcome.exit_code, reproduced, reached)
    outside = _outside(run, sink) if method == "strace" else ()
    return TraceResult(*found, tuple(order), run.coverage, outside)


def _outside(run: _TracedRun, sink: str | None) -> tuple[tuple[str, bool], ...]:
    """The log's accesses outside the tree (see :attr:`TraceResult.outside`), without
    ReproMin's own: the sample's directory (the tree's parent: its scratch) and the log's."""
    files = run.files or {}
    home = files.get("home", b"").decode("utf-8", "surrogateescape").strip()
    roots = _roots(files, run.outcome.workdir)
    own = [os.path.dirname(r) for r in roots] + ([sink] if sink else [])
    return outside_accesses(files.get("log", b"").splitlines(), roots, home or None, own)


@dataclass(frozen=True, slots=True)
class _TracedRun:
    """What one traced run left: its outcome (stderr without the in-band log) and the log."""

    outcome: Outcome
    duration: float
    #: The log's files (``method``, ``root``, ``log``), or None when it was lost.
    files: Mapping[str, bytes] | None
    #: Why the log is missing, should ``files`` lack it.
    lost: str
    coverage: dict[str, FileCoverage] | None


def _make_sink(runner: Runner, in_band: bool | None) -> str | None:
    """The host directory the log is written to, or None when it comes back on stderr."""
    # A cluster worker's host runner writes on its own machine: the log comes back in band.
    remote = runner.describe().get("dispatch_engine") is not None
    band = (runner.backend != "host" or remote) if in_band is None else in_band
    if band:
        return None
    sink = make_sink("repomin-trace-")
    install(sink / PYCOV_DIR)
    return str(sink)


def _run_traced(
    runner: Runner, tree: Tree, request: RunRequest, sink: str | None, token: str
) -> _TracedRun | TraceResult:
    """Run ``request`` and collect its log (removing ``sink`` after); a failed run's result."""
    started = time.monotonic()
    coverage: dict[str, FileCoverage] | None = None
    try:
        try:
            outcome = runner.run(tree, request)
        except Exception as exc:  # a tracing problem is never fatal
            log.warning("trace: the traced run failed: %s", exc)
            return TraceResult("unavailable", None, f"the traced run failed: {exc}")
        duration = time.monotonic() - started
        if sink is None:
            files, stderr, lost = _in_band(outcome.stderr, token)
        else:
            files, stderr, lost = _read_sink(Path(sink)), outcome.stderr, "no trace log was written"
            roots = _roots(files, outcome.workdir)
            node = read_coverage(Path(sink) / COVERAGE_DIR, roots, tree)
            python = read_pycoverage(Path(sink) / PYCOV_DIR, roots, tree)
            java = read_javacoverage(Path(sink) / JCOV_DIR, tree)
            if node is not None or python is not None or java is not None:
                coverage = {**(node or {}), **(python or {}), **(java or {})}
    finally:
        if sink is not None:
            shutil.rmtree(sink, ignore_errors=True)
    clean = Outcome(
        exit_code=outcome.exit_code,
        stdout=outcome.stdout,
        stderr=stderr,
        duration=outcome.duration,
        timed_out=outcome.timed_out,
        resource_exhausted=outcome.resource_exhausted,
        signal=outcome.signal,
        workdir=outcome.workdir,
        infrastructure_error=outcome.infrastructure_error,
    )
    return _TracedRun(clean, duration, files, lost, coverage)


def _read_log(
    run: _TracedRun, tree: Tree, forbidden: Sequence[str]
) -> tuple[str, frozenset[str] | None, str, Sequence[str], str | None]:
    """The run's log read: (method, paths opened, reason, their order, first forbidden path)."""
    outcome, files = run.outcome, run.files
    if outcome.infrastructure_error is not None:
        return "unavailable", None, f"backend error: {outcome.infrastructure_error}", (), None
    if outcome.timed_out:
        return "unavailable", None, "the traced run timed out", (), None
    if files is None or "method" not in files:
        return "unavailable", None, run.lost, (), None
    method = files.get("method", b"").strip().decode("ascii", "replace")
    roots = _roots(files, outcome.workdir)
    if method == "none" or method not in ("strace", "atime"):
        why = "neither strace nor access times are available in the sample's environment"
        return "unavailable", None, why, (), None
    if not roots:
        return "unavailable", None, "the sample's working directory is unknown", (), None
    body = files.get("log", b"")
    order: list[str] = []
    reached: str | None = None
    if method == "strace":
        order = strace_order(body.splitlines(), roots)
        opened = set(order)
        reached = first_access_under(body.splitlines(), forbidden) if forbidden else None
    else:
        opened = atime_paths(body.splitlines())
    reason = (
        f"{method}: the command touched {len(_in_tree(opened, tree))} of {tree.file_count} files"
    )
    return method, frozenset(opened), reason, order, reached


def _roots(files: Mapping[str, bytes] | None, workdir: str | None) -> list[str]:
    """The sample's working directory as the traced run saw it (logical, physical, runner's)."""
    roots = (files or {}).get("root", b"").decode("utf-8", "surrogateescape").splitlines()
    roots += [workdir] if workdir else []
    return [os.path.normpath(r) for r in roots if r.startswith("/")]


def _read_sink(sink: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name in ("method", "root", "home", "log"):
        # The sample wrote these: a symlink or FIFO reads as missing, a huge log is cut.
        data = read_regular(sink / name, SINK_LIMIT)
        if data is not None:
            out[name] = data
    return out


def _in_band(stderr: bytes, token: str) -> tuple[dict[str, bytes] | None, bytes, str]:
    """Cut the trace section out of stderr: (files, stderr without it, why it is missing)."""
    begin = f"\n@@repomin-trace-begin-{token}@@\n".encode()
    middle = f"@@repomin-trace-log-{token}@@\n".encode()
    end = f"\n@@repomin-trace-end-{token}@@\n".encode()
    b = stderr.rfind(begin)
    if b < 0:
        why = "no trace log came back (does the sample have a POSIX shell, mkdir and cat?)"
        return None, stderr, why
    e = stderr.find(end, b)
    section = stderr[b + len(begin) : e if e >= 0 else len(stderr)]
    if e < 0 or _TRUNCATION in section or middle not in section:
        return None, stderr[:b], "the trace log was truncated with the output (over 1 MiB)"
    head, _, body = section.partition(middle)
    method, _, root = head.partition(b"\n")
    return {"method": method, "root": root, "log": body}, stderr[:b], ""


_ARG = re.compile(rb'(?:(?:AT_FDCWD|-?\d+)<((?:[^>\\]|\\.)*)>, )?"((?:[^"\\]|\\.)*)"')
_FD = re.compile(rb"(?:AT_FDCWD|-?\d+)<((?:[^>\\]|\\.)*)>")
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)")
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"v": b"\v", b"f": b"\f"}


def _unescape(text: bytes) -> bytes:
    def one(m: re.Match[bytes]) -> bytes:
        code = m.group(1)
        if code[:1] == b"x":
            return bytes([int(code[1:], 16)])
        if code[:1].isdigit():
            return bytes([int(code, 8) & 0xFF])
        return _SIMPLE.get(code, code)

    return _ESCAPE.sub(one, text)


def strace_paths(lines: Iterable[bytes], roots: Sequence[str]) -> set[str]:
    """Tree-relative paths named in an ``strace -f -y`` log of ``%file`` calls (as a set)."""
    return set(strace_order(lines, roots))


def strace_order(lines: Iterable[bytes], roots: Sequence[str]) -> list[str]:
    """Tree-relative paths named in an ``strace -f -y`` log of ``%file`` calls, each once, in
    the order of the log line that first names it (the order the run first reached them).

    Every quoted string is taken as a path (argv strings included: a superset is harmless); a
    relative one resolves against its directory descriptor, else against *every* working
    directory seen in the log (processes can ``chdir``; over-approximating keeps more files,
    never fewer). Descriptor annotations (``3</abs/file>``) count too: they show the real file
    behind a symlink.
    """
    raw: list[tuple[int, bytes | None, bytes]] = []
    first: dict[bytes, int] = {}
    cwds: set[bytes] = {os.fsencode(r) for r in roots}
    for number, line in enumerate(lines):
        for m in _FD.finditer(line):
            path = _unescape(m.group(1))
            first.setdefault(path, number)
            if m.group(0).startswith(b"AT_FDCWD"):
                cwds.add(path)
        for m in _ARG.finditer(line):
            base = _unescape(m.group(1)) if m.group(1) is not None else None
            raw.append((number, base, _unescape(m.group(2))))
            if b"chdir(" in line[:40] and m.group(2) and base is None:
                target = _unescape(m.group(2))
                if target.startswith(b"/"):
                    cwds.add(target)
    for number, base, path in raw:
        if path.startswith(b"/"):
            found = [path]
        elif base is not None:
            found = [base + b"/" + path]
        else:
            found = [cwd + b"/" + path for cwd in sorted(cwds)]
        for absolute in found:
            if first.get(absolute, number + 1) > number:
                first[absolute] = number
    out: dict[str, int] = {}
    for path, number in sorted(first.items(), key=lambda item: (item[1], item[0])):
        rel = relative_to_roots(os.fsdecode(path), roots)
        if rel is not None and rel not in out:
            out[rel] = number
    return list(out)


_CALL = re.compile(
    rb"^\s*(?:\[pid\s+\d+\]\s*)?(?:\d+\s+)?[a-z_0-9]+\("
    rb'(?:(?:AT_FDCWD|-?\d+)<((?:[^>\\]|\\.)*)>, )?"((?:[^"\\]|\\.)*)"'
)


def first_access_under(lines: Iterable[bytes], roots: Sequence[str]) -> str | None:
    """The first path argument of a logged call (in log order) that lies under one of
    ``roots``: absolute, or relative to a directory descriptor under it."""
    prefixes = [os.path.normpath(r) for r in roots if r.startswith("/")]
    for line in lines:
        m = _CALL.match(line)
        norm = _call_path(m) if m is not None else None
        if norm is None:
            continue
        for root in prefixes:
            if norm == root or norm.startswith(root.rstrip("/") + "/"):
                return norm
    return None


def _call_path(m: re.Match[bytes]) -> str | None:
    """The normalised absolute path a logged call names (relative to its directory
    descriptor when it has one), or None for a relative path without one."""
    path = os.fsdecode(_unescape(m.group(2)))
    if not path.startswith("/"):
        if m.group(1) is None:
            return None
        path = os.fsdecode(_unescape(m.group(1))) + "/" + path
    return os.path.normpath(path)


#: A logged call's result: ``= 3``, ``= 0`` (found) or ``= -1 ENOENT`` (not there).
_RESULT = re.compile(rb"\)\s+=\s+(-?\d+)(?:\s+([A-Z]+))?")

#: At most this many outside paths are kept (a run can name thousands of system files).
OUTSIDE_LIMIT = 2000


#: Pseudo file systems: their paths name processes and devices of one run, not files a
#: user's environment has or lacks.
PSEUDO_ROOTS = ("/proc/", "/sys/", "/dev/")


def outside_accesses(
    lines: Iterable[bytes],
    roots: Sequence[str],
    home: str | None,
    own: Sequence[str] = (),
) -> tuple[tuple[str, bool], ...]:
    """Absolute paths a logged call named outside ``roots`` (the tree) and ``own`` (ReproMin's
    directories) and off the pseudo file systems, each once in log order, with whether that
    first call found it (a result >= 0; ``ENOENT``/``ENOTDIR``: not found; any other error
    says nothing and is skipped). A path under ``home`` is written ``~/...`` and kept, even
    where ``home`` lies inside ``own`` (the host runner's HOME is the sample's scratch)."""
    kept = [*roots, *own]
    prefixes = [os.path.normpath(r).rstrip("/") + "/" for r in kept if r.startswith("/")]
    prefixes += PSEUDO_ROOTS
    home_prefix = os.path.normpath(home).rstrip("/") + "/" if home else None
    seen: dict[str, bool] = {}
    for line in lines:
        m, result = _CALL.match(line), _RESULT.search(line)
        if m is None or result is None or len(seen) >= OUTSIDE_LIMIT:
            continue
        found = int(result.group(1)) >= 0
        if not found and result.group(2) not in (b"ENOENT", b"ENOTDIR"):
            continue
        norm = _call_path(m)
        if norm is None:
            continue
        if home_prefix and (norm + "/").startswith(home_prefix):  # HOME lies in ``own``
            norm = "~/" + norm[len(home_prefix) :] if norm + "/" != home_prefix else "~"
        elif any((norm + "/").startswith(p) for p in prefixes):
            continue
        seen.setdefault(norm, found)
    return tuple(seen.items())


def atime_paths(lines: Iterable[bytes]) -> set[str]:
    """Tree-relative paths from ``find . -type f -atime -1`` output."""
    out: set[str] = set()
    for line in lines:
        name = os.fsdecode(line.rstrip(b"\r"))
        if name.startswith("./"):
            out.add(os.path.normpath(name[2:]))
    return out


def _in_tree(paths: Iterable[str], tree: Tree) -> set[str]:
    return {p for p in paths if p in tree}
