"""The reducers under test, behind one adapter: ReproMin and its peers on the same case.

Each :class:`Tool` starts its reducer on a private copy of the case under the same time cap
and the same parallelism, and says where the final tree is and how many oracle runs it used.
ReproMin reports its own count (``execution.oracle_samples``); a peer's runs are counted by the
interestingness wrapper (:mod:`interesting`), which appends one line per invocation to a counter
file. Peers run with their temporary files on tmpfs, like ReproMin's host runner. At the cap a
reducer gets SIGINT, then SIGKILL for its whole process group after a grace period.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from cases import Case

HERE = Path(__file__).resolve().parent
#: Where the peers are installed (one virtual environment each); override with REPOMIN_PEERS.
PEERS = Path(os.environ.get("REPOMIN_PEERS", "/work/peers"))
#: Seconds between SIGINT at the cap and SIGKILL.
GRACE = 5.0


@dataclass(frozen=True, slots=True)
class Settings:
    jobs: int
    cap: float
    work: Path
    repomin_python: str = sys.executable
    repomin_src: Path | None = None
    #: Seconds ReproMin gets past ``--max-time`` for its final validation before the hard stop.
    final_grace: float = 120.0


@dataclass(slots=True)
class Outcome:
    """What one tool did on one case (before independent verification)."""

    final: Path | None
    wall_time_seconds: float
    oracle_runs: int | None
    exit_code: int | None
    hit_cap: bool
    final_source: str = "tool"
    details: dict[str, Any] = field(default_factory=dict)


class Tool(Protocol):
    name: str

    def applies(self, case: Case) -> bool: ...

    def unavailable(self) -> str | None: ...

    def version(self, settings: Settings) -> str | None: ...

    def run(self, case: Case, src: Path, settings: Settings) -> Outcome: ...


# -- process handling ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finished:
    exit_code: int | None
    wall: float
    hit_cap: bool
    log: str
    measured: float


def run_capped(
    argv: Sequence[str],
    *,
    cap: float,
    log: Path,
    cwd: Path,
    env: dict[str, str] | None = None,
    stop_signal: int = signal.SIGINT,
) -> Finished:
    """Run ``argv`` in its own session; at ``cap`` seconds send ``stop_signal``, later SIGKILL."""
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        hit = False
        try:
            rc: int | None = proc.wait(timeout=cap)
        except subprocess.TimeoutExpired:
            hit = True
            _signal_group(proc.pid, stop_signal)
            try:
                rc = proc.wait(timeout=GRACE)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                rc = proc.wait()
        finally:
            _signal_group(proc.pid, signal.SIGKILL)
    measured = time.monotonic() - start
    text = log.read_text("utf-8", "replace")
    # A stopped tool is charged the time it was allowed to reduce, not its shutdown.
    return Finished(rc, cap if hit else measured, hit, text[-4000:], measured)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def tmpfs_dir(work: Path) -> Path:
    """A peer's temporary directory: on tmpfs when available (as ReproMin's samples)."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else work
    return Path(os.environ.get("BENCH_TMP", str(base))) / f"bench-{os.getpid()}-{work.name}"


def tmpfs_env(work: Path) -> dict[str, str]:
    """The environment for a peer: ``TMPDIR`` is :func:`tmpfs_dir`."""
    tmp = tmpfs_dir(work)
    tmp.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp)}


def write_test_script(case: Case, work: Path, *, single_file: str | None = None) -> Path:
    """The peer's interestingness test: the shared wrapper with this case's contract."""
    config = {
        **case.contract.to_json(),
        "counter": str(work / "oracle-runs.count"),
        "keep_best": str(best_dir(work)),
        "single_file": single_file,
    }
    (work / "contract.json").write_text(json.dumps(config, indent=2), "utf-8")
    script = work / "test.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'interesting.py'))} "
        f'{shlex.quote(str(work / "contract.json"))} "$@"\n',
        "utf-8",
    )
    script.chmod(0o755)
    return script


def best_dir(work: Path) -> Path:
    """Where the wrapper keeps a peer's best-so-far (tmpfs, so that files can be hard-linked)."""
    return tmpfs_dir(work) / "best"


def count_runs(work: Path) -> int:
    counter = work / "oracle-runs.count"
    time.sleep(0.2)  # let stragglers of a stopped peer append their line
    try:
        return len(counter.read_bytes().splitlines())
    except FileNotFoundError:
        return 0


def _copy_case(src: Path, work: Path) -> Path:
    tree = work / "tree"
    shutil.copytree(src, tree, symlinks=True)
    return tree


def _version_of(argv: Sequence[str]) -> str | None:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (proc.stdout or proc.stderr).strip().splitlines()
    return text[0].strip() if text else None


# -- ReproMin -------------------------------------------------------------------------------


