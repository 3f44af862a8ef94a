"""Run ReproMin and its peers side by side on the benchmark cases; one JSON result per case+tool.

Every tool that applies to a case reduces its own copy of the same source tree, one tool at a
time, with the same time cap and the same parallelism (``--jobs``; shrinkray's
``--parallelism``, C-Vise's ``--n``, picire's ``--jobs``; Lithium runs one test at a time). The
final tree of every tool is then checked independently: copied fresh and run against the
case's contract once (deterministic cases) or 20 times (flaky cases). Results go to
``OUT/<case>__<tool>.json``; ``OUT/run.json`` records the machine and the settings. At the end
the ratio table of :mod:`compare` is printed for this run.

    python benchmarks/run.py --quick --out bench-results/quick
    python benchmarks/run.py --out bench-results/full --jobs 2
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import compare
from cases import Case, CaseUnavailable, select
from interesting import run_once
from suite import all_cases
from tools import ALL_TOOLS, Outcome, Settings, Tool, tmpfs_dir

BENCH_SCHEMA_VERSION = 1
FLAKY_VERIFY_RUNS = 20
#: A flaky case "still reproduces" when at least this many of the 20 fresh runs fail the same
#: way (the source fails in ~60% of runs; 5 of 20 is a rate >= 0.25).
FLAKY_MIN_PASSES = 5
REPO = Path(__file__).resolve().parent.parent


def tree_size(root: Path) -> tuple[int, int]:
    files = 0
    size = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            files += 1
            size += path.stat().st_size
    return files, size


def verify(case: Case, final: Path, jobs: int) -> dict[str, Any]:
    """Independent check: fresh copies of ``final`` run against the case's contract."""
    runs = FLAKY_VERIFY_RUNS if case.flaky else 1

    def one(_: int) -> bool:
        with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
            copy = Path(tmp) / "tree"
            shutil.copytree(final, copy, symlinks=True)
            return run_once(case.contract, copy)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        passes = sum(pool.map(one, range(runs)))
    needed = FLAKY_MIN_PASSES if case.flaky else 1
    return {"runs": runs, "passes": passes, "reproduces": passes >= needed}


def machine() -> dict[str, Any]:
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": load,
    }


def git_commit(src: Path) -> str | None:
    try:
        proc = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return proc.stdout.strip() or None


def write_result(out: Path, result: dict[str, Any]) -> None:
    path = out / f"{result['case']}__{result['tool']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    tmp.replace(path)


