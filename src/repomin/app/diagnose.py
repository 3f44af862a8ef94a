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
"""

from __future__ import annotations

import fnmatch
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


def watched_baseline(
    oracle: Oracle,
    source: Tree,
    selection: Selection,
    src: Path,
    progress: Progress,
    stopping: Callable[[], bool] = lambda: False,
) -> Baseline:
    """``oracle.run_baseline`` with a :class:`BaselineWatch` on ``on_baseline_run`` (the first
    failing run is a notice at once). On :class:`BaselineError` the error gets the watch's note
    and :func:`check_ignored`'s (which raises exit 2 itself when ignored files are needed).
    While ``stopping`` nothing is diagnosed and the error is passed on as it is (the caller
    turns it into "interrupted")."""
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
        notes = "".join(f"; {n}" for n in (watch.note, ignored) if n)
        raise BaselineError(exc.message + notes) from None
    finally:
        oracle.attach(replace(oracle.hooks, on_baseline_run=hooks.on_baseline_run))
