"""The payload in the user's own shell: does it reproduce where the user will run it?

Every sample runs in a boundary ReproMin made: a fresh copy of the tree, an empty ``HOME`` and
``TMPDIR``, and only the environment it was given. A payload can reproduce there and not in the
user's shell -- a cache file the first run writes under ``~`` (``~/.v8flags.*.json``), a
variable the user has set, a file outside the tree that exists for the user. So, after the
certified final test and before the payload is exported, :func:`check_in_user_shell` runs the
payload's command the way the user will type it: ``/bin/sh -c COMMAND`` in one fresh copy of the
payload (every run in the same directory, as a user reruns it), with the user's own environment
(their ``HOME``, their variables, plus the ``--env`` values) and the same timeout, one run after
another. The failure contract judges each run, exactly as it judges samples.

Outside the sample boundary, but not outside ReproMin's control: each run's process group is led
by the samples' supervisor (:func:`repomin.runners.sandbox.sample_argv`, without a namespace),
which kills the group when ReproMin dies, even by SIGKILL (``PR_SET_PDEATHSIG``); an interrupt
(SIGINT/SIGTERM) kills the running one at once. The payload copy lives in a directory of
ReproMin's private scratch root named and recorded like a host runner's
(``repomin-<pid>-your-shell-*``, the owner and the run's process group), so when ReproMin dies the
next start of either backend kills what is left of the recorded group and removes it
(:func:`repomin.runners.scratch.reap_stale_scratch`).

The decision (:func:`decide`):

* a payload whose final runs all reproduced (a deterministic failure) must reproduce in every
  one of the ``--user-shell-runs`` runs;
* a flaky payload (some final run did not reproduce) fails the check only when none of
  ``n = max(runs, ceil(ln α / ln(1 - L)))`` runs reproduces, ``L`` the exact lower bound on the
  final runs' rate at the run confidence and α = :data:`SHELL_ALPHA` (n at most
  :data:`MAX_FLAKY_RUNS`): at a rate of at least ``L``, ``P(no run of n reproduces) <= α``, so
  a flaky failure that behaves in the user's shell as it did in the samples is flagged at most
  once in a thousand reductions (at the cap, ``(1 - L)^60``). Its first reproduction ends the
  check (:func:`settled`: no later run could change the status), so a passing check costs about
  ``1/p`` runs, not ``n``; a failing one makes all ``n``.

When the check fails, :func:`differences` names what differs: the traced run's accesses under
the samples' HOME and outside the tree whose existence is not the same in the user's
environment now (``~/.v8flags.*.json exists in your HOME; the samples' HOME was empty``), and the
variables of the user's environment that samples do not see. ``--user-shell-runs 0`` skips the
check, for users whose own environment is not safe to run in.

The same machinery serves the baseline's diagnosis (:func:`run_in_user_shell`): when the
baseline does not reproduce, the command runs once in the user's shell on a fresh copy of the
unreduced tree (``--user-shell-runs 0`` skips that run too), so that a failure that needs the
user's HOME (a toolchain under ``~``) is named with its fix, ``--home inherit``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from repomin.runners import sandbox
from repomin.runners.base import Outcome
from repomin.runners.scratch import make_scratch
from repomin.sampling.stats.bounds import runs_to_see_one
from repomin.tree import Tree, materialise

#: A flaky payload's check never takes more runs than this.
MAX_FLAKY_RUNS = 60

#: The level at which a flaky payload's check may flag a failure that behaves the same.
SHELL_ALPHA = 0.001

#: The names every sample sees (the host runner's implicit environment).
SAMPLE_NAMES = frozenset({"PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG"})

#: At most this many bytes of each output stream are judged.
OUTPUT_LIMIT = 16 << 20

#: At most this many differences are named.
MAX_DIFFERENCES = 12

#: Seconds between two looks at the stop flag while a run is waited for.
STOP_POLL = 0.1


@dataclass(frozen=True, slots=True)
class ShellCheck:
    """The report's ``user_shell`` record.

    ``status``: ``reproduced``, ``not_reproduced``, ``skipped`` (not applicable here: ``reason``
    says why) or ``disabled`` (``--user-shell-runs 0``).
    """

    status: str
    planned_runs: int = 0
    runs: int = 0
    reproduced: int = 0
    required: int = 0
    reason: str = ""
    differences: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status == "not_reproduced"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "planned_runs": self.planned_runs,
            "runs": self.runs,
            "reproduced": self.reproduced,
            "required": self.required,
            "reason": self.reason,
            "differences": list(self.differences),
            "outcomes": list(self.outcomes),
        }


def plan(runs: int, final_passes: int, final_runs: int, confidence: float) -> tuple[int, int]:
    """``(planned runs, runs that must reproduce)`` for a payload with these final counts."""
    if runs <= 0 or final_runs <= 0:
        return 0, 0
    if final_passes >= final_runs:
        return runs, runs
    if final_passes <= 0:
        return 0, 0
    needed = runs_to_see_one(final_passes, final_runs, confidence, SHELL_ALPHA, MAX_FLAKY_RUNS)
    return max(runs, needed), 1


def decide(reproduced: int, runs: int, required: int) -> str:
    """``reproduced`` once at least ``required`` of the ``runs`` runs reproduced."""
    return "reproduced" if runs > 0 and reproduced >= required else "not_reproduced"


def settled(reproduced: int, done: int, planned: int, required: int) -> bool:
    """Is the check decided by the ``done`` runs made of ``planned``? Every planned run is
    made, except that the check passes -- and stops -- once ``required`` runs reproduced: a
    flaky payload's first reproduction ends it (the rest could not change the status). A
    check that fails makes every planned run, so what it shows is the whole picture."""
    return planned > 0 and (done >= planned or (done > 0 and reproduced >= required))


def user_environment(explicit: Mapping[str, str]) -> dict[str, str]:
    """The environment the user's shell gives the command: theirs, plus the ``--env`` values."""
    return {**os.environ, **explicit}


