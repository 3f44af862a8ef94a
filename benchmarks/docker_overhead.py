"""Per-sample overhead of the Docker runner's strategies against the host runner, in one run.

    PYTHONPATH=src python benchmarks/docker_overhead.py [--image REF] [--samples N] [--jobs N]

Runs ``true`` -- a command that costs nothing, so what is measured is the boundary -- with:
the host runner (its default boundary, and the cheaper supervisor-only one); the Docker runner's
sample agent (``agent-per-worker``, the default) and one ``docker exec`` per sample
(``exec-per-sample``), each with every tree transport this machine supports; and one container
per sample (``--fresh-container``). Every sample gets a tree not seen before (as a new candidate
would), on two trees: 50 files / 5 KB ("trivial") and 200 files / 1 MB. Prints, per strategy,
the median wall time of one sample (one thread), the difference to the default host runner's
median, and the throughput with ``--jobs`` threads. Needs a Docker engine and the image
(``docker/build-test-images.sh``); nothing is written but to stdout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from repomin.errors import UsageError
from repomin.runners.base import RunRequest
from repomin.runners.docker import DockerRunner
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree

HOST = "host"
FRESH = "docker container/sample"


def make_tree(files: int, total_bytes: int) -> Tree:
    size = max(1, total_bytes // files)
    return Tree.of(
        {
            f"pkg{i % 20}/mod{i}.txt": Entry(
                "file", (os.urandom(size // 2 + 1).hex().encode())[:size]
            )
            for i in range(files)
        }
    )


def per_sample(runner: Any, tree: Tree, samples: int, jobs: int) -> tuple[float, float]:
    """Median seconds per sample (one thread) and samples per second with ``jobs`` threads."""
    request = RunRequest("true", {}, 60)
    first = next(iter(tree))
    variants = [tree.replace(first, f"variant {i}\n".encode()) for i in range(samples + 2)]
    for variant in variants[:2]:  # warm-up: worker start, first connection
        outcome = runner.run(variant, request)
        if outcome.exit_code != 0:
            raise SystemExit(f"benchmark sample failed on {runner.backend}: {outcome}")
    times = []
    for variant in variants[2:]:
        started = time.perf_counter()
        runner.run(variant, request)
        times.append(time.perf_counter() - started)
    per_thread = max(1, samples // jobs)
    started = time.perf_counter()

    def work(k: int) -> None:
        for i in range(per_thread):
            runner.run(variants[(k * per_thread + i) % len(variants)], request)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statistics.median(times), per_thread * jobs / (time.perf_counter() - started)


def strategies(image: str, jobs: int, samples: int) -> list[tuple[str, Callable[[], Any], int]]:
    label = f"repomin-bench-{uuid.uuid4().hex[:8]}"

    def docker(**kwargs: Any) -> Callable[[], Any]:
        return lambda: DockerRunner(image=image, session_label=label, jobs=jobs, **kwargs)

    return [
        (HOST, HostRunner, samples),
        ("host, supervisor only", lambda: HostRunner(isolation="supervisor"), samples),
        ("docker agent, bind", docker(strategy="agent", transport="bind"), samples),
        ("docker agent, stream", docker(strategy="agent", transport="stream"), samples),
        ("docker exec, bind", docker(strategy="exec", transport="bind"), samples),
        ("docker exec, stream", docker(strategy="exec", transport="stream"), samples),
        (FRESH, docker(fresh_container=True), max(4, samples // 4)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--image", default="repomin-test/busybox:1")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    trees = [
        ("trivial: 50 files, 5 KB", make_tree(50, 5 << 10)),
        ("200 files, 1 MB", make_tree(200, 1 << 20)),
    ]
    print(
        f"`true` per sample: median of {args.samples} samples on one thread (container/sample: "
        f"{max(4, args.samples // 4)}), each on a new tree; throughput with {args.jobs} threads"
    )
    for tree_name, tree in trees:
        print(f"\ntree: {tree_name}")
        print(f"  {'strategy':26} {'ms/sample':>10} {'above host':>11} {'samples/s':>10}")
        host: float | None = None
        for name, factory, samples in strategies(args.image, args.jobs, args.samples):
            try:
                runner = factory()
            except UsageError as exc:
                print(f"  {name:26} unavailable here: {exc}")
                continue
            try:
                median, throughput = per_sample(runner, tree, samples, args.jobs)
            finally:
                runner.close()
            host = median if name == HOST else host
            above = "" if host is None or name == HOST else f"{(median - host) * 1000:+.1f} ms"
            print(f"  {name:26} {median * 1000:10.1f} {above:>11} {throughput:10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