class ReproMin:
    name = "repomin"

    def applies(self, case: Case) -> bool:
        return True

    def unavailable(self) -> str | None:
        return None

    def _env(self, settings: Settings) -> dict[str, str]:
        env = dict(os.environ)
        if settings.repomin_src is not None:
            env["PYTHONPATH"] = str(settings.repomin_src / "src")
        return env

    def version(self, settings: Settings) -> str | None:
        return _version_of(
            [settings.repomin_python, "-c", "import repomin; print(repomin.__version__)"]
        )

    def run(self, case: Case, src: Path, settings: Settings) -> Outcome:
        out = settings.work / "out"
        c = case.contract
        argv = [
            settings.repomin_python,
            "-m",
            "repomin",
            "reduce",
            str(src),
            "-o",
            str(out),
            "--command",
            c.command,
            "--timeout",
            str(c.timeout),
            "--jobs",
            str(settings.jobs),
            "--max-time",
            str(settings.cap),
            "-q",
        ]
        if c.match is not None:
            argv += ["--match", c.match]
        if c.exit_code is not None:
            argv += ["--exit-code", str(c.exit_code)]
        argv += list(case.repomin_args)
        # --max-time bounds the search; final validation follows it, so the hard stop is later.
        done = run_capped(
            argv,
            cap=settings.cap + settings.final_grace,
            log=settings.work / "repomin.log",
            cwd=settings.work,
            env=self._env(settings),
        )
        report_path = out.parent / f"{out.name}.repomin" / "report.json"
        details: dict[str, Any] = {"log_tail": done.log[-1500:]}
        runs: int | None = None
        hit = done.hit_cap
        if report_path.is_file():
            report = json.loads(report_path.read_text("utf-8"))
            ex = report["execution"]
            runs = ex.get("oracle_samples")
            hit = hit or bool(ex.get("budget_exhausted"))
            details = {
                "report": str(report_path),
                "repomin_version": report.get("repomin_version"),
                "stop_reason": ex.get("stop_reason"),
                "sampling_policy": ex.get("sampling_policy"),
                "reported_wall_time_seconds": ex.get("wall_time_seconds"),
                "baseline": [ex.get("baseline_passes"), ex.get("baseline_runs")],
                "final": [ex.get("final_passes"), ex.get("final_runs")],
                "attempts": report.get("attempts"),
                "accepted_mutations": report.get("accepted_mutations"),
                "cache_hits": report.get("cache_hits"),
                "phases": {
                    p["name"]: {
                        "oracle_samples": p["oracle_samples"],
                        "accepted": p["accepted"],
                        "rejected": p["rejected"],
                        "bytes_removed": p.get("bytes_removed"),
                        "duration_seconds": round(p.get("duration_seconds", 0.0), 3),
                    }
                    for p in report["phase_statistics"]["phases"]
                },
            }
        return Outcome(
            final=out if out.is_dir() else None,
            wall_time_seconds=done.wall,
            oracle_runs=runs,
            exit_code=done.exit_code,
            hit_cap=hit,
            details=details,
        )


# -- shrinkray ------------------------------------------------------------------------------


class ShrinkRay:
    def __init__(self, *, restart: bool) -> None:
        self.restart = restart
        self.name = "shrinkray" if restart else "shrinkray-no-restart"

    @property
    def binary(self) -> Path:
        return PEERS / "shrinkray" / "bin" / "shrinkray"

    def applies(self, case: Case) -> bool:
        return True

    def unavailable(self) -> str | None:
        return None if self.binary.exists() else f"{self.binary} not found (see README)"

    def version(self, settings: Settings) -> str | None:
        return _version_of([str(self.binary), "--version"])

    def run(self, case: Case, src: Path, settings: Settings) -> Outcome:
        work = settings.work
        tree = _copy_case(src, work)
        target = tree / case.single_file if case.single_file else tree
        test = write_test_script(case, work, single_file=case.single_file)
        argv = [
            str(self.binary),
            "--ui=basic",
            "--no-llm",
            "--no-history",
            "--formatter=none",
            "--trivial-is-not-error",
            f"--parallelism={settings.jobs}",
            f"--timeout={case.contract.timeout}",
            f"--backup={work / 'backup'}",
            "--restart" if self.restart else "--no-restart",
            str(test),
            str(target),
        ]
        done = run_capped(
            argv, cap=settings.cap, log=work / "shrinkray.log", cwd=work, env=tmpfs_env(work)
        )
        return _peer_outcome(case, work, tree, done)


