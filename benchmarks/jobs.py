"""Parallel-jobs benchmark: ``--jobs 1`` against ``--jobs N`` on one benchmark case, side by side.

    PYTHONPATH=src python benchmarks/jobs.py [--case nested-500-det] [--jobs 1,2] [--repeat 3]
                                             [--sleep 0] [--passes ...]

Builds the case once (``benchmarks/cases.py``), then runs ``repomin reduce`` on it with each
``--jobs`` value in turn, ``--repeat`` times, alternating the order every repetition so that
a change of machine load hits every setting alike. ``--sleep S`` wraps the case's command in
``sleep S; ...`` (a latency-bound command such as a remote build: the parallel search's
speedup is then not limited by this machine's cores). Prints ``uptime`` before and after,
one JSON object per reduction and a table with the median wall, runs, payload and the speedup
of each setting over the first. Writes nothing else (temporary directories are removed).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))

from cases import select  # noqa: E402
from suite import all_cases  # noqa: E402


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "uptime unavailable"


def reduce(
    src: Path, work: Path, command: str, match: str, timeout: float, jobs: int, extra: list[str]
) -> dict[str, Any]:
    out = work / f"out-{jobs}"
    argv = [
        sys.executable,
        "-m",
        "repomin",
        "reduce",
        str(src),
        "-o",
        str(out),
        "--force",
        "--command",
        command,
        "--match",
        match,
        "--timeout",
        str(timeout),
        "--jobs",
        str(jobs),
        "--no-session",
        "-q",
        *extra,
    ]
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"reduce --jobs {jobs} failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads((work / f"out-{jobs}.repomin" / "report.json").read_text())
    ex = report["execution"]
    files = [p for p in out.rglob("*") if p.is_file()]
    return {
        "jobs": jobs,
        "wall_seconds": round(wall, 2),
        "oracle_runs": ex["oracle_samples"],
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "sample_seconds": ex.get("sample_seconds"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--case", default="nested-500-det")
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--passes", default=None, help="--passes for repomin (default: its own)")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="repomin-bench-jobs-"))
    try:
        case = select(all_cases(root / "cache"), [a.case], False)[0]
        if case.contract.match is None:
            raise SystemExit(f"case {a.case} has no --match contract")
        src = root / "src"
        src.mkdir()
        case.build(src)
        command = case.contract.command
        if a.sleep:
            command = f"sleep {a.sleep}; {command}"
        extra = list(case.repomin_args) + (["--passes", a.passes] if a.passes else [])
        settings = [int(j) for j in a.jobs.split(",")]
        print(f"# before: {uptime()}", flush=True)
        rows: list[dict[str, Any]] = []
        for rep in range(a.repeat):
            for jobs in settings if rep % 2 == 0 else settings[::-1]:
                row = reduce(
                    src,
                    root,
                    command,
                    case.contract.match,
                    case.contract.timeout + a.sleep,
                    jobs,
                    extra,
                )
                row["repeat"] = rep
                rows.append(row)
                print(json.dumps(row), flush=True)
        print(f"# after: {uptime()}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\ncase {a.case}, command {shlex.quote(command)[:80]}…, {a.repeat} repetitions\n")
    print("| --jobs | median wall (s) | walls (s) | oracle runs | payload | speedup |")
    print("|---|---|---|---|---|---|")
    base = None
    for jobs in settings:
        mine = [r for r in rows if r["jobs"] == jobs]
        wall = statistics.median(r["wall_seconds"] for r in mine)
        base = base or wall
        walls = ", ".join(f"{r['wall_seconds']:.1f}" for r in mine)
        runs = ", ".join(str(r["oracle_runs"]) for r in mine)
        payload = ", ".join(sorted({f"{r['files']} files / {r['bytes']} B" for r in mine}))
        print(f"| {jobs} | {wall:.1f} | {walls} | {runs} | {payload} | {base / wall:.2f}× |")


if __name__ == "__main__":
    main()
