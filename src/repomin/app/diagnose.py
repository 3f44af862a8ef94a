"""Diagnosing a set-up that does not reproduce: what a run did, and whether ignores hid it.

* :func:`describe_run` explains one run that did not reproduce -- its exit status (or signal,
  timeout), which part of the failure contract failed (``--match``, ``--exit-code``, the
  signature) and the last lines of its output, bounded and escaped so that nothing the command
  printed can drive the terminal. :class:`BaselineWatch` is an ``Oracle.on_sample`` hook that
  shows the first such baseline run at once (not after all baseline runs) and keeps a one-line
  :attr:`BaselineWatch.note` for the final error. A run that ends while ReproMin is stopping
  (Ctrl-C, SIGTERM: ReproMin killed it) is never diagnosed.
* :func:`check_ignored` runs the command once on the *unfiltered* tree when the baseline did
  not reproduce and the selection ignored something: if that run reproduces, the ignored paths
  are needed, and it raises :class:`UsageError` (exit 2) naming them with file counts per rule
  and the option that keeps them.
* :func:`your_shell_note` says what one run in the user's own shell showed when the baseline
  did not reproduce (the caller makes that run: ``repomin.app.pipeline``): when the failure
  reproduces there, the difference is the samples' environment, most often their fresh empty
  HOME, and the note names what the samples looked for under HOME that the user's HOME has
  (:func:`home_reads`, from a traced run), else the usual toolchain directories the user's HOME
  has (:func:`home_paths_present`), and the fix: ``--home inherit``.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from repomin.app.selection import DEFAULT_IGNORED_NAMES, Selection, SelectionOptions, select
from repomin.errors import BaselineError, ReproMinError, UsageError
from repomin.failure.contract import FailureContract
from repomin.runners.base import Outcome
from repomin.tree import Tree

if TYPE_CHECKING:
    from repomin.app.progress import Progress
    from repomin.sampling.oracle import Oracle
    from repomin.sampling.verdict import Baseline

#: Output shown for a failed run: at most this many lines, each at most LINE_CHARS.
TAIL_LINES = 12
LINE_CHARS = 200
#: The unfiltered tree is read for the ignore check only up to this size (it is held in memory).
UNFILTERED_LIMIT = 256 * 1024 * 1024

#: Where toolchains, packages and their settings commonly live under HOME (globs): rustup and
#: cargo, ``pip install --user``, Maven, Gradle, npm, nvm, pyenv, SDKMAN!, and their kin.
COMMON_HOME_PATHS = (
    ".rustup",
    ".cargo",
    ".local/lib/python*/site-packages",
    ".m2",
    ".gradle",
    ".npm",
    ".npmrc",
    ".nvm",
    ".pyenv",
    ".sdkman",
    ".rbenv",
    ".gem",
    ".volta",
    ".asdf",
    ".ivy2",
    ".sbt",
    ".cabal",
    ".ghcup",
    ".stack",
    ".opam",
    ".nuget",
    ".dotnet",
    ".julia",
    ".deno",
    ".bun",
    "go",
    ".config/pip",
    ".gitconfig",
)
#: At most this many paths under HOME are named in one note.
HOME_NAMED = 6


def check_command(command: str) -> None:
    """An empty or blank ``--command`` is bad input (it can never show a failure)."""
    if not command.strip():
        raise UsageError(
            "--command is empty; pass the shell command that fails, e.g. --command 'make test'"
        )


def escape(text: str) -> str:
    """Printable text: control characters (ANSI escapes included) become ``\\xNN`` escapes."""
    out: list[str] = []
    for ch in text:
        if ch == "\t":
            out.append("    ")
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def output_tail(outcome: Outcome, lines: int = TAIL_LINES) -> list[str]:
    """The last non-blank ``lines`` lines of stdout+stderr, escaped and cut to LINE_CHARS."""
    text = outcome.output.replace("\r\n", "\n").replace("\r", "\n")
    kept = [line for line in text.split("\n") if line.strip()][-lines:]
    return [
        escape(line) if len(line) <= LINE_CHARS else escape(line[:LINE_CHARS]) + " [...]"
        for line in kept
    ]


def status_text(outcome: Outcome) -> str:
    if outcome.infrastructure_error is not None:
        return f"backend error ({escape(outcome.infrastructure_error)[:LINE_CHARS]})"
    if outcome.timed_out:
        return f"timed out after {outcome.duration:.1f} s (raise --timeout)"
    if outcome.resource_exhausted:
        return "hit a resource limit"
    if outcome.signal is not None:
        try:
            name = signal.Signals(outcome.signal).name
        except ValueError:
            name = f"signal {outcome.signal}"
        return f"killed by {name}"
    return f"exit code {outcome.exit_code}"


def contract_checks(contract: FailureContract, outcome: Outcome) -> list[str]:
    """One phrase per part of the contract, saying whether this run satisfied it."""
    spec = contract.spec
    checks: list[str] = []
    if spec.match is not None:
        found = re.search(spec.match, contract.searched_text(outcome)) is not None
        verdict = "matched" if found else "not found in the output"
        if not found and re.search(spec.match, outcome.output) is not None:
            verdict = (
                "found only in source lines the tool echoed (which do not count: match the "
                "error's own text)"
            )
        checks.append(f"--match {escape(repr(spec.match))} {verdict}")
    if spec.exit_code is not None:
        same = outcome.exit_code == spec.exit_code
        verdict = "matched" if same else f"differs (got {outcome.exit_code})"
        checks.append(f"--exit-code {spec.exit_code} {verdict}")
    mode = contract.mode
    if mode is not None:
        flag = "--" + mode.flag.replace("_", "-")
        observed = mode.extract(outcome)
        if observed is None:
            checks.append(f"{flag}: no such failure in the output")
        elif contract.signature is None:
            checks.append(f"{flag}: a failure of this kind is visible")
        else:
            same = mode.matches(contract.signature, observed)
            checks.append(f"{flag}: {'the pinned signature' if same else 'a different signature'}")
    if contract.identity is not None and contract.identity.facets:
        missed = contract.identity.mismatch(outcome)
        checks.append(escape(missed) if missed else "the pinned identity")
    return checks


def provisionally_reproduces(contract: FailureContract, outcome: Outcome) -> bool:
    """Reproduction as far as it can be judged before the signature is pinned."""
    if contract.signature is not None or contract.mode is None:
        return contract.reproduces(outcome)
    return contract.base_matches(outcome) and contract.mode.extract(outcome) is not None


def describe_run(label: str, contract: FailureContract, outcome: Outcome) -> list[str]:
    """Lines explaining a run that did not reproduce (for the live display / stderr)."""
    head = f"{label} did not reproduce: {status_text(outcome)}"
    checks = contract_checks(contract, outcome)
    if checks:
        head += "; " + "; ".join(checks)
    tail = output_tail(outcome)
    lines = [head]
    if tail:
        lines.append(f"last {len(tail)} lines of its output (stdout then stderr):")
        lines += [f"  | {line}" for line in tail]
    else:
        lines.append("it printed nothing")
    return lines


def brief_run(contract: FailureContract, outcome: Outcome) -> str:
    """The same in one line (for the final error): status, checks and the last output line."""
    parts = [status_text(outcome), *contract_checks(contract, outcome)]
    tail = output_tail(outcome, 1)
    parts.append(f"last output line {tail[0]!r}" if tail else "no output")
    return ", ".join(parts)


class BaselineWatch:
    """``Oracle.on_sample`` hook for the baseline: report the first non-reproducing run once.
    ``stopping``: whether ReproMin is stopping -- then a run is not judged (its samples are
    killed by ReproMin itself, so "killed by SIGKILL" would be a false diagnosis)."""

    def __init__(
        self,
        contract: Callable[[], FailureContract],
        notify: Callable[[str], None],
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        self._contract = contract
        self._notify = notify
        self._stopping = stopping
        self._lock = threading.Lock()
        self.runs = 0
        self.reproduced = 0
        self.first: Outcome | None = None
        self.note: str | None = None

    def __call__(self, outcome: Outcome) -> None:
        if self._stopping():  # checked first: the stop flag is set before samples are killed
            return
        contract = self._contract()
        ok = provisionally_reproduces(contract, outcome)
        with self._lock:
            self.runs += 1
            self.reproduced += ok
            if ok or self.first is not None:
                return
            self.first = outcome
            number = self.runs
        self.note = f"first failing baseline run: {brief_run(contract, outcome)}"
        self._notify("\n".join(describe_run(f"baseline run {number}", contract, outcome)))


@dataclass(frozen=True, slots=True)
class IgnoredRule:
    """Files one selection rule left out, and the option that keeps them."""

    rule: str
    keep_option: str
    files: int
    examples: tuple[str, ...]


def _name_rule(pattern: str) -> tuple[str, str]:
    if pattern in DEFAULT_IGNORED_NAMES:
        return f"{pattern} (default ignore)", "--no-default-ignores"
    return f"--ignore {pattern}", f"drop --ignore {pattern}"


def ignored_by_rule(kept: Tree, full: Tree, options: SelectionOptions) -> list[IgnoredRule]:
    """Attribute every file of ``full`` missing from ``kept`` to the rule that dropped it: the
    outermost path component a name or path rule matches, else the ``.gitignore`` rules."""
    present = kept.directories() | set(kept.entries)
    paths = set(options.ignored_paths)
    counts: dict[tuple[str, str], list[str]] = {}
    for path, entry in full.entries.items():
        if entry.kind == "dir" or path in kept.entries:
            continue
        parts = path.split("/")
        rule = (".gitignore", "--no-gitignore")
        for i, name in enumerate(parts, start=1):
            prefix = "/".join(parts[:i])
            pattern = next(
                (p for p in options.ignored_names if name == p or fnmatch.fnmatchcase(name, p)),
                None,
            )
            if pattern is not None:
                rule = _name_rule(pattern)
                break
            if prefix in paths:
                rule = (f"--ignore-path {prefix}", f"drop --ignore-path {prefix}")
                break
            if prefix not in present:
                break
        counts.setdefault(rule, []).append(path)
    rules = [
        IgnoredRule(rule, option, len(found), tuple(sorted(found)[:3]))
        for (rule, option), found in counts.items()
    ]
    return sorted(rules, key=lambda r: (-r.files, r.rule))


def source_size(src: Path, limit: int) -> int | None:
    """Total bytes of regular files under ``src`` (symlinks not followed), None past ``limit``."""
    total = 0
    for directory, _dirs, names in os.walk(src):
        for name in names:
            try:
                st = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            total += st.st_size
            if total > limit:
                return None
    return total


def ignored_message(rules: Sequence[IgnoredRule]) -> str:
    listed = "; ".join(
        f"{r.rule}: {r.files} file{'s' if r.files != 1 else ''} (e.g. {', '.join(r.examples)})"
        for r in rules
    )
    options = ", ".join(dict.fromkeys(r.keep_option for r in rules))
    return (
        f"the failure reproduces only with files the selection ignored ({listed}); rerun with "
        f"{options} to keep them (and --ignore what is not needed)"
    )


def check_ignored(
    src: Path,
    selection: Selection,
    run_once: Callable[[Tree], Outcome],
    contract: FailureContract,
) -> str:
    """After a baseline that did not reproduce: does the unfiltered tree reproduce?

    Raises :class:`UsageError` naming the needed ignored paths if it does. Otherwise returns a
    short note for the final error ("" when nothing was ignored)."""
    if selection.skipped_entries == 0:
        return ""
    if source_size(src, UNFILTERED_LIMIT) is None:
        return "the unfiltered tree is too large to check whether ignored files are needed"
    unfiltered = SelectionOptions(ignored_names=(), ignored_paths=(), use_gitignore=False)
    try:
        full = select(src, unfiltered).tree
    except ReproMinError as exc:
        return f"the unfiltered tree could not be read ({exc.message})"
    rules = ignored_by_rule(selection.tree, full, selection.options)
    if not rules:
        return ""
    outcome = run_once(full)
    if provisionally_reproduces(contract, outcome):
        raise UsageError(ignored_message(rules))
    ignored = sum(r.files for r in rules)
    return f"one run with the {ignored} ignored files included did not reproduce either"


def home_paths_present(home: str) -> list[str]:
    """The :data:`COMMON_HOME_PATHS` that exist in ``home``, as ``~/...``."""
    found: list[str] = []
    for pattern in COMMON_HOME_PATHS:
        for path in sorted(glob.glob(os.path.join(glob.escape(home), pattern))):
            found.append("~/" + os.path.relpath(path, home))
    return found


def home_reads(outside: Sequence[tuple[str, bool]], home: str) -> list[str]:
    """What a traced sample looked for under its HOME and did not find, but ``home`` has: the
    ``~/...`` paths of the trace's outside accesses (``repomin.analysis.trace``), in the order
    first named, without those inside another one named."""
    named: list[str] = []
    for path, found in outside:
        if found or not path.startswith("~/") or path in named:
            continue
        if os.path.lexists(os.path.join(home, path[2:])):
            named.append(path)
    return [p for p in named if not any(p.startswith(q.rstrip("/") + "/") for q in named)]


def _listed(paths: Sequence[str]) -> str:
    """At most :data:`HOME_NAMED` of ``paths``, escaped (a traced run names them)."""
    shown = ", ".join(escape(p) for p in paths[:HOME_NAMED])
    return shown + (f" and {len(paths) - HOME_NAMED} more" if len(paths) > HOME_NAMED else "")


def your_shell_note(
    reproduced: bool,
    *,
    head: str | None = None,
    home: str,
    read_only: bool = False,
    traced: bool = False,
    reads: Sequence[str] = (),
    present: Sequence[str] = (),
    variables: Sequence[str] = (),
) -> str:
    """The final error's note on one run of the command in the user's own shell, after a
    baseline in which no run reproduced.

    ``home``: the samples' ``--home`` (``inherit`` also when ``--env HOME`` gave them one);
    ``read_only``: an inherited HOME is read-only for them (the namespace); ``traced``: a
    traced sample's strace log was read, and ``reads`` is what it looked for under HOME that
    the user's HOME has (:func:`home_reads`); ``present``: the usual toolchain paths the user's
    HOME has (:func:`home_paths_present`, named when no log says better); ``variables``: the
    names of the user's environment that samples do not see; ``head``: the opening (``None``:
    that the failure reproduces in the user's shell but in no baseline run; "": none, the
    caller said what happened)."""
    if not reproduced:
        return "one run in your own shell (your HOME and environment) did not reproduce either"
    seen = "read-only" if read_only else "writable"
    fix = f"rerun with --home inherit (the samples then see your HOME: {seen} here)"
    more = (
        f"your environment sets {len(variables)} variables the samples do not see "
        f"({_listed(variables)}): pass the ones the command needs with --env NAME"
        if variables
        else ""
    )
    if head is None:
        head = "the failure reproduces in your own shell but in no baseline run"
    if home == "inherit":
        written = "; a tool that must write under HOME fails there" if read_only else ""
        return _joined(
            head,
            "; ",
            f"the samples see your HOME ({seen}{written}) but not the rest of your environment"
            + (f": {more}" if more else ""),
        )
    if reads:
        return _joined(
            head,
            ": ",
            f"the samples' HOME is a fresh empty directory, and they looked for "
            f"{_listed(reads)} there, which your HOME has; {fix}",
        )
    if traced:
        return _joined(
            head,
            "; ",
            "a traced sample looked for nothing under its (fresh, empty) HOME that yours has"
            + (f": {more}" if more else "")
            + f"; else {fix}",
        )
    if present:
        return _joined(
            head,
            ": ",
            f"the samples' HOME is a fresh empty directory, and your HOME has "
            f"{_listed(present)} (where toolchains and packages live); {fix}",
        )
    return _joined(
        head,
        ": ",
        f"the samples get a fresh empty HOME and only PATH, LANG and --env; {fix}"
        + (f", or {more}" if more else ""),
    )


def _joined(head: str, separator: str, rest: str) -> str:
    return f"{head}{separator}{rest}" if head else rest


def watched_baseline(
    oracle: Oracle,
    source: Tree,
    selection: Selection,
    src: Path,
    progress: Progress,
    stopping: Callable[[], bool] = lambda: False,
    in_your_shell: Callable[[], str] | None = None,
) -> Baseline:
    """``oracle.run_baseline`` with a :class:`BaselineWatch` on ``on_baseline_run`` (the first
    failing run is a notice at once). On :class:`BaselineError` the error gets the watch's note,
    :func:`check_ignored`'s (which raises exit 2 itself when ignored files are needed) and,
    when no baseline run reproduced, ``in_your_shell()``'s (:func:`your_shell_note` on one
    run in the user's own shell; "" for none). While ``stopping`` nothing is diagnosed
    and the error is passed on as it is (the caller turns it into "interrupted")."""
    watch = BaselineWatch(lambda: oracle.contract, progress.notice, stopping)
    hooks = oracle.hooks
    oracle.attach(replace(hooks, on_baseline_run=lambda _i, outcome, _m: watch(outcome)))
    try:
        return oracle.run_baseline(source)
    except BaselineError as exc:
        if stopping():
            raise

        def run_once(tree: Tree) -> Outcome:
            progress.stage("ignore check (unfiltered tree)", 1)
            return oracle.sample(tree, "ignore-check", phase=None, budgeted=False)

        ignored = check_ignored(src, selection, run_once, oracle.contract)
        shell = ""  # only when no run reproduced: a failure seen in a sample is not blocked there
        if in_your_shell is not None and watch.runs and not watch.reproduced and not stopping():
            shell = in_your_shell()
        notes = "".join(f"; {n}" for n in (watch.note, ignored, shell) if n)
        raise BaselineError(exc.message + notes) from None
    finally:
        oracle.attach(replace(oracle.hooks, on_baseline_run=hooks.on_baseline_run))