def _peer_outcome(case: Case, work: Path, tree: Path, done: Finished) -> Outcome:
    """The final tree: the peer's own result, or its best-so-far when stopped at the cap.

    An interrupted peer may be stopped in the middle of writing its result back (shrinkray
    rewrites the whole directory), so a stopped peer is credited with the smallest candidate its
    interestingness test accepted; verification then checks it like any other result.
    """
    final: Path | None = tree
    source = "tool"
    best = best_dir(work) / "tree"
    if done.hit_cap and best.is_dir():
        final = work / "best-tree"
        shutil.copytree(best, final, symlinks=True)
        source = "best_seen"
    return Outcome(
        final=final,
        wall_time_seconds=done.wall,
        oracle_runs=count_runs(work),
        exit_code=done.exit_code,
        hit_cap=done.hit_cap,
        final_source=source,
        details={"log_tail": done.log[-1500:], "measured_wall_seconds": round(done.measured, 3)},
    )


# -- single-file peers -----------------------------------------------------------------------


class CVise:
    name = "cvise"
    binary = "cvise"

    def applies(self, case: Case) -> bool:
        return case.single_file is not None

    def unavailable(self) -> str | None:
        return None if shutil.which(self.binary) else f"{self.binary} not on PATH (apt-get)"

    def version(self, settings: Settings) -> str | None:
        return _version_of([self.binary, "--version"])

    def run(self, case: Case, src: Path, settings: Settings) -> Outcome:
        assert case.single_file is not None
        work = settings.work
        tree = _copy_case(src, work)
        test = write_test_script(case, work, single_file=case.single_file)
        argv = [
            self.binary,
            f"--n={settings.jobs}",
            "--not-c",
            "--tidy",
            f"--timeout={int(case.contract.timeout)}",
            str(test),
            case.single_file,  # C-Vise wants a bare file name in the current directory
        ]
        done = run_capped(
            argv, cap=settings.cap, log=work / f"{self.name}.log", cwd=tree, env=tmpfs_env(work)
        )
        return _peer_outcome(case, work, tree, done)


class Picire:
    name = "picire"

    @property
    def binary(self) -> Path:
        return PEERS / "dd" / "bin" / "picire"

    def applies(self, case: Case) -> bool:
        return case.single_file is not None

    def unavailable(self) -> str | None:
        return None if self.binary.exists() else f"{self.binary} not found (see README)"

    def version(self, settings: Settings) -> str | None:
        return _version_of([str(self.binary), "--version"])

    def run(self, case: Case, src: Path, settings: Settings) -> Outcome:
        assert case.single_file is not None
        work = settings.work
        tree = _copy_case(src, work)
        test = write_test_script(case, work, single_file=case.single_file)
        out = work / "picire-out"
        argv = [
            str(self.binary),
            "--input",
            str(tree / case.single_file),
            "--test",
            str(test),
            "--parallel",
            f"--jobs={settings.jobs}",
            "--cache=content",
            "--atom=line",
            f"--out={out}",
            "--log-level=WARNING",
        ]
        done = run_capped(
            argv, cap=settings.cap, log=work / "picire.log", cwd=work, env=tmpfs_env(work)
        )
        result = out / case.single_file
        if result.is_file():
            shutil.copy2(result, tree / case.single_file)
        outcome = _peer_outcome(case, work, tree, done)
        if not result.is_file() and not done.hit_cap:
            outcome.final = None
        return outcome


class Lithium:
    name = "lithium"

    @property
    def python(self) -> Path:
        return PEERS / "dd" / "bin" / "python"

    def applies(self, case: Case) -> bool:
        return case.single_file is not None

    def unavailable(self) -> str | None:
        return None if self.python.exists() else f"{self.python} not found (see README)"

    def version(self, settings: Settings) -> str | None:
        return _version_of(
            [
                str(self.python),
                "-c",
                "import importlib.metadata as m; print(m.version('lithium-reducer'))",
            ]
        )

    def run(self, case: Case, src: Path, settings: Settings) -> Outcome:
        assert case.single_file is not None
        work = settings.work
        tree = _copy_case(src, work)
        write_test_script(case, work, single_file=case.single_file)
        (work / "lithium-tmp").mkdir()
        argv = [
            str(self.python),
            "-m",
            "lithium",
            "--lines",
            f"--tempdir={work / 'lithium-tmp'}",
            str(HERE / "lithium_condition.py"),
            str(work / "contract.json"),
            str(tree / case.single_file),
        ]
        done = run_capped(
            argv, cap=settings.cap, log=work / "lithium.log", cwd=work, env=tmpfs_env(work)
        )
        outcome = _peer_outcome(case, work, tree, done)
        outcome.details["parallelism"] = "lithium runs one test at a time"
        return outcome


ALL_TOOLS: tuple[Tool, ...] = (
    ReproMin(),
    ShrinkRay(restart=True),
    ShrinkRay(restart=False),
    CVise(),
    Picire(),
    Lithium(),
)
