"""Run ReproMin over the whole real suite with a cap and print one table.

For every real case (``real_cases.suite``: tornado's sdist and the cases of ``real_python``,
``real_pytest``, ``real_npm``, ``real_java``, ``real_c``, ``real_ts``) this builds the
unreduced tree, checks that it reproduces, runs ``repomin reduce`` with ``--max-time CAP``
and ``--jobs N``, and then checks the result the way a person would: the final tree is copied
to a fresh directory and its command is run there with ``bash -c COMMAND`` in the caller's own
environment (real ``HOME``, everything inherited), three times, each against the case's
contract.

From the report ReproMin writes (``OUTPUT.repomin/report.json``) it takes the oracle runs,
the per-phase accepted/rejected counts and the timeline of accepted reductions (``events``
whose ``decision`` is ``accepted`` carry ``elapsed_seconds``, ``files`` and ``bytes``), from
which it derives the time to reach twice the hand-made minimum in files and in bytes.

Results: ``OUT/<case>.json`` (one per case, written as soon as the case is done),
``OUT/run.json`` (settings, machine, load) and ``OUT/table.md``. ``--table-only`` re-renders
the table from the JSON files with the cases' current minima.

    python benchmarks/real_suite.py --cap 300 --jobs 2 --repomin-src /work/suite-base \\
        --out benchmarks/results/2026-12-03-real-suite-base
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cases import Case, CaseUnavailable
from real_cases import check, suite, tree_size
from tools import ReproMin, Settings

#: Runs of the unreduced tree from which the yardstick identity is inferred (x3 when flaky).
SOURCE_IDENTITY_RUNS = 2
HAND_RUNS = 3
REPO = Path(__file__).resolve().parent.parent


def load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def git_commit(src: Path) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None


def _run_copy(case: Case, tree: Path) -> tuple[str, Any]:
    """One run of the case's command with ``bash -c`` in a fresh copy of ``tree``: ("ok" or
    why not, the Outcome for the identity check or None)."""
    from repomin.runners.base import Outcome

    c = case.contract
    with tempfile.TemporaryDirectory(prefix="by-hand-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(tree, copy, symlinks=True)
        try:
            proc = subprocess.run(
                ["bash", "-c", c.command],
                cwd=copy,
                env=dict(os.environ),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=c.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return "timeout", None
        outcome = Outcome(proc.returncode, proc.stdout, proc.stderr, workdir=str(copy))
        output = outcome.output
        # bash -c runs its last command in place of itself, so a crash comes back as -N;
        # a person's shell shows it as $? = 128 + N, which is what the contract names.
        status = 128 - proc.returncode if proc.returncode < 0 else proc.returncode
        if c.exit_code is not None and status != c.exit_code:
            return f"exit {status}", outcome
        if c.match is not None and re.search(c.match, output) is None:
            return "no match", outcome
        return "ok", outcome


def source_identity(case: Case, src: Path) -> Any:
    """The failure's identity in the unreduced tree, inferred by *this* checkout's ReproMin
    from a few runs by hand (the yardstick both sides of a pair are judged by), or None."""
    try:
        from repomin.failure.identity import infer_identity
    except ImportError:
        return None
    runs = SOURCE_IDENTITY_RUNS * (3 if case.flaky else 1)
    seen = [_run_copy(case, src) for _ in range(runs)]
    return infer_identity([o for status, o in seen if status == "ok" and o is not None])


def by_hand(case: Case, final: Path, runs: int = HAND_RUNS, identity: Any = None) -> dict[str, Any]:
    """Run the case's command ``runs`` times with ``bash -c`` in fresh copies of ``final``.

    The environment is the caller's (``HOME`` and all), not ReproMin's reduced one; each run
    gets its own copy so that build products of one run cannot help the next. A run passes
    when it satisfies the case's contract *and* shows the unreduced tree's identity (when one
    was inferred: ``source_identity``); a run that matches the regex but fails differently is
    ``other failure``, with what differs.
    """
    outcomes: list[str] = []
    tails: list[str] = []
    for _ in range(runs):
        status, outcome = _run_copy(case, final)
        if status == "ok" and identity is not None and outcome is not None:
            missed = identity.mismatch(outcome)
            if missed is not None:
                status = f"other failure: {missed[:300]}"
        outcomes.append(status)
        if status != "ok" and outcome is not None:
            tails.append(outcome.output[-600:])
    return {
        "runs": runs,
        "passes": outcomes.count("ok"),
        "outcomes": outcomes,
        "tails": tails,
        "identity": identity.describe() if identity is not None else None,
    }


def timeline(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The accepted reductions in order: seconds since the start, files and bytes after each."""
    rows = []
    for event in report.get("events", []):
        if event.get("decision") == "accepted" and event.get("files") is not None:
            rows.append(
                {
                    "seconds": event.get("elapsed_seconds"),
                    "phase": event.get("phase"),
                    "files": event["files"],
                    "bytes": event["bytes"],
                }
            )
    return rows