def run_once(
    command: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    *,
    records: Path | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> Outcome:
    """One run of ``command`` as the user types it, killed with its process group on timeout,
    when ``stop()`` becomes true, and when ReproMin dies (the supervisor's parent-death signal:
    call this from a thread that outlives the run). ``records``: a directory made by
    :func:`workdir` where the run's process group is recorded while it runs."""
    started = time.monotonic()
    status_r, status_w = os.pipe()
    try:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            argv = sandbox.sample_argv(
                ["/bin/sh", "-c", command], status_fd=status_w, namespace=False, hidden=()
            )
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                    pass_fds=(status_w,),
                )
            finally:
                os.close(status_w)
            record = sandbox.record_sample(records, proc.pid) if records is not None else None
            timed_out = False
            try:
                timed_out = _wait(proc, timeout, stop)
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                if record is not None:
                    record.unlink(missing_ok=True)
            out.seek(0)
            err.seek(0)
            code = -signal.SIGKILL if timed_out else _status(status_r, proc.returncode)
            return Outcome(  # as the host runner reports a sample: a signal is a negative code
                exit_code=code,
                stdout=out.read(OUTPUT_LIMIT),
                stderr=err.read(OUTPUT_LIMIT),
                duration=time.monotonic() - started,
                timed_out=timed_out,
                signal=-code if code < 0 else None,
                workdir=str(cwd),
            )
    finally:
        os.close(status_r)


def _wait(proc: subprocess.Popen[bytes], timeout: float, stop: Callable[[], bool]) -> bool:
    """Wait for the supervisor; True when the timeout came first (or ``stop()`` did)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or stop():
            return True
        try:
            proc.wait(min(left, STOP_POLL))
            return False
        except subprocess.TimeoutExpired:
            continue


def _status(status_r: int, leader: int) -> int:
    """The command's exit code as the supervisor reported it (a signal is negative), else the
    supervisor's own (a command that killed its supervisor)."""
    os.set_blocking(status_r, False)
    raw = b""
    with contextlib.suppress(BlockingIOError):
        raw = os.read(status_r, 64)
    reported = sandbox.decode_status(raw) if raw else None
    return reported if reported is not None else leader


def workdir() -> Path:
    """A fresh directory for the payload copy, in ReproMin's private scratch root, recorded so
    that the next start of ReproMin removes it (and kills what is left of its recorded runs)
    when this process dies without removing it."""
    path = make_scratch(f"repomin-{os.getpid()}-your-shell-")
    sandbox.write_owner(path)
    return path


