"""Jobs/flaky benchmark: ``--jobs 1`` vs ``--jobs 2`` wall time on one case, and oracle runs per
accepted mutation for a deterministic vs a flaky failure -- measured side by side in one run.

    python benchmarks/jobs_and_flaky.py [--files 300] [--sleep 0.05] [--repeat 1]

Each command sleeps ``--sleep`` seconds per run (so that the runner, not Python start-up,
dominates, as it does for a real test suite). Prints a table; writes nothing else.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NEEDED = ["pkg/core/a.txt", "pkg/util/b.txt", "c.txt"]


def make_repo(root: Path, n_files: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    dirs = ["pkg", "pkg/core", "pkg/util", "docs", "tests", "tests/unit", "vendor/x", "vendor/y"]
    paths = set(NEEDED)
    while len(paths) < n_files:
        paths.add(f"{rng.choice(dirs)}/f{len(paths)}.txt")
    for rel in sorted(paths):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"filler {j} of {rel}\n" for j in range(rng.randint(2, 8))]
        if rel in NEEDED:
            lines.insert(rng.randint(0, len(lines)), "NEEDED\n")
        p.write_text("".join(lines))


def command(sleep: float, flaky: bool) -> str:
    gate = "[ $(od -An -N1 -tu1 /dev/urandom) -lt 154 ] || exit 0; " if flaky else ""
    return (
        f"sleep {sleep}; cat {' '.join(NEEDED)} 2>/dev/null | grep -c NEEDED | grep -qx 3 "
        f"&& {{ {gate}echo BUG; exit 1; }}; exit 0"
    )


def reduce(src: Path, out: Path, cmd: str, jobs: int, passes: str) -> dict[str, float]:
    start = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "repomin",
            "reduce",
            str(src),
            "-o",
            str(out),
            "--force",
            "--command",
            cmd,
            "--match",
            "BUG",
            "--jobs",
            str(jobs),
            "--no-session",
            "-q",
            "--passes",
            passes,
        ],
        check=True,
    )
    wall = time.monotonic() - start
    report = json.loads((out.parent / (out.name + ".repomin") / "report.json").read_text())
    ex = report["execution"]
    search_runs = ex["oracle_samples"] - ex["baseline_runs"] - ex["final_runs"]
    return {
        "wall": wall,
        "runs": ex["oracle_samples"],
        "search_runs": search_runs,
        "accepted": report["accepted_mutations"],
        "files": report["output"]["files"],
        "bytes": report["output"]["bytes"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--sleep", type=float, default=0.05)
    ap.add_argument("--passes", default="files,lines")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="repomin-bench-"))
    try:
        src = work / "repo"
        make_repo(src, args.files)
        det = command(args.sleep, flaky=False)
        r1 = reduce(src, work / "j1", det, 1, args.passes)
        r2 = reduce(src, work / "j2", det, 2, args.passes)
        same = _payload(work / "j1") == _payload(work / "j2")
        print(f"case: {args.files} files, 3 needed, {args.sleep}s per run, passes {args.passes}")
        print(f"{'run':<28}{'wall s':>8}{'runs':>7}{'accepted':>10}{'files':>7}{'bytes':>7}")
        for name, r in (("deterministic --jobs 1", r1), ("deterministic --jobs 2", r2)):
            print(
                f"{name:<28}{r['wall']:8.1f}{r['runs']:7.0f}{r['accepted']:10.0f}"
                f"{r['files']:7.0f}{r['bytes']:7.0f}"
            )
        print(f"wall time ratio jobs1/jobs2: {r1['wall'] / r2['wall']:.2f}x (same payload: {same})")
        fl = reduce(src, work / "fl", command(args.sleep, flaky=True), 2, args.passes)
        print(
            f"{'flaky (p~0.6) --jobs 2':<28}{fl['wall']:8.1f}{fl['runs']:7.0f}"
            f"{fl['accepted']:10.0f}{fl['files']:7.0f}{fl['bytes']:7.0f}"
        )
        det_rpa = r2["search_runs"] / max(1, r2["accepted"])
        fl_rpa = fl["search_runs"] / max(1, fl["accepted"])
        print(
            f"search runs per accepted mutation: deterministic {det_rpa:.1f}, "
            f"flaky {fl_rpa:.1f} (ratio {fl_rpa / det_rpa:.1f}x)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _payload(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


if __name__ == "__main__":
    main()
