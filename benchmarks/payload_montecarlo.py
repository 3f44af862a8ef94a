"""False acceptance of the flaky-deletion case through ``execute()`` (in-process), as a table row.

Runs :func:`tests.montecarlo.run_trials` with the seeds of
``tests/unit/test_payload_montecarlo.py`` and prints one JSON line per interruption count:
reductions, payloads without the bad file, kills, mean oracle runs.

    PYTHONPATH=src python benchmarks/payload_montecarlo.py --interruptions 0,1,2,3 --per-half 1000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.montecarlo import run_trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interruptions", default="0,1,2,3")
    ap.add_argument("--per-half", type=int, default=1000)
    ap.add_argument("--label", default="current")
    args = ap.parse_args()
    shm = Path("/dev/shm")
    for k in (int(x) for x in args.interruptions.split(",")):
        trials = []
        for half in (0, 1):
            start = 1_000_000 * k + 1_000 * half
            with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as d:
                trials += run_trials(Path(d), range(start, start + args.per_half), k)
        n = len(trials)
        row = {
            "label": args.label,
            "interruptions": k,
            "n": n,
            "bad_exported": sum(t.bad_deleted for t in trials),
            "exit1": sum(t.exit_code == 1 for t in trials),
            "kills": sum(t.interruptions for t in trials),
            "mean_runs": round(sum(t.runs for t in trials) / n, 2),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
