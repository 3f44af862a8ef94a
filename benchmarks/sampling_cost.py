"""Oracle runs per reduction under a sampling policy: the cost side of the default sampling.

Runs ``repomin reduce`` (the CLI, in a subprocess, no time cap) on generated benchmark cases
and prints one JSON line per case and setting: oracle runs in total and in the search, baseline
and final runs, payload files and bytes, payload gates, wall time. ``--repomin-src`` measures
another checkout (e.g. the version before a change) on the very same inputs.

    python benchmarks/sampling_cost.py --cases nested-100-det,nested-500-flaky
    python benchmarks/sampling_cost.py --sampling strict --repomin-src /tmp/old --label old
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

REPO = Path(__file__).resolve().parent.parent


def measure(case: Case, sampling: str | None, src_root: Path, jobs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="repomin-cost-") as tmp:
        work = Path(tmp)
        src = work / "src"
        src.mkdir()
        case.build(src)
        out = work / "out"
        c = case.contract
        argv = [sys.executable, "-m", "repomin", "reduce", str(src), "-o", str(out)]
        argv += ["--command", c.command, "--timeout", str(c.timeout), "--jobs", str(jobs), "-q"]
        if c.match is not None:
            argv += ["--match", c.match]
        if c.exit_code is not None:
            argv += ["--exit-code", str(c.exit_code)]
        if sampling is not None:
            argv += ["--sampling", sampling]
        argv += list(case.repomin_args)
        env = {**os.environ, "PYTHONPATH": str(src_root / "src")}
        started = time.monotonic()
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
        report_path = work / "out.repomin" / "report.json"
        if not report_path.is_file():
            return {"case": case.name, "error": done.stderr[-800:], "exit_code": done.returncode}
        report = json.loads(report_path.read_text("utf-8"))
        ex = report["execution"]
        return {
            "case": case.name,
            "exit_code": done.returncode,
            "sampling_policy": ex["sampling_policy"],
            "error_control": ex.get("error_control"),
            "oracle_runs": ex["oracle_samples"],
            "search_runs": ex.get("search_samples"),
            "baseline": [ex["baseline_passes"], ex["baseline_runs"]],
            "final": [ex["final_passes"], ex["final_runs"]],
            "payload_gates": ex.get("payload_gates"),
            "accepted_mutations": report["accepted_mutations"],
            "attempts": report["attempts"],
            "files": report["output"]["files"],
            "bytes": report["output"]["bytes"],
            "wall_seconds": round(wall, 1),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="nested-100-det,single-file-det,nested-500-flaky")
    ap.add_argument("--sampling", default=None, help="--sampling value (default: the default)")
    ap.add_argument("--repomin-src", type=Path, default=REPO)
    ap.add_argument("--label", default="current")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    cases = {c.name: c for c in all_cases(Path(tempfile.gettempdir()) / "repomin-bench-cache")}
    for name in args.cases.split(","):
        for i in range(args.repeat):
            row = measure(cases[name], args.sampling, args.repomin_src, args.jobs)
            row.update(label=args.label, sampling_requested=args.sampling or "default", rep=i)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
