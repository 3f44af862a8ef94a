"""What the incumbent's rate estimate means: exact coverage and the search's realised power.

The figures of ``docs/statistics.md`` §3a ("Sizing from the incumbent"), computed with the
functions of ``tests/unit/test_rate_estimate_coverage.py``:

* the exact coverage P(estimate <= p) of ``RateEvidence.estimate()`` for i.i.d. Bernoulli(p)
  windows (a dynamic programme; ``--enumerate`` also sums over all 2^20 windows), its infimum
  over p, and the per-suffix confidence at which every p would be covered with probability 0.8;
* seeded reductions through the real oracle at each rate (``Oracle.run_baseline``, then
  candidates as good as the incumbent, adopted when accepted, re-checks included): the screen
  power against ``GATED_SCREEN_POWER``, how often the estimate the candidate was sized from was
  at or below p, the acceptance rate, and the runs: R (what a dead candidate costs) and the runs
  of a live candidate, the re-checks after its adoption included.

``--e2e N`` adds N whole reductions per rate through ``execute()`` (in-process, the harness of
``tests/montecarlo.py``: ``keep.txt`` reproducing at p and ``--junk`` irrelevant files, every
tree that keeps ``keep.txt`` at p): mean oracle runs and how often the payload is exactly
``keep.txt``.

The alternatives, in this process only: ``--confidence C`` replaces ``SIZING_CONFIDENCE`` (the
calibrated per-suffix confidence); ``--estimate window`` replaces the estimate by the one-sided
bound of the whole window (one suffix, chosen without looking).

    PYTHONPATH=src python benchmarks/rate_estimate.py --enumerate
    PYTHONPATH=src python benchmarks/rate_estimate.py --reductions 400 --candidates 60
    PYTHONPATH=src python benchmarks/rate_estimate.py --reductions 400 --confidence 0.92316349
    PYTHONPATH=src python benchmarks/rate_estimate.py --rates 0.3,0.5,0.6,0.7,0.9 --e2e 300
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.montecarlo import reduce_once
from tests.unit import test_rate_estimate_coverage as study

from repomin.sampling import rate_evidence, stats
from repomin.sampling.policy import GATED_SCREEN_POWER


def calibrated(target: float = 0.8) -> float:
    """The least per-suffix confidence whose infimum coverage is >= target (bisection)."""
    low, high = 0.5, 0.999
    for _ in range(40):
        middle = (low + high) / 2
        if study.infimum(middle)[0] >= target:
            high = middle
        else:
            low = middle
    return high


def enumerated(rates: list[float]) -> dict[float, float]:
    """P(estimate <= p) summed over all 2^20 windows (numpy), from the same bound table."""
    import numpy as np

    w = rate_evidence.RATE_WINDOW
    table = np.array(
        [
            [*row, *[math.inf] * (w - len(row) + 1)]
            for row in study.bounds(rate_evidence.SIZING_CONFIDENCE)
        ]
    )
    codes = np.arange(1 << w, dtype=np.int64)
    newest_first = ((codes[:, None] >> np.arange(w)) & 1).astype(np.int8)
    passes = np.cumsum(newest_first, axis=1, dtype=np.int8)
    estimate = np.where(newest_first == 1, table[np.arange(1, w + 1)[None, :], passes], 0.0)
    best = estimate.max(axis=1)
    total = passes[:, -1].astype(np.float64)
    return {p: float((p**total * (1 - p) ** (w - total))[best <= p].sum()) for p in rates}


def window_coverage(p: float) -> float:
    """P(L(K, n; c) <= p) for K ~ Binomial(n, p), n = RATE_WINDOW: the ``--estimate window``
    alternative's exact coverage (at least c: a Clopper-Pearson bound of fixed n)."""
    from scipy.stats import binom

    n, c = rate_evidence.RATE_WINDOW, rate_evidence.SIZING_CONFIDENCE
    return float(binom.cdf(max(k for k in range(n + 1) if stats.lower_bound(k, n, c) <= p), n, p))