def differences(
    outside: Sequence[tuple[str, bool]], env: Mapping[str, str], home: str | None = None
) -> tuple[str, ...]:
    """What the user's environment has that the samples' did not (see the module docstring)."""
    home = home if home is not None else os.path.expanduser("~")
    found: list[str] = []
    for path, existed in outside:
        here = os.path.join(home, path[2:]) if path.startswith("~/") else path
        if path == "~" or os.path.lexists(here) == existed:
            continue
        where = "your HOME" if path.startswith("~/") else "your file system"
        if existed:
            found.append(f"{path} is missing in {where} (the samples found it)")
        elif path.startswith("~/"):
            found.append(f"{path} exists in your HOME (the samples' HOME was empty)")
        else:
            found.append(f"{path} exists in {where} (the samples did not find it)")
    extra = sorted(n for n in env if n not in SAMPLE_NAMES)
    if extra:
        shown = ", ".join(extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
        found.append(f"your environment sets {len(extra)} variables samples do not see: {shown}")
    return tuple(found[:MAX_DIFFERENCES])


@contextlib.contextmanager
def payload_copy(tree: Tree) -> Iterator[tuple[Path, Path]]:
    """``(records, copy)``: a fresh copy of ``tree`` in a :func:`workdir` (where the runs'
    process groups are recorded), removed afterwards."""
    directory = workdir()
    try:
        payload = directory / "payload"
        payload.mkdir()
        materialise(tree, payload)
        yield directory, payload
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def run_in_user_shell(
    tree: Tree,
    command: str,
    env: Mapping[str, str],
    timeout: float,
    *,
    stop: Callable[[], bool] = lambda: False,
) -> Outcome | None:
    """One run of ``command`` as the user types it, on a fresh copy of ``tree``, with the
    check's machinery (:func:`payload_copy`, :func:`run_once`: the samples' supervisor, the
    recorded process group, the reaping). None when ``stop()`` ended it (not a verdict)."""
    with payload_copy(tree) as (records, payload):
        outcome = run_once(command, payload, env, timeout, records=records, stop=stop)
    return None if stop() else outcome


def check_in_user_shell(
    tree: Tree,
    command: str,
    *,
    reproduces: Callable[[Outcome], bool],
    planned: tuple[int, int],
    env: Mapping[str, str],
    timeout: float,
    outside: Sequence[tuple[str, bool]] = (),
    on_run: Callable[[], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> ShellCheck:
    """Run the payload ``planned[0]`` times in the user's shell (see the module docstring)."""
    runs, required = planned
    outcomes: list[str] = []
    hits = 0
    with payload_copy(tree) as (directory, payload):
        while len(outcomes) < runs and not settled(hits, len(outcomes), runs, required):
            if stop():
                break
            outcome = run_once(command, payload, env, timeout, records=directory, stop=stop)
            if stop():
                break  # killed by the interrupt: not a verdict
            outcomes.append(_describe(outcome, reproduces(outcome)))
            hits += outcomes[-1] == "reproduced"
            if on_run is not None:
                on_run()
    done = len(outcomes)
    if not settled(hits, done, runs, required):
        return ShellCheck("skipped", runs, done, hits, required, "interrupted", (), tuple(outcomes))
    status = decide(hits, done, required)
    found = differences(outside, env) if status == "not_reproduced" else ()
    reason = (
        f"{hits} of {done} runs in your shell reproduced the failure ({required} needed)"
        if status == "not_reproduced"
        else ""
    )
    return ShellCheck(status, runs, done, hits, required, reason, found, tuple(outcomes))


def stopped_at_deadline(
    check: ShellCheck, full: int, deterministic: bool, found: Callable[[], tuple[str, ...]]
) -> ShellCheck:
    """The record of a check that ``--deadline`` stopped after ``check.runs`` of its runs
    (``full``: the runs it would have planned). A payload whose final runs all reproduced is
    decided on the runs made -- each must reproduce, a rule that needs no count --; a flaky
    payload's check stays ``skipped`` (its rule needs every planned run before it may say that
    none reproducing is a difference). ``found``: the differences, asked when it fails."""
    done, hits = check.runs, check.reproduced
    what = f"--deadline: {done} of {full} runs in your shell before the deadline"
    if deterministic and done:
        status = decide(hits, done, done)
        failed = status == "not_reproduced"
        return replace(
            check,
            status=status,
            planned_runs=done,
            required=done,
            reason=f"{what}; {hits} reproduced the failure ({done} needed)" if failed else what,
            differences=found() if failed else (),
        )
    return replace(check, status="skipped", reason=f"{what} ({hits} reproduced): too few to decide")


def _describe(outcome: Outcome, matched: bool) -> str:
    if matched:
        return "reproduced"
    if outcome.timed_out:
        return "timed out"
    if outcome.signal is not None:
        return f"did not reproduce (signal {outcome.signal})"
    return f"did not reproduce (exit {outcome.exit_code})"
