"""Where the sample slots sit idle: one reduction of the cluster benchmark's case, sample by sample.

    PYTHONPATH=src python benchmarks/occupancy.py [--workers 16] [--sleep 1] [--rate 0.6]
        [--cluster] [--bin 2] [--json OUT]

The timeline view of ``slots.py`` (which sums the same spans per suite case) on the case of
``benchmarks/cluster.py``: runs it (2,000 files in nested directories, 6 needed, every
run sleeps ``--sleep`` seconds; ``--rate P``: the failure shows in a run with probability P) with
the user's defaults for the baseline and the payload gate, ``--no-trace``, in this process, on
the host runner with ``--jobs W`` or (``--cluster``) through a fresh local Dask cluster of W
single-threaded workers. Every sample's start and end are recorded where the runner runs it
(``HostRunner.run`` / ``ClusterRunner.run``, wrapped for this process only), and the reduction's
events are read from its report. Prints, per ``--bin`` seconds: the mean number of samples
running (out of W), a bar, which phases the samples were of (the label before the sample
number: ``files``, ``lines``, ``incumbent`` for the re-checks of a new incumbent, ``final``),
and the events of that bin; then the wall time, the samples and the utilisation (sample-seconds
÷ W × wall, as ``cluster.py`` prints it, but counting from this process's start). Time spent
with few samples running and no search event is where the search waits on something serial.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from slots import phase_of, timed

import cluster as bench  # the benchmark's case, from this folder

#: (start, end, sample id), seconds from the reduction's start (``slots.timed``).
Sample = tuple[float, float, str]


def _table(
    log: list[Sample], events: list[dict[str, Any]], wall: float, slots: int, width: float
) -> None:
    bins = int(wall / width) + 1
    busy = [0.0] * bins
    phases: list[collections.Counter[str]] = [collections.Counter() for _ in range(bins)]
    for began, ended, sample_id in log:
        phases[min(bins - 1, int(began / width))][phase_of(sample_id)] += 1
        t = began
        while t < ended:
            b = min(bins - 1, int(t / width))
            step = min(ended, (b + 1) * width) - t
            busy[b] += step
            t += step
    said: dict[int, list[str]] = collections.defaultdict(list)
    for event in events:
        said[min(bins - 1, int(event["elapsed_seconds"] / width))].append(
            f"{event['phase']} {event['decision']}"
        )
    print(f"{'from s':>7} {'running':>7}  {'':<{slots}}  samples started  events")
    for b in range(bins):
        mean = busy[b] / width
        started = ", ".join(f"{k} {v}" for k, v in phases[b].most_common())
        bar = "#" * round(mean)
        print(f"{b * width:7.0f} {mean:7.1f}  {bar:<{slots}}  {started}  {'; '.join(said[b])}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--needed", type=int, default=6)
    ap.add_argument("--sleep", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=0.6)
    ap.add_argument(
        "--cluster", action="store_true", help="a local Dask cluster, not the host runner"
    )
    ap.add_argument("--bin", type=float, default=2.0, help="seconds per line")
    ap.add_argument("--json", type=Path, help="also write the samples and events here")
    args = ap.parse_args()

    from repomin.cli.main import main as repomin

    root = Path(tempfile.mkdtemp(prefix="repomin-bench-occupancy-"))
    log: list[Sample] = []
    try:
        needed = bench.make_repo(root / "repo", args.files, args.needed)
        dask = bench.Cluster(root, args.workers) if args.cluster else None
        start = [time.monotonic()]
        timed(log, start)
        argv = [
            "reduce", str(root / "repo"), "-o", str(root / "out"),
            "--command", bench.command(needed, args.sleep, args.rate), "--match", "BUG",
            "--no-trace", "--no-session", "-q", "--timeout", str(30 + 5 * args.sleep),
            *(["--cluster", dask.address] if dask else ["--jobs", str(args.workers)]),
        ]  # fmt: skip
        try:
            repomin(argv)
        except SystemExit as stop:
            if stop.code:
                raise
        finally:
            if dask is not None:
                dask.stop()
        wall = time.monotonic() - start[0]
        report = json.loads((root / "out.repomin" / "report.json").read_text())
        kept = sorted(
            str(p.relative_to(root / "out")) for p in (root / "out").rglob("*") if p.is_file()
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    _table(log, report["events"], wall, args.workers, args.bin)
    busy = sum(ended - began for began, ended, _ in log)
    print(
        f"\nwall {wall:.1f} s, {len(log)} samples, utilisation {busy / (args.workers * wall):.0%}, "
        f"payload exact: {kept == needed}, load {os.getloadavg()[0]:.2f}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps({"samples": log, "events": report["events"], "wall": wall}))


if __name__ == "__main__":
    main()
