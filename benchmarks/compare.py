"""Ratio tables over benchmark results: ReproMin vs each peer, and version vs version.

Reads one or more result directories written by :mod:`run` (``CASE__TOOL.json`` files; each
directory is one run, labelled by its ``label``) and prints:

1. the raw results of every run (wall time, oracle runs, final files/bytes, reproduction);
2. per run, ReproMin / peer ratios per case for wall time, oracle runs and final bytes, with
   the median over cases (below 1 means ReproMin used less); ``<=`` marks a wall-time ratio
   against a peer that was stopped at the cap while ReproMin finished (an upper bound);
3. for two or more runs, ReproMin(run N+1) / ReproMin(run N) per case, with medians.

A ratio is only computed from two results measured in the same run (side by side); a result
whose final tree did not reproduce is shown but left out of the bytes medians.

    python benchmarks/compare.py bench-results/v1 bench-results/v2 [--markdown]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPOMIN = "repomin"
METRICS = (("wall", "wall_time_seconds"), ("runs", "oracle_runs"), ("bytes", "final_bytes"))


@dataclass(frozen=True, slots=True)
class Result:
    run: str
    case: str
    tool: str
    status: str
    wall_time_seconds: float | None
    oracle_runs: int | None
    final_files: int | None
    final_bytes: int | None
    source_files: int | None
    source_bytes: int | None
    reproduces: bool | None
    verify: str
    hit_cap: bool

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def metric(self, key: str) -> float | None:
        value = getattr(self, key)
        return float(value) if isinstance(value, int | float) else None


@dataclass(frozen=True, slots=True)
class Run:
    label: str
    path: Path
    results: tuple[Result, ...]
    machine: dict[str, Any]

    def get(self, case: str, tool: str) -> Result | None:
        for r in self.results:
            if r.case == case and r.tool == tool:
                return r
        return None

    @property
    def cases(self) -> list[str]:
        return list(dict.fromkeys(r.case for r in self.results))

    @property
    def peers(self) -> list[str]:
        return [t for t in dict.fromkeys(r.tool for r in self.results) if t != REPOMIN]


def _result(run: str, data: dict[str, Any]) -> Result:
    final = data.get("final") or {}
    source = data.get("source") or {}
    ver = data.get("verification") or {}
    return Result(
        run=run,
        case=str(data.get("case")),
        tool=str(data.get("tool")),
        status=str(data.get("status")),
        wall_time_seconds=data.get("wall_time_seconds"),
        oracle_runs=data.get("oracle_runs"),
        final_files=final.get("files"),
        final_bytes=final.get("bytes"),
        source_files=source.get("files"),
        source_bytes=source.get("bytes"),
        reproduces=ver.get("reproduces"),
        verify=f"{ver['passes']}/{ver['runs']}" if ver else "-",
        hit_cap=bool(data.get("hit_cap")),
    )


def load_runs(paths: Sequence[Path]) -> list[Run]:
    """Each directory is one run; labels are made unique by suffixing ``#N``."""
    runs: list[Run] = []
    seen: set[str] = set()
    for path in paths:
        manifest_path = path / "run.json"
        manifest = json.loads(manifest_path.read_text("utf-8")) if manifest_path.is_file() else {}
        label = str(manifest.get("label") or path.name)
        base, n = label, 1
        while label in seen:
            n += 1
            label = f"{base}#{n}"
        seen.add(label)
        results = []
        for file in sorted(path.glob("*__*.json")):
            data = json.loads(file.read_text("utf-8"))
            results.append(_result(label, data))
        runs.append(Run(label, path, tuple(results), manifest.get("machine") or {}))
    return runs


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fmt_ratio(value: float | None) -> str:
    """Three significant digits (tiny byte ratios stay readable)."""
    return "n/a" if value is None else f"{value:.3g}"


def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def _pair_ratios(a: Result | None, b: Result | None) -> list[float | None]:
    """wall, runs, bytes ratios of ``a`` over ``b`` (bytes only when both reproduce)."""
    if a is None or b is None:
        return [None, None, None]
    out: list[float | None] = [
        ratio(a.metric("wall_time_seconds"), b.metric("wall_time_seconds")),
        ratio(a.metric("oracle_runs"), b.metric("oracle_runs")),
    ]
    out.append(ratio(a.metric("final_bytes"), b.metric("final_bytes")) if a.ok and b.ok else None)
    return out


