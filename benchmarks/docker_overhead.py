"""Per-sample overhead of the Docker runner against the host runner and a container per sample.

    python benchmarks/docker_overhead.py [--image REF] [--samples N] [--jobs N]

Runs ``true`` on generated trees (1 MB / 200 files and 10 MB / 1,000 files), each sample on
a tree not seen before (like a new candidate), with: the host runner; the Docker runner's default
strategy (one worker container, one exec per sample) with each tree transport this machine
supports; and ``--fresh-container`` (one container per sample).
Prints medians and the ratios the design is judged by, in one run. Needs a Docker engine and
the image (``docker/build-test-images.sh``).
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


def make_tree(files: int, total_bytes: int) -> Tree:
    size = total_bytes // files
    return Tree.of(
        {
            f"pkg{i % 20}/mod{i}.txt": Entry("file", (os.urandom(size // 2).hex().encode())[:size])
            for i in range(files)
        }
    )


def per_sample(runner: Any, tree: Tree, samples: int, jobs: int) -> tuple[float, float]:
    """Median seconds per sample (one thread) and samples per second with ``jobs`` threads."""
    request = RunRequest("true", {}, 60)
    # Every sample gets a tree nobody has seen (as a new candidate would): no cache helps.
    first = next(iter(tree))
    variants = [tree.replace(first, f"variant {i}\n".encode()) for i in range(samples + 2)]
    for variant in variants[:2]:  # warm-up: worker start
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
    threads = [
        threading.Thread(
            target=lambda k=k: [
                runner.run(variants[(k * per_thread + i) % len(variants)], request)
                for i in range(per_thread)
            ]
        )
        for k in range(jobs)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    throughput = per_thread * jobs / (time.perf_counter() - started)
    return statistics.median(times), throughput


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--image", default="repomin-test/busybox:1")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    label = f"repomin-bench-{uuid.uuid4().hex[:8]}"

    def docker(**kwargs: Any) -> Callable[[], Any]:
        return lambda: DockerRunner(image=args.image, session_label=label, jobs=args.jobs, **kwargs)

    strategies: list[tuple[str, Callable[[], Any], int]] = [
        ("host", HostRunner, args.samples),
        ("docker exec, bind", docker(transport="bind"), args.samples),
        ("docker exec, stream", docker(transport="stream"), args.samples),
        ("docker container/sample", docker(fresh_container=True), max(4, args.samples // 3)),
    ]
    trees = [
        ("1 MB, 200 files", make_tree(200, 1 << 20)),
        ("10 MB, 1000 files", make_tree(1000, 10 << 20)),
    ]
    print(
        f"per-sample cost of `true`, median of {args.samples} (container/sample: fewer); "
        f"throughput with {args.jobs} jobs"
    )
    for tree_name, tree in trees:
        print(f"\ntree: {tree_name}")
        results: dict[str, float] = {}
        for name, factory, samples in strategies:
            try:
                runner = factory()
            except UsageError as exc:
                print(f"  {name:26} unavailable here: {exc}")
                continue
            try:
                median, throughput = per_sample(runner, tree, samples, args.jobs)
            finally:
                runner.close()
            results[name] = median
            print(f"  {name:26} {median * 1000:8.1f} ms/sample {throughput:7.1f} samples/s")
        host = results.get("host")
        fresh = results.get("docker container/sample")
        for name in ("docker exec, bind", "docker exec, stream"):
            if name in results and host and fresh:
                print(
                    f"  {name}: {results[name] / host:5.1f}x the host runner, "
                    f"{fresh / results[name]:4.1f}x faster than a container per sample"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
