"""The verdicts compute with ``scipy.special`` (cheap to import, repomin.stats.lazy) and must give
the very floats ``scipy.stats`` gives (``beta.ppf`` and ``binom.sf`` call the same incomplete beta
and its inverse): compared for exact equality, not to a tolerance."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import beta, binom

from repomin.stats.bounds import binom_pvalue, lower_bound, upper_bound
from repomin.stats.sequential import _pvalue_table

CONFIDENCES = (0.5, 0.9, 0.95, 0.99, 0.999, 0.9696)
RATES = (0.0, 0.001, 0.05, 0.1118, 0.3, 0.5, 0.9, 0.999, 1.0)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 33, 60, 100, 257])
def test_bounds_and_pvalues_are_the_floats_scipy_stats_gives(n: int) -> None:
    for k in range(n + 1):
        for c in CONFIDENCES:
            low = 0.0 if k == 0 else float(beta.ppf(1 - c, k, n - k + 1))
            high = 1.0 if k == n else float(beta.ppf(c, k + 1, n - k))
            assert lower_bound(k, n, c) == low, (k, n, c)
            assert upper_bound(k, n, c) == high, (k, n, c)
        for p in RATES:
            assert binom_pvalue(k, n, p) == float(binom.sf(k - 1, n, p)), (k, n, p)


@pytest.mark.parametrize("theta", [0.05, 0.1118, 0.25, 0.5, 0.9])
def test_the_sequential_table_is_binom_sf_to_the_bit(theta: float) -> None:
    cap, width = 120, 40
    table = _pvalue_table(theta, cap, width)
    runs = np.arange(cap + 1)[:, None]
    passes = runs - np.arange(width)[None, :]
    expected = np.where(passes >= 0, binom.sf(passes - 1, runs, theta), np.inf)
    assert np.array_equal(table, expected)


def test_a_verdict_does_not_import_scipy_stats() -> None:
    code = (
        "import sys\n"
        "from repomin.stats.bounds import lower_bound, binom_pvalue\n"
        "from repomin.stats.sequential import _pvalue_table\n"
        "lower_bound(3, 5, 0.95); binom_pvalue(3, 5, 0.2); _pvalue_table(0.2, 10, 4)\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