def run_tool(
    tool: Tool, case: Case, src: Path, settings: Settings, base: dict[str, Any]
) -> dict[str, Any]:
    result = {**base, "tool": tool.name, "tool_version": tool.version(settings)}
    reason = tool.unavailable()
    if reason is not None:
        return {**result, "status": "unavailable", "reason": reason}
    settings.work.mkdir(parents=True)
    outcome: Outcome = tool.run(case, src, settings)
    result.update(
        wall_time_seconds=round(outcome.wall_time_seconds, 3),
        oracle_runs=outcome.oracle_runs,
        hit_cap=outcome.hit_cap,
        exit_code=outcome.exit_code,
        final_source=outcome.final_source,
        details=outcome.details,
        load_average_after=machine()["load_average"],
    )
    if outcome.final is None or not outcome.final.is_dir():
        return {**result, "status": "failed", "reason": "no final tree", "final": None}
    files, size = tree_size(outcome.final)
    result["final"] = {"files": files, "bytes": size}
    result["verification"] = verify(case, outcome.final, settings.jobs)
    result["status"] = "ok" if result["verification"]["reproduces"] else "does_not_reproduce"
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the quick suite (< 5 min, 2 cores)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the results")
    parser.add_argument("--cases", help="comma-separated case names (default: the suite)")
    parser.add_argument("--tools", help="comma-separated tools (default: all that apply)")
    parser.add_argument("--jobs", type=int, default=2, help="parallelism for every tool")
    parser.add_argument("--cap", type=float, default=None, help="override every case's cap (s)")
    parser.add_argument("--label", default=None, help="version label stored in every result")
    parser.add_argument(
        "--repomin-src",
        type=Path,
        default=None,
        help="run the ReproMin of this checkout (PYTHONPATH=SRC/src) instead of the installed one",
    )
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "repomin-bench")
    parser.add_argument("--work", type=Path, default=None, help="keep work trees here")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)

    suite = all_cases(args.cache)
    if args.list:
        for c in suite:
            flag = " (quick)" if c.quick else ""
            print(f"{c.name}{flag}: {c.description}")
        return 0
    cases = select(suite, args.cases.split(",") if args.cases else None, args.quick)
    tools = list(ALL_TOOLS)
    if args.tools:
        wanted = args.tools.split(",")
        known = {t.name: t for t in ALL_TOOLS}
        missing = [w for w in wanted if w not in known]
        if missing:
            parser.error(f"unknown tool {missing[0]!r}; available: {', '.join(known)}")
        tools = [known[w] for w in wanted]

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    work_root = args.work or Path(tempfile.mkdtemp(prefix="repomin-bench-"))
    work_root.mkdir(parents=True, exist_ok=True)
    repomin_src = args.repomin_src.resolve() if args.repomin_src else REPO
    run_id = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    label = args.label or git_commit(repomin_src) or "unlabelled"
    manifest = {
        "bench_schema_version": BENCH_SCHEMA_VERSION,
        "run_id": run_id,
        "label": label,
        "mode": "quick" if args.quick else "full",
        "jobs": args.jobs,
        "machine": machine(),
        "repomin_commit": git_commit(repomin_src),
        "cases": [c.name for c in cases],
        "tools": [t.name for t in tools],
    }
    (out / "run.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    started = time.monotonic()
    try:
        for case in cases:
            run_case(case, tools, args, out, work_root, manifest, repomin_src)
    finally:
        if args.work is None:
            shutil.rmtree(work_root, ignore_errors=True)
    manifest["total_seconds"] = round(time.monotonic() - started, 1)
    (out / "run.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    print(f"\nbenchmark finished in {manifest['total_seconds']} s; results in {out}\n")
    print(compare.render(compare.load_runs([out]), markdown=False))
    return 0


def run_case(
    case: Case,
    tools: list[Tool],
    args: argparse.Namespace,
    out: Path,
    work_root: Path,
    manifest: dict[str, Any],
    repomin_src: Path,
) -> None:
    cap = args.cap if args.cap is not None else case.cap(args.quick)
    case_dir = work_root / case.name
    shutil.rmtree(case_dir, ignore_errors=True)
    src = case_dir / "src"
    src.mkdir(parents=True)
    base: dict[str, Any] = {
        "bench_schema_version": BENCH_SCHEMA_VERSION,
        "run_id": manifest["run_id"],
        "label": manifest["label"],
        "mode": manifest["mode"],
        "case": case.name,
        "case_description": case.description,
        "flaky": case.flaky,
        "single_file": case.single_file is not None,
        "ideal_files": case.ideal_files,
        "cap_seconds": cap,
        "jobs": args.jobs,
        "machine": manifest["machine"],
        "repomin_commit": manifest["repomin_commit"],
    }
    print(f"== {case.name}: {case.description} (cap {cap:.0f} s, jobs {args.jobs})", flush=True)
    try:
        case.build(src)
    except CaseUnavailable as exc:
        print(f"   skipped: {exc}", flush=True)
        for tool in tools:
            if tool.applies(case):
                write_result(
                    out, {**base, "tool": tool.name, "status": "skipped", "reason": str(exc)}
                )
        return
    files, size = tree_size(src)
    base["source"] = {"files": files, "bytes": size}
    source_check = verify(case, src, args.jobs)
    if not source_check["reproduces"]:
        print(f"   skipped: the source does not reproduce ({source_check})", flush=True)
        return
    for tool in tools:
        if not tool.applies(case):
            continue
        if args.quick and case.quick_tools is not None and tool.name not in case.quick_tools:
            continue
        settings = Settings(
            jobs=args.jobs,
            cap=cap,
            work=case_dir / tool.name,
            repomin_src=repomin_src if args.repomin_src else None,
        )
        print(f"   {tool.name} ...", end="", flush=True)
        try:
            result = run_tool(tool, case, src, settings, base)
        finally:
            shutil.rmtree(tmpfs_dir(settings.work), ignore_errors=True)
        report = Path(str((result.get("details") or {}).get("report", "")))
        if report.is_file():
            (out / "reports").mkdir(exist_ok=True)
            kept = out / "reports" / f"{case.name}__{tool.name}.report.json"
            shutil.copy2(report, kept)
            result["details"]["report"] = str(kept.relative_to(out))
        write_result(out, result)
        final = result.get("final") or {}
        ver = result.get("verification") or {}
        print(
            f" {result['status']}: {result.get('wall_time_seconds')} s, "
            f"{result.get('oracle_runs')} runs, {final.get('files')} files / "
            f"{final.get('bytes')} B, reproduces {ver.get('passes')}/{ver.get('runs')}"
            + (" (hit the cap)" if result.get("hit_cap") else ""),
            flush=True,
        )
        if args.work is None:
            shutil.rmtree(settings.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
