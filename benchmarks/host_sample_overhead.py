"""Per-sample cost of the host runner's boundary (namespace or supervisor) on a trivial command.

PYTHONPATH=src python benchmarks/host_sample_overhead.py --isolation namespace --samples 50
"""

from __future__ import annotations

import argparse
import time

from repomin.runners.base import RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--isolation", default="auto", choices=["auto", "namespace", "supervisor"])
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--files", type=int, default=50)
    args = parser.parse_args()
    tree = Tree.of({f"f{i}": Entry("file", b"x" * 100) for i in range(args.files)})
    runner = HostRunner(isolation=args.isolation)
    try:
        for _ in range(3):
            runner.run(tree, RunRequest("true", {}, 10))
        start = time.monotonic()
        for _ in range(args.samples):
            runner.run(tree, RunRequest("true", {}, 10))
        per = (time.monotonic() - start) / args.samples * 1000
    finally:
        runner.close()
    print(f"isolation={runner.isolation} files={args.files} ms_per_sample={per:.1f}")


if __name__ == "__main__":
    main()
