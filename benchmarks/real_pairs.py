"""The real suite, two checkouts side by side: a search change against the version before it.

For every case, ``real_suite.py`` runs once per checkout, both at the same time (so both see
the same machine load: a capped case's result depends on how many runs fit in the cap, and a
load that changes between two sequential runs changes it more than most search changes do),
each into its own results directory, with its own case cache and work trees. Then one table
puts the two rows of each case side by side, with the head start's event where the ``ordered``
pass ran one (``files search first over N files ...``).

    python benchmarks/real_pairs.py --before ../base --after . --cap 240 --jobs 2 \\
        --out benchmarks/results/2026-12-03-head-start

``--table-only`` re-renders ``OUT/pairs.md`` from ``OUT/before`` and ``OUT/after``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from real_cases import suite
from real_suite import fmt_time, time_to

HERE = Path(__file__).resolve().parent


def run_pair(args: argparse.Namespace, case: str) -> None:
    """Both checkouts on ``case`` at once; waits for both."""
    procs = []
    for side, src in (("before", args.before), ("after", args.after)):
        out: Path = args.out / side
        out.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            str(HERE / "real_suite.py"),
            "--cap",
            str(args.cap),
            "--jobs",
            str(args.jobs),
            "--cases",
            case,
            "--repomin-src",
            str(src.resolve()),
            "--out",
            str(out),
            "--cache",
            str(args.cache / side),
        ]
        log = (args.out / f"log-{side}-{case}.txt").open("w")
        procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), log))
    for proc, log in procs:
        proc.wait()
        log.close()


def _row(r: dict[str, Any] | None) -> tuple[str, str, str, str]:
    """files / bytes, runs, time to 2× (files, bytes), by hand."""
    if r is None:
        return "—", "—", "—", "—"
    if r.get("status") != "ok":
        return f"{r.get('status')}", "—", "—", "—"
    final = f"{r['final']['files']} / {r['final']['bytes']:,}"
    cap = " (cap)" if r.get("hit_cap") else ""
    hand = r["by_hand"]
    return final, f"{r.get('runs')}{cap}", _to2x(r), f"{hand['passes']}/{hand['runs']}"


def _to2x(r: dict[str, Any]) -> str:
    steps = r.get("timeline", [])
    ef, eb = r.get("expert_files"), r.get("expert_bytes")
    src = r["source"]
    tf = time_to(steps, "files", None if ef is None else 2 * ef, src["files"])
    tb = time_to(steps, "bytes", None if eb is None else 2 * eb, src["bytes"])
    return f"{fmt_time(tf)} / {fmt_time(tb)}"


def head_start(out: Path, case: str) -> str:
    """The ``ordered`` pass's head-start event of ``case``'s report, if any."""
    report = out / "reports" / f"{case}.report.json"
    if not report.exists():
        return ""
    events = json.loads(report.read_text("utf-8")).get("events", [])
    for e in events:
        if e.get("phase") == "ordered" and str(e.get("description", "")).startswith(
            "files search first"
        ):
            return f"{e.get('runs')} runs, {e.get('files_before')} → {e.get('files_after')} files"
    return ""


def render(out: Path, names: list[str]) -> str:
    cases = {c.name: c for c in suite(Path.home() / ".cache" / "repomin-bench")}
    head = (
        "| case | expert min | before: files / B | after: files / B | runs before / after "
        "| to 2× files / bytes, before | after | by hand b / a | head start (after) |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n"
    )
    lines = []
    for name in names:
        rows = []
        for side in ("before", "after"):
            path = out / side / f"{name}.json"
            r = json.loads(path.read_text("utf-8")) if path.exists() else None
            if r is not None and name in cases:
                r["expert_files"] = cases[name].expert_files
                r["expert_bytes"] = cases[name].expert_bytes
            rows.append(_row(r))
        (fb, rb, tb, hb), (fa, ra, ta, ha) = rows
        case = cases.get(name)
        expert = (
            f"{case.expert_files} / {case.expert_bytes:,}" if case and case.expert_files else ""
        )
        lines.append(
            f"| {name} | {expert} | {fb} | {fa} | {rb} / {ra} | {tb} | {ta} | {hb} / {ha} "
            f"| {head_start(out / 'after', name)} |"
        )
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout before the change")
    parser.add_argument("--after", type=Path, required=True, help="checkout with the change")
    parser.add_argument("--cap", type=float, default=240.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cases", default=None, help="comma-separated case names")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "repomin-pairs")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    names = (
        args.cases.split(",")
        if args.cases
        else [c.name for c in suite(Path.home() / ".cache" / "repomin-bench")]
    )
    if not args.table_only:
        for name in names:
            started = time.strftime("%H:%M:%S")
            print(f"{started} {name}", flush=True)
            run_pair(args, name)
    table = render(args.out, names)
    (args.out / "pairs.md").write_text(table, "utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
