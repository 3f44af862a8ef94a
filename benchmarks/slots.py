"""Slot-usage benchmark: how busy ``--jobs N`` keeps its slots, sample by sample.

    PYTHONPATH=src python benchmarks/slots.py [--case nested-500-det] [--jobs 2] [--repeat 1]

Builds the case (``benchmarks/cases.py``), runs ``repomin reduce`` on it *in this process*
with every ``HostRunner.run`` timed, and prints per reduction: the wall, when the first sample
started, the seconds spent with 0, 1, ... samples in flight, and per phase the time its samples
ran with no other sample beside them (slot time a search left idle), plus the samples that ran
alone. Writes nothing else (temporary directories are removed).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from cases import select  # noqa: E402
from suite import all_cases  # noqa: E402

from repomin.runners import host  # noqa: E402

Span = tuple[float, float, str]


def timed(spans: list[Span], t0: list[float]) -> None:
    """Wrap ``HostRunner.run`` and ``ClusterRunner.run`` so that every sample's start, end and
    id land in ``spans`` (times from ``t0[0]``)."""
    from repomin.cluster.runner import ClusterRunner

    lock = threading.Lock()

    def wrap(run: Any) -> Any:
        def wrapper(self: object, tree: object, request: object) -> object:
            start = time.monotonic() - t0[0]
            try:
                return run(self, tree, request)
            finally:
                end = time.monotonic() - t0[0]
                with lock:
                    spans.append((start, end, request.sample_id))  # type: ignore[attr-defined]

        return wrapper

    host.HostRunner.run = wrap(host.HostRunner.run)  # type: ignore[method-assign]
    ClusterRunner.run = wrap(ClusterRunner.run)  # type: ignore[method-assign]


def phase_of(sample_id: str) -> str:
    """The phase a sample was of, from its id (``files-c12-57``, ``incumbent-55``,
    ``final-3-408``)."""
    return sample_id.split("-c")[0] if "-c" in sample_id else sample_id.split("-")[0]


def alone(spans: list[Span]) -> tuple[dict[str, float], list[Span]]:
    """Per phase, the seconds its samples ran with no other sample; the samples always alone."""
    per: dict[str, float] = collections.Counter()
    lonely: list[Span] = []
    for i, (s, e, sid) in enumerate(spans):
        beside = [(a, b) for j, (a, b, _) in enumerate(spans) if j != i and a < e and b > s]
        cover = sorted((max(s, a), min(e, b)) for a, b in beside)
        busy, cur = 0.0, None
        for a, b in cover:
            if cur is not None and a <= cur[1]:
                cur = (cur[0], max(cur[1], b))
            else:
                busy += cur[1] - cur[0] if cur else 0.0
                cur = (a, b)
        busy += cur[1] - cur[0] if cur else 0.0
        per[phase_of(sid)] += (e - s) - busy
        if not cover:
            lonely.append((s, e, sid))
    return dict(per), lonely


def occupancy(spans: list[Span]) -> dict[int, float]:
    points = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans])
    held: dict[int, float] = collections.Counter()
    n, last = 0, points[0][0] if points else 0.0
    for t, d in points:
        held[n] += t - last
        n, last = n + d, t
    return dict(sorted(held.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--case", default="nested-500-det")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    from repomin.cli.main import main as cli

    root = Path(tempfile.mkdtemp(prefix="repomin-bench-slots-"))
    try:
        case = select(all_cases(root / "cache"), [a.case], False)[0]
        src = root / "src"
        src.mkdir()
        case.build(src)
        spans: list[Span] = []
        t0 = [0.0]
        timed(spans, t0)
        for rep in range(a.repeat):
            spans.clear()
            t0[0] = time.monotonic()
            argv = [
                "reduce",
                str(src),
                "-o",
                str(root / f"out{rep}"),
                "--force",
                "--command",
                case.contract.command,
                "--match",
                str(case.contract.match),
                "--timeout",
                str(case.contract.timeout),
                "--jobs",
                str(a.jobs),
                "--no-session",
                "-q",
                *case.repomin_args,
            ]
            with contextlib.suppress(SystemExit):
                cli(argv)
            wall = time.monotonic() - t0[0]
            spans.sort()
            per, lonely = alone(spans)
            print(
                f"case {a.case}, --jobs {a.jobs}: wall {wall:.2f} s, {len(spans)} samples, "
                f"first at {spans[0][0]:.2f} s"
            )
            print(
                "  seconds with k samples in flight:",
                {k: round(v, 2) for k, v in occupancy(spans).items()},
            )
            print(
                "  idle-slot seconds by phase (its samples alone):",
                {
                    k: round(v, 2)
                    for k, v in sorted(per.items(), key=lambda kv: -kv[1])
                    if v >= 0.005
                },
                f"total {sum(per.values()):.2f}",
            )
            print(
                f"  samples always alone: {len(lonely)}:",
                ", ".join(sid.rsplit("-", 1)[0] for _, _, sid in lonely),
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
