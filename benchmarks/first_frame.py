"""Seconds from spawning ``repomin reduce`` under a pseudo-terminal to its first live frame.

Usage: ``python benchmarks/first_frame.py [ROOT] [N]`` (ROOT: a checkout whose ``src`` is
imported, default this one; N runs, default 5). Prints every time and the median. Needs
``pexpect`` (a test dependency).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect


def first_frame(root: Path) -> float:
    with tempfile.TemporaryDirectory(prefix="repomin-ff-") as d:
        src = Path(d) / "src"
        src.mkdir()
        (src / "a.txt").write_text("a\n")
        env = {**os.environ, "PYTHONPATH": str(root / "src"), "TERM": "xterm", "COLUMNS": "200"}
        argv = ["-m", "repomin", "reduce", str(src), "-o", f"{d}/out", "--command",
                "sleep 2; echo BUG", "--match", "BUG", "--baseline-runs", "1", "--no-trace",
                "--no-session"]  # fmt: skip
        start = time.monotonic()
        child = pexpect.spawn(sys.executable, argv, env=env, dimensions=(24, 200))
        try:
            child.expect(rb"\d:\d\d  ", timeout=60)  # the clock, the line's first field
            return time.monotonic() - start
        finally:
            child.kill(2)
            child.close(force=True)


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    times = [first_frame(root) for _ in range(n)]
    print(f"{root}: first frame after {[round(t, 2) for t in times]} s, median "
          f"{statistics.median(times):.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
