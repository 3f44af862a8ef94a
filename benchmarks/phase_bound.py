"""Deletion-search cost against the information bound, per phase, on the generated cases.

Runs ``repomin reduce`` in this process on each case (a fresh copy, no time cap) with every
learning deletion search (``passes.learning.learn_delete``, as the ``files``, ``ordered``,
``blocks``, ``lines``, ``python``, ``coverage`` and the JavaScript searches of ``brackets``
call it) wrapped to record its problem: ``N`` units proposed to
it, ``k`` survivors, and the candidates it proposed. Each search's bound is
``3 * k * log2(N / k)`` (``k >= 1``; a search whose survivors are all its units has nothing to
find and is counted apart). Candidates proposed bound the oracle runs from above (cache hits
and no-ops are proposals that cost no run). Prints one JSON line per case and phase::

    PYTHONPATH=src python benchmarks/phase_bound.py --cases nested-500-det,single-file-det

``oracle_runs`` is the phase's count from the report (every phase, learning or not).
``over`` lists the searches whose proposals exceed their own bound (phase, N, k, proposals).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import Case
from suite import all_cases

import repomin.passes.blocks as blocks_module
import repomin.passes.coverage as coverage_module
import repomin.passes.files as files_module
import repomin.passes.jsunits as jsunits_module
import repomin.passes.lines as lines_module
import repomin.passes.python_ast as python_module
from repomin.cli.main import main as repomin_main
from repomin.search.deletion.learning import SearchStats, learn_delete

Record = tuple[str, int, int, int]  # phase, N, k, proposals


def bound(n: int, k: int) -> float:
    k = max(1, k)
    return 3.0 * k * math.log2(n / k) if n > k else 0.0


def instrument(records: list[Record]) -> None:
    def recorded(problem: Any, phase: str, units: Sequence[Any], *args: Any, **kw: Any) -> Any:
        stats: SearchStats[Any] = SearchStats()
        kw["stats"] = stats
        kept = learn_delete(problem, phase, units, *args, **kw)
        records.append((phase, len(units), len(kept), stats.proposals))
        return kept

    wrapped: Callable[..., Any] = recorded
    for module in (
        files_module,
        lines_module,
        blocks_module,
        python_module,
        coverage_module,
        jsunits_module,
    ):
        module.learn_delete = wrapped  # type: ignore[attr-defined]


def measure(case: Case, jobs: int) -> list[dict[str, Any]]:
    records: list[Record] = []
    instrument(records)
    with tempfile.TemporaryDirectory(prefix="repomin-bound-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        case.build(src)
        c = case.contract
        argv = ["reduce", str(src), "-o", str(Path(tmp) / "out"), "--command", c.command]
        argv += ["--timeout", str(c.timeout), "--jobs", str(jobs), "-q"]
        if c.match is not None:
            argv += ["--match", c.match]
        if c.exit_code is not None:
            argv += ["--exit-code", str(c.exit_code)]
        argv += list(case.repomin_args)
        try:
            repomin_main(argv)
        except SystemExit as done:
            if done.code not in (0, None):
                raise RuntimeError(f"{case.name}: repomin exited {done.code}") from done
        report = json.loads((Path(tmp) / "out.repomin" / "report.json").read_text("utf-8"))
    runs = {p["name"]: p["oracle_samples"] for p in report["phase_statistics"]["phases"]}
    rows = [
        {"case": case.name, "phase": name, "oracle_runs": n, "learning_searches": 0}
        for name, n in runs.items()
        if n and name not in {r[0] for r in records}
    ]
    for phase in sorted({r[0] for r in records}):
        mine = [r for r in records if r[0] == phase]
        live = [r for r in mine if r[2] < r[1]]
        rows.append(
            {
                "case": case.name,
                "phase": phase,
                "oracle_runs": runs.get(phase),
                "learning_searches": len(mine),
                "searches_with_deletions": len(live),
                "proposals": sum(r[3] for r in mine),
                "proposals_in_searches_that_deleted": sum(r[3] for r in live),
                "bound": round(sum(bound(r[1], r[2]) for r in live), 1),
                "proposals_in_searches_that_deleted_nothing": sum(
                    r[3] for r in mine if r[2] >= r[1]
                ),
                "over": [list(r) for r in live if r[3] > bound(r[1], r[2])],
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="nested-500-det,single-file-det,nested-100-det")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    cases = {c.name: c for c in all_cases(Path(tempfile.gettempdir()) / "repomin-bench-cache")}
    for name in args.cases.split(","):
        for row in measure(cases[name], args.jobs):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