def exact(rates: list[float], enumerate_all: bool, estimate: str) -> None:
    c = rate_evidence.SIZING_CONFIDENCE
    if estimate == "window":
        row = {"confidence": c, "window_coverage": {p: window_coverage(p) for p in rates}}
        print(json.dumps(row), flush=True)
        return
    low, at = study.infimum(c)
    row = {
        "confidence": c,
        "window": rate_evidence.RATE_WINDOW,
        "coverage": {p: study.coverage(p, c) for p in rates},
        "infimum": low,
        "infimum_as_p_rises_to": at,
        "calibrated_confidence": calibrated(),
    }
    if enumerate_all:
        row["enumerated"] = enumerated(rates)
    print(json.dumps(row), flush=True)


def path_row(p: float, seeds: range, candidates: int) -> dict[str, object]:
    """One rate's seeded reductions, first half and second half of the candidates apart."""
    paths = [x for seed in seeds if (x := study.search_path(p, seed, candidates)) is not None]
    row: dict[str, object] = {"p": p, "reductions": len(paths), "candidates": candidates}
    halves = {"first": slice(0, candidates // 2), "second": slice(candidates // 2, None)}
    for name, part in (("all", slice(None)), *halves.items()):
        power = [study.screen_power(x[part], p) for x in paths]
        states = [s for x in paths for s in x[part]]
        live = sum(s.runs for s in states)
        row[name] = {
            "screen_power": round(statistics.mean(power), 4),
            "se": round(statistics.stdev(power) / math.sqrt(len(power)), 4),
            "covered": round(sum(s.estimate <= p for s in states) / len(states), 4),
            "accepted": round(sum(s.accepted for s in states) / len(states), 4),
            "R": round(sum(s.screen for s in states) / len(states), 3),
            "runs_with_rechecks": round(live / len(states), 3),
        }
    return row


def e2e_row(p: float, seeds: range, junk: int) -> dict[str, object]:
    """Whole reductions through ``execute()``: runs and exact payloads (refusals left out)."""
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as d:
        trials = [reduce_once(Path(d) / f"t{s}", s, 0, rate=p, junk=junk, bad=False) for s in seeds]
    done = [t for t in trials if t.exit_code != 2]
    runs = [t.runs for t in done]
    return {
        "p": p,
        "e2e_reductions": len(done),
        "junk": junk,
        "mean_runs": round(statistics.mean(runs), 1),
        "se": round(statistics.stdev(runs) / math.sqrt(len(runs)), 1),
        "exact_payload": round(sum(t.payload == {"keep.txt"} for t in done) / len(done), 3),
    }


def whole_window(self: rate_evidence.RateEvidence) -> float:
    """The alternative ``--estimate window``: one bound over the whole window."""
    if not self.recent:
        return self.base
    return stats.lower_bound(sum(self.recent), len(self.recent), rate_evidence.SIZING_CONFIDENCE)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default=",".join(str(p) for p in study.RATES))
    ap.add_argument("--reductions", type=int, default=0, help="seeded reductions per rate")
    ap.add_argument("--candidates", type=int, default=study.CANDIDATES)
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--confidence", type=float, default=None, help="per-suffix confidence")
    ap.add_argument("--enumerate", action="store_true", help="also sum over all 2^20 windows")
    ap.add_argument("--estimate", choices=("suffixes", "window"), default="suffixes")
    ap.add_argument("--e2e", type=int, default=0, help="whole reductions per rate")
    ap.add_argument("--junk", type=int, default=120, help="irrelevant files of --e2e")
    args = ap.parse_args()
    if args.estimate == "window":
        rate_evidence.RateEvidence.estimate = whole_window  # type: ignore[method-assign]
    if args.confidence is not None:
        rate_evidence.SIZING_CONFIDENCE = args.confidence
        study.bounds.cache_clear()
    rates = [float(x) for x in args.rates.split(",")]
    exact(rates, args.enumerate, args.estimate)
    print(json.dumps({"target_screen_power": GATED_SCREEN_POWER}))
    seeds = range(args.seed, args.seed + args.reductions)
    for p in rates if args.reductions else []:
        started = time.monotonic()
        row = path_row(p, seeds, args.candidates)
        row["seconds"] = round(time.monotonic() - started, 1)
        print(json.dumps(row), flush=True)
    for p in rates if args.e2e else []:
        print(json.dumps(e2e_row(p, range(args.seed, args.seed + args.e2e), args.junk)), flush=True)


if __name__ == "__main__":
    main()
