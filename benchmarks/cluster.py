"""Cluster benchmark: one latency-bound reduction on a local Dask cluster of W workers.

    PYTHONPATH=src python benchmarks/cluster.py [--workers 1,4,8,16] [--files 2000] [--sleep 1]
        [--rate 0.6] [--host] [--defaults]

The case: a 2,000-file tree in nested directories, 6 of which are needed; every run sleeps
``--sleep`` seconds and then checks which of the needed files exist (so runs are latency-bound
and cheap on CPU, like a remote build that mostly waits). For each W a fresh scheduler and W
single-threaded workers start on 127.0.0.1 (``dask scheduler`` / ``dask worker``), then
``repomin reduce --cluster`` runs with ``--jobs`` = W threads (the default) and ``--no-trace``
(a traced run would see the needed files at once and leave no search to parallelise). Prints
one JSON object per W and a Markdown table: wall, oracle runs, speedup over 1 worker (or the
first W), bytes shipped per sample, and the workers' utilisation: sample-seconds ÷ (W × wall)
(the samples' own wall time, ``execution.sample_wall_seconds``, over the slot time the
reduction had). Writes nothing else (temporary directories are removed).

``--rate P``: the failure shows in a run with probability P (a flaky command: the search
samples). ``--host``: the same reduction with ``--jobs W`` on the host runner instead of a
cluster (the search's width without Dask's dispatch). ``--defaults``: the user's defaults for
the baseline and the payload gate instead of two runs each (the gate then costs what a user
pays).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"


def make_repo(root: Path, n_files: int, needed: int, seed: int = 14) -> list[str]:
    rng = random.Random(seed)
    dirs = [""]
    for i in range(max(4, n_files // 40)):
        parent = rng.choice(dirs)
        dirs.append(f"{parent}/d{i}" if parent else f"d{i}")
    paths: list[str] = []
    while len(paths) < n_files:
        d = rng.choice(dirs)
        name = f"f{len(paths)}.txt"
        paths.append(f"{d}/{name}" if d else name)
    for rel in paths:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"content of {rel}\n" * rng.randint(1, 6))
    return sorted(rng.sample(paths, needed))


def command(needed: list[str], sleep: float, rate: float = 1.0) -> str:
    checks = " && ".join(f"test -e {p}" for p in needed)
    if rate < 1.0:  # a uniform draw in [0, 65536) from the kernel: sh has no $RANDOM
        draw = "$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')"
        checks += f" && [ {draw} -lt {int(rate * 65536)} ]"
    return f"sleep {sleep}; if {checks}; then echo BUG; exit 1; fi; exit 0"


class Cluster:
    def __init__(self, root: Path, workers: int) -> None:
        env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        self.procs: list[subprocess.Popen[bytes]] = []
        file = root / "scheduler.json"
        self.procs.append(
            self._start(
                [
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(file),
                ],
                env,
            )
        )
        deadline = time.monotonic() + 60
        while not (file.exists() and file.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.address = str(json.loads(file.read_text())["address"])
        for i in range(workers):
            (root / f"w{i}").mkdir()
            self.procs.append(
                self._start(
                    [
                        "worker",
                        self.address,
                        "--nthreads",
                        "1",
                        "--no-nanny",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                        "--local-directory",
                        str(root / f"w{i}"),
                    ],
                    env,
                )
            )
        from distributed import Client

        with Client(self.address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=120)

    @staticmethod
    def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        exe = Path(sys.executable).with_name("dask")
        return subprocess.Popen(
            [str(exe), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def run_one(
    workers: int,
    files: int,
    needed_n: int,
    sleep: float,
    rate: float = 1.0,
    host: bool = False,
    defaults: bool = False,
    keep: Path | None = None,
) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="repomin-bench-cluster-"))
    try:
        src = root / "repo"
        needed = make_repo(src, files, needed_n)
        cluster = None if host else Cluster(root, workers)
        try:
            out = root / "out"
            argv = [
                sys.executable,
                "-m",
                "repomin",
                "reduce",
                str(src),
                "-o",
                str(out),
                "--command",
                command(needed, sleep, rate),
                "--match",
                "BUG",
                "--no-trace",
                *([] if defaults else ["--baseline-runs", "2", "--final-runs", "2"]),
                "--no-session",
                "-q",
                "--timeout",
                str(30 + 5 * sleep),
                *(["--jobs", str(workers)] if cluster is None else ["--cluster", cluster.address]),
            ]
            env = {**os.environ, "PYTHONPATH": str(SRC)}
            t0 = time.monotonic()
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=7200)
            wall = time.monotonic() - t0
        finally:
            if cluster is not None:
                cluster.stop()
        if done.returncode != 0:
            raise SystemExit(f"reduce failed ({done.returncode}): {done.stderr[-2000:]}")
        report = json.loads((root / "out.repomin" / "report.json").read_text())
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / "out.repomin" / "report.json", keep / f"report-{workers}.json")
        ex = report["execution"]
        kept = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
        return {
            "workers": workers,
            "jobs": ex["jobs"],
            "wall_seconds": round(wall, 1),
            "oracle_runs": ex["oracle_samples"],
            "bytes_per_sample": ex.get("cluster_bytes_per_sample") or 0,
            "bytes_shipped": ex.get("cluster_bytes_shipped") or 0,
            "payload_is_needed_files": kept == needed,
            "utilisation": round(ex["sample_wall_seconds"] / (workers * wall), 3),
            "load": round(os.getloadavg()[0], 2),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def throughput(
    workers: int, files: int, needed_n: int, sleep: float, samples: int
) -> dict[str, Any]:
    """``samples`` independent runs of the full tree through the cluster runner, ``workers``
    at a time: the dispatch alone, without a search deciding what to run next."""
    from concurrent.futures import ThreadPoolExecutor

    from repomin.app.selection import SelectionOptions, select
    from repomin.cluster.runner import ClusterRunner
    from repomin.runners.base import RunRequest

    root = Path(tempfile.mkdtemp(prefix="repomin-bench-cluster-"))
    try:
        needed = make_repo(root / "repo", files, needed_n)
        tree = select(root / "repo", SelectionOptions()).tree
        cluster = Cluster(root, workers)
        try:
            runner = ClusterRunner(cluster.address, {"backend": "host"})
            request = RunRequest(command(needed, sleep), {}, 60.0, "t")
            runner.run(tree, request)  # every worker's cache warms on its first sample
            t0 = time.monotonic()
            with ThreadPoolExecutor(workers) as pool:
                outs = list(pool.map(lambda _: runner.run(tree, request), range(samples)))
            wall = time.monotonic() - t0
            runner.close()
        finally:
            cluster.stop()
        assert all(o.exit_code == 1 for o in outs), [o.infrastructure_error for o in outs]
        ideal = samples / workers * sleep
        return {
            "workers": workers,
            "samples": samples,
            "wall_seconds": round(wall, 1),
            "ideal_seconds": round(ideal, 1),
            "efficiency": round(ideal / wall, 2),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--workers", default="1,4,8,16")
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--needed", type=int, default=6)
    ap.add_argument("--sleep", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=1.0, help="the failure's rate per run")
    ap.add_argument("--host", action="store_true", help="--jobs W on the host, no cluster")
    ap.add_argument("--defaults", action="store_true", help="default baseline and gate")
    ap.add_argument("--repomin-src", type=Path, help="another checkout to run (its src/)")
    ap.add_argument("--keep", type=Path, help="copy each run's report.json here")
    ap.add_argument(
        "--throughput",
        type=int,
        default=0,
        metavar="N",
        help="instead of reductions: N independent samples at each W",
    )
    a = ap.parse_args()
    if a.repomin_src is not None:
        global SRC
        SRC = a.repomin_src.resolve() / "src"
    if a.throughput:
        for w in (int(x) for x in a.workers.split(",")):
            print(json.dumps(throughput(w, a.files, a.needed, a.sleep, a.throughput)), flush=True)
        return
    rows = []
    for w in (int(x) for x in a.workers.split(",")):
        row = run_one(w, a.files, a.needed, a.sleep, a.rate, a.host, a.defaults, a.keep)
        rows.append(row)
        print(json.dumps(row), flush=True)
    ones = [r for r in rows if r["workers"] == 1]
    base = (ones or rows)[0]["wall_seconds"]
    print(
        "\n| workers | wall (s) | oracle runs | speedup | utilisation | bytes per sample "
        "| payload = needed | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['workers']} | {r['wall_seconds']} | {r['oracle_runs']} | "
            f"{base / r['wall_seconds']:.2f}× | {r['utilisation']:.0%} | "
            f"{r['bytes_per_sample']:.0f} | {r['payload_is_needed_files']} | {r['load']} |"
        )


if __name__ == "__main__":
    main()
