"""The learning search's run count on planted k-of-N problems over the whole grid (k = 1..16,
N/k = 2..256, seeded), against the information bound 3 * k * log2(N / k).

What holds, measured with this code (docs/decisions/2026-12-01-learning-deletion-search.md,
"Run counts"):

* N/k >= 3: within the bound in every cell and seed tried (the fast test: N <= 256; the slow
  one: the cells up to N = 4096);
* N/k = 2: the bound is 3k = N + k, exactly what testing unit by unit costs when the last unit
  tested is unneeded (every needed unit is then re-tested once against the final tree, which
  1-minimality for an arbitrary predicate requires). A search that does not know k must try a
  group after a run of acceptances (or k = 1 of 10 would cost 11 > 9.97 runs), and at density
  1/2 such a group loses a run three times in four: so no k-oblivious search stays within 3k
  for every planting. Measured: at most 3k + 2 (over seeds 0-59), 3k - 0.4 on average;
* never more than N + k + 2 runs on a dense problem (k >= N/2; N + k: every unit once and
  every survivor once more);
* k = 1: within 3 * log2(N) except N = 10 and N = 12, one run over (10 vs 9.97, 11 vs 10.75).
"""

from __future__ import annotations

import math

import pytest

from tests.unit.test_learning import planted_runs

RATIOS = (2, 3, 4, 6, 8, 16, 32, 64, 128, 256)


def seeds(n: int) -> range:
    return range(4) if n <= 64 else range(2) if n <= 1024 else range(1)


def check_cell(k: int, ratio: int) -> None:
    n = k * ratio
    bound = 3 * k * math.log2(ratio)
    runs = [planted_runs(n, k, seed) for seed in seeds(n)]
    if ratio == 2:
        assert max(runs) <= bound + 2 == n + k + 2, (k, ratio, runs)
    else:
        assert max(runs) <= bound, (k, ratio, runs, bound)


@pytest.mark.parametrize("k", range(1, 17))
def test_grid_within_the_bound_up_to_256_units(k: int) -> None:
    for ratio in RATIOS:
        if k * ratio <= 256:
            check_cell(k, ratio)


@pytest.mark.slow
@pytest.mark.parametrize("k", range(1, 17))
def test_grid_within_the_bound_up_to_4096_units(k: int) -> None:
    for ratio in RATIOS:
        if k * ratio > 256:
            check_cell(k, ratio)


def test_dense_half_costs_at_most_two_runs_over_the_bound_and_3k_on_average() -> None:
    for k in (5, 8, 12, 16):
        runs = [planted_runs(2 * k, k, seed) for seed in range(20)]
        assert max(runs) <= 3 * k + 2
        assert sum(runs) / len(runs) <= 3 * k


def test_single_needed_unit_small_n() -> None:
    """k = 1, N = 2..32: within 3 log2 N but at N = 10 and 12 (one run over; measured maxima
    over seeds 0-39: 10 and 11)."""
    for n in range(2, 33):
        worst = max(planted_runs(n, 1, seed) for seed in range(12))
        limit = 3 * math.log2(n) + (1 if n in (10, 12) else 0)
        assert worst <= limit, (n, worst)


def test_dense_problems_never_cost_more_than_n_plus_k_plus_two() -> None:
    for n in range(1, 25):
        for k in range(max(1, n // 2), n + 1):
            for seed in range(3):
                assert planted_runs(n, k, seed) <= n + k + 2