def time_to(steps: list[dict[str, Any]], key: str, target: int | None, start: int) -> float | None:
    """Seconds until ``key`` first fell to ``target`` or below (0 if the source already was)."""
    if target is None:
        return None
    if start <= target:
        return 0.0
    for step in steps:
        if step[key] <= target:
            return float(step["seconds"])
    return None


def phases(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    stats = report.get("phase_statistics", {}).get("phases", [])
    return {
        p["name"]: {
            "runs": p.get("oracle_samples"),
            "accepted": p.get("accepted"),
            "rejected": p.get("rejected"),
            "files_removed": p.get("files_removed"),
            "bytes_removed": p.get("bytes_removed"),
            "seconds": round(p.get("duration_seconds", 0.0), 1),
        }
        for p in stats
    }


def run_case(case: Case, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    result: dict[str, Any] = {
        "case": case.name,
        "kind": case.kind,
        "description": case.description,
        "flaky": case.flaky,
        "cap_seconds": args.cap,
        "jobs": args.jobs,
        "load_before": load(),
    }
    case_dir = work / case.name
    shutil.rmtree(case_dir, ignore_errors=True)
    src = case_dir / "src"
    src.mkdir(parents=True)
    try:
        case.build(src)
    except CaseUnavailable as exc:
        return {**result, "status": "skipped", "reason": str(exc)}
    files, size = tree_size(src)
    result["source"] = {"files": files, "bytes": size}
    # In a copy: the command may build in the tree (objects, a generated Makefile), and
    # ReproMin must get the tree as fetched.
    with tempfile.TemporaryDirectory(prefix="source-check-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(src, copy, symlinks=True)
        reproduces = check(case, copy, 10)
    if not reproduces:
        return {**result, "status": "skipped", "reason": "the unreduced tree does not reproduce"}
    settings = Settings(
        jobs=args.jobs,
        cap=args.cap,
        work=case_dir / "repomin",
        repomin_src=args.repomin_src,
        final_grace=args.grace,
    )
    settings.work.mkdir(parents=True)
    started = time.monotonic()
    outcome = ReproMin().run(case, src, settings)
    result["wall_seconds"] = round(time.monotonic() - started, 1)
    result["load_after"] = load()
    result["exit_code"] = outcome.exit_code
    result["hit_cap"] = outcome.hit_cap
    result["runs"] = outcome.oracle_runs
    report_path = settings.work / "out.repomin" / "report.json"
    report: dict[str, Any] = {}
    if report_path.is_file():
        report = json.loads(report_path.read_text("utf-8"))
        (args.out / "reports").mkdir(exist_ok=True)
        shutil.copy2(report_path, args.out / "reports" / f"{case.name}.report.json")
        ex = report.get("execution", {})
        result["reported_wall_seconds"] = ex.get("wall_time_seconds")
        result["stop_reason"] = ex.get("stop_reason")
        result["final_validation"] = [ex.get("final_passes"), ex.get("final_runs")]
    else:
        result["timeline_note"] = "no report.json: " + outcome.details.get("log_tail", "")[-300:]
    result["timeline"] = timeline(report)
    result["phases"] = phases(report)
    if outcome.final is None or not outcome.final.is_dir():
        return {**result, "status": "failed", "reason": "no final tree"}
    ffiles, fbytes = tree_size(outcome.final)
    result["final"] = {"files": ffiles, "bytes": fbytes}
    listing = sorted(
        str(p.relative_to(outcome.final))
        for p in outcome.final.rglob("*")
        if p.is_file() and not p.is_symlink()
    )
    result["final_listing"] = listing[:300]
    result["by_hand"] = by_hand(case, outcome.final, identity=source_identity(case, src))
    if args.keep_final is not None:
        kept = args.keep_final / case.name
        shutil.rmtree(kept, ignore_errors=True)
        shutil.copytree(outcome.final, kept, symlinks=True)
    result["status"] = "ok"
    return result


def _load(r: dict[str, Any]) -> str:
    before = (r.get("load_before") or [None])[0]
    after = (r.get("load_after") or [None])[0]
    return f"{before} / {after}"


def fmt_time(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} s"


def render(results: list[dict[str, Any]], cases: dict[str, Case]) -> str:
    head = (
        "| case | kind | source files | final files | final bytes | expert min (files / B) "
        "| runs | wall | to 2× files | to 2× bytes | by hand 3/3 | load 1-min before/after "
        "| runs acc/rej by phase |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |\n"
    )
    lines = []
    for r in results:
        case = cases.get(r["case"])
        ef = case.expert_files if case else None
        eb = case.expert_bytes if case else None
        if r.get("status") != "ok":
            lines.append(
                f"| {r['case']} | {r.get('kind')} | {r.get('source', {}).get('files', '—')} "
                f"| {r.get('status')}: {r.get('reason', '')} | | | | | | | | "
                f"| {_load(r)} | |"
            )
            continue
        steps = r.get("timeline", [])
        src = r["source"]
        tf = time_to(steps, "files", None if ef is None else 2 * ef, src["files"])
        tb = time_to(steps, "bytes", None if eb is None else 2 * eb, src["bytes"])
        if not steps and "timeline_note" in r:
            tf_s = tb_s = "no timeline (no report)"
        elif not steps:
            tf_s = tb_s = "— (nothing accepted)"
        else:
            tf_s, tb_s = fmt_time(tf), fmt_time(tb)
        hand = r["by_hand"]
        hand_s = f"{hand['passes']}/{hand['runs']}" + (
            "" if hand["passes"] == hand["runs"] else f" ({', '.join(hand['outcomes'])})"
        )
        acc_rej = ", ".join(
            f"{name} {p['accepted']}/{p['rejected']}"
            for name, p in r.get("phases", {}).items()
            if p.get("accepted") or p.get("rejected")
        )
        cap_flag = " (cap)" if r.get("hit_cap") else ""
        lines.append(
            f"| {r['case']} | {r['kind']} | {src['files']} | {r['final']['files']} "
            f"| {r['final']['bytes']} | {ef} / {eb} | {r.get('runs')} "
            f"| {r['wall_seconds']:.0f} s{cap_flag} | {tf_s} | {tb_s} | {hand_s} | {_load(r)} "
            f"| {acc_rej} |"
        )
    return head + "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cap", type=float, default=300.0, help="seconds per case (--max-time)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cases", default=None, help="comma-separated case names")
    parser.add_argument("--repomin-src", type=Path, default=None, help="checkout whose src runs")
    parser.add_argument("--out", type=Path, default=None, help="results directory")
    parser.add_argument("--label", default=None)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "repomin-bench")
    parser.add_argument("--work", type=Path, default=None, help="work trees (default: a temp dir)")
    parser.add_argument(
        "--grace",
        type=float,
        default=120.0,
        help="seconds past the cap for the baseline's overrun and the final validation",
    )
    parser.add_argument("--keep-final", type=Path, default=None, help="copy final trees here")
    parser.add_argument("--table-only", action="store_true", help="re-render OUT/table.md")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    cases = suite(args.cache)
    by_name = {c.name: c for c in cases}
    if args.list:
        for c in cases:
            print(f"{c.name} [{c.kind}]: expert {c.expert_files} files / {c.expert_bytes} B")
        return 0
    if args.cases:
        names = args.cases.split(",")
        unknown = [n for n in names if n not in by_name]
        if unknown:
            parser.error(f"unknown case {unknown[0]!r}; available: {', '.join(by_name)}")
        cases = [by_name[n] for n in names]
    if args.out is None:
        parser.error("--out is required")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.table_only:
        results = [
            json.loads(p.read_text("utf-8"))
            for p in sorted(out.glob("*.json"))
            if not p.name.startswith("run")
        ]
        order = {c.name: i for i, c in enumerate(cases)}
        results.sort(key=lambda r: order.get(r["case"], len(order)))
        table = render(results, by_name)
        (out / "table.md").write_text(table, "utf-8")
        print(table)
        return 0
    if args.repomin_src is not None:
        args.repomin_src = args.repomin_src.resolve()
    src_root = args.repomin_src or REPO
    manifest = {
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "label": args.label or git_commit(src_root),
        "repomin_commit": git_commit(src_root),
        "suite_commit": git_commit(REPO),
        "command": " ".join([sys.executable, *sys.argv]),
        "cap_seconds": args.cap,
        "jobs": args.jobs,
        "cpus": os.cpu_count(),
        "load_at_start": load(),
        "cases": [c.name for c in cases],
    }
    (out / "run.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    work = args.work or Path(tempfile.mkdtemp(prefix="real-suite-"))
    results = []
    try:
        for case in cases:
            print(f"== {case.name} (load {load()})", flush=True)
            result = run_case(case, args, work)
            (out / f"{case.name}.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
            results.append(result)
            (out / "table.md").write_text(render(results, by_name), "utf-8")
            print(
                f"   {result.get('status')}: {result.get('final')} in "
                f"{result.get('wall_seconds')} s, {result.get('runs')} runs, by hand "
                f"{result.get('by_hand', {}).get('passes')}/{HAND_RUNS}",
                flush=True,
            )
            if args.work is None:
                shutil.rmtree(work / case.name, ignore_errors=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    manifest["finished"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    manifest["load_at_end"] = load()
    (out / "run.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    print(render(results, by_name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