def raw_table(run: Run) -> tuple[list[str], list[list[str]]]:
    head = ["case", "tool", "wall s", "oracle runs", "files", "bytes", "reproduces", "note"]
    rows = []
    for r in run.results:
        note = []
        if r.hit_cap:
            note.append("hit cap")
        if r.status not in ("ok",):
            note.append(r.status)
        rows.append(
            [
                r.case,
                r.tool,
                fmt(r.wall_time_seconds),
                fmt(r.oracle_runs),
                f"{fmt(r.final_files)}/{fmt(r.source_files)}",
                f"{fmt(r.final_bytes)}/{fmt(r.source_bytes)}",
                r.verify,
                ", ".join(note),
            ]
        )
    return head, rows


def peer_table(run: Run) -> tuple[list[str], list[list[str]]]:
    """ReproMin / peer per case; the last rows are the medians per peer."""
    head = ["case", "peer", "wall ratio", "runs ratio", "bytes ratio"]
    rows: list[list[str]] = []
    per_peer: dict[str, list[list[float | None]]] = {}
    for case in run.cases:
        mine = run.get(case, REPOMIN)
        if mine is None:
            continue
        for peer in run.peers:
            theirs = run.get(case, peer)
            if theirs is None or theirs.status in ("skipped", "unavailable"):
                continue
            ratios = _pair_ratios(mine, theirs)
            per_peer.setdefault(peer, []).append(ratios)
            cells = [fmt_ratio(x) for x in ratios]
            if theirs.hit_cap and not mine.hit_cap and ratios[0] is not None:
                cells[0] = "<=" + cells[0]  # the peer had not finished: an upper bound
            rows.append([case, peer, *cells])
    for peer, all_ratios in per_peer.items():
        medians = [median(col) for col in zip(*all_ratios, strict=True)]
        rows.append([f"median ({len(all_ratios)} cases)", peer, *(fmt_ratio(m) for m in medians)])
    return head, rows


def version_table(runs: Sequence[Run]) -> tuple[list[str], list[list[str]]]:
    """ReproMin in run N+1 over ReproMin in run N, per case, then medians."""
    head = ["from", "to", "case", "wall ratio", "runs ratio", "bytes ratio"]
    rows: list[list[str]] = []
    for before, after in itertools.pairwise(runs):
        collected = []
        for case in after.cases:
            ratios = _pair_ratios(after.get(case, REPOMIN), before.get(case, REPOMIN))
            if all(x is None for x in ratios):
                continue
            collected.append(ratios)
            rows.append([before.label, after.label, case, *(fmt_ratio(x) for x in ratios)])
        if collected:
            medians = [median(col) for col in zip(*collected, strict=True)]
            rows.append([before.label, after.label, "median", *(fmt_ratio(m) for m in medians)])
    return head, rows


def table(head: list[str], rows: list[list[str]], *, markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)
    ]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def machine_line(run: Run) -> str:
    m = run.machine
    return (
        f"{m.get('cpus', '?')} cores, Python {m.get('python', '?')}, {m.get('platform', '?')}"
        if m
        else "machine not recorded"
    )


def render(runs: Sequence[Run], *, markdown: bool) -> str:
    h = "### " if markdown else ""
    parts: list[str] = []
    for run in runs:
        parts.append(f"{h}Run {run.label} ({machine_line(run)})")
        parts.append(table(*raw_table(run), markdown=markdown))
        head, rows = peer_table(run)
        if rows:
            parts.append(f"{h}ReproMin / peer, run {run.label} (below 1: ReproMin used less)")
            parts.append(table(head, rows, markdown=markdown))
    if len(runs) > 1:
        parts.append(f"{h}ReproMin version vs version (later / earlier)")
        parts.append(table(*version_table(runs), markdown=markdown))
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="result directories (one per run)")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables for a README")
    args = parser.parse_args(argv)
    missing = [d for d in args.dirs if not d.is_dir()]
    if missing:
        parser.error(f"{missing[0]} is not a directory of results")
    sys.stdout.write(render(load_runs(args.dirs), markdown=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
