"""Opt-in passes against the default schedule, on the same built case: search runs and result.

Builds each case once, then runs ``repomin reduce`` (this checkout, a subprocess per variant,
``--jobs`` as given, no cap) with ``--passes`` set to the default schedule (``default``), the
default plus ``restart`` at the end (``restart``) or plus ``pairs`` before ``tokens``
(``pairs``). Prints one JSON line per case and variant: search runs (the phases' oracle
samples), the opt-in pass's own runs, files/bytes of the payload, and the pass's events::

    PYTHONPATH=src python benchmarks/pass_variants.py --cases nested-100-det \\
        --variants default,restart,pairs --jobs 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import Case
from suite import all_cases

from repomin.passes import DEFAULT_SCHEDULE

ROOT = Path(__file__).resolve().parent.parent


def schedules() -> dict[str, tuple[str, ...]]:
    base = DEFAULT_SCHEDULE
    at = base.index("tokens") if "tokens" in base else len(base)
    return {
        "default": base,
        "restart": (*base, "restart"),
        "pairs": (*base[:at], "pairs", *base[at:]),
    }


def run(case: Case, src: Path, out: Path, passes: tuple[str, ...], jobs: int) -> dict[str, Any]:
    c = case.contract
    argv = [sys.executable, "-m", "repomin", "reduce", str(src), "-o", str(out)]
    argv += ["--command", c.command, "--timeout", str(c.timeout), "--jobs", str(jobs), "-q"]
    argv += ["--passes", ",".join(passes)]
    if c.match is not None:
        argv += ["--match", c.match]
    if c.exit_code is not None:
        argv += ["--exit-code", str(c.exit_code)]
    argv += list(case.repomin_args)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    wall = time.monotonic() - started
    if done.returncode:
        raise RuntimeError(f"{case.name}: repomin exited {done.returncode}: {done.stderr[-400:]}")
    report = json.loads((out.parent / f"{out.name}.repomin" / "report.json").read_text("utf-8"))
    phases = {p["name"]: p["oracle_samples"] for p in report["phase_statistics"]["phases"]}
    return {
        "wall_seconds": round(wall, 1),
        "search_runs": sum(phases.values()),
        "restart_runs": phases.get("restart"),
        "pairs_runs": phases.get("pairs"),
        "files": report["output"]["files"],
        "bytes": report["output"]["bytes"],
        "events": [
            e["description"]
            for e in report["events"]
            if e["phase"] in ("restart", "pairs") and e.get("decision") in ("info", "accepted")
        ],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="nested-100-det")
    ap.add_argument("--variants", default="default,restart,pairs")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "repomin-bench")
    args = ap.parse_args()
    cases = {c.name: c for c in all_cases(args.cache)}
    variants = schedules()
    for name in args.cases.split(","):
        with tempfile.TemporaryDirectory(prefix="repomin-variants-") as tmp:
            src = Path(tmp) / "src"
            src.mkdir()
            cases[name].build(src)
            for variant in args.variants.split(","):
                out = Path(tmp) / f"out-{variant}"
                row = run(cases[name], src, out, variants[variant], args.jobs)
                print(json.dumps({"case": name, "variant": variant, **row}), flush=True)


if __name__ == "__main__":
    main()
