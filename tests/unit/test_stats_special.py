"""The verdicts compute with ``scipy.special`` (cheap to import, repomin.sampling.stats.lazy) and
must give
the very floats ``scipy.stats`` gives (``beta.ppf`` and ``binom.sf`` call the same incomplete beta
and its inverse): compared for exact equality, not to a tolerance."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import beta, binom

from repomin.sampling.stats.bounds import binom_pvalue, lower_bound, upper_bound
from repomin.sampling.stats.sequential import _pvalue_table

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


@pytest.mark.parametrize(
    "code",
    [
        "from repomin.sampling.stats.bounds import lower_bound, binom_pvalue\n"
        "from repomin.sampling.stats.sequential import _pvalue_table\n"
        "lower_bound(3, 5, 0.95); binom_pvalue(3, 5, 0.2); _pvalue_table(0.2, 10, 4)\n",
        "from repomin.sampling.stats.slippage import compare\n"
        "from repomin.sampling.stats.holdout import holdout_test, suggest_holdout_runs\n"
        "compare(3, 10, 9, 10, alpha=0.05); holdout_test(18, 20, 0.5, 0.05)\n"
        "suggest_holdout_runs(0.8, 0.3, 0.05)\n",
    ],
    ids=["verdicts", "slippage-and-holdout"],
)
def test_nothing_imports_scipy_stats(code: str) -> None:
    code = "import sys\n" + code + "print('scipy.stats' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_holdout_critical_passes_and_plan_are_those_of_scipy_stats() -> None:
    from repomin.sampling.stats.holdout import _critical_passes, suggest_holdout_runs

    runs = np.arange(1, 2001)
    for p0 in (0.01, 0.05, 0.1118, 0.3, 0.5, 0.9, 0.99):
        for alpha in (0.001, 0.0304, 0.05, 0.2):
            # The definition, with scipy.stats: the smallest K with binom.sf(K - 1) <= alpha.
            sf = binom.sf(np.arange(-1, 2001)[None, :], runs[:, None], p0)  # column K = k + 1
            ok = sf <= alpha  # true from K = n + 1 on (sf(n) = 0): argmax is the first K
            expected = ok.argmax(axis=1)
            assert np.array_equal(_critical_passes(runs, p0, alpha), expected), (p0, alpha)
    for rate, p0 in ((0.5, 0.1), (0.8, 0.3), (0.95, 0.05), (1.0, 0.3)):
        n = suggest_holdout_runs(rate, p0, 0.05)
        k = _critical_passes(np.array([n]), p0, 0.05)[0]
        assert binom.sf(k - 1, n, rate) >= 0.8  # reaches the power ...
        for m in range(1, n):  # ... and no smaller holdout does (by scipy.stats' numbers)
            km = _critical_passes(np.array([m]), p0, 0.05)[0]
            assert binom.sf(km - 1, m, rate) < 0.8, (rate, p0, m)


def test_the_fisher_tail_is_the_exact_hypergeometric_sum_and_scipys_float() -> None:
    from fractions import Fraction
    from math import comb

    from scipy.stats import fisher_exact

    from repomin.sampling.stats.slippage import _one_sided

    for n in range(1, 9):
        for m in range(1, 9):
            for a in range(n + 1):
                for b in range(m + 1):
                    s = a + b
                    exact_hi = sum(
                        Fraction(comb(s, x) * comb(n + m - s, n - x), comb(n + m, n))
                        for x in range(a, min(n, s) + 1)
                    )
                    assert _one_sided(a, n, b, m, True) == float(exact_hi)
                    for higher in (True, False):
                        ref = fisher_exact(
                            [[a, n - a], [b, m - b]], alternative="greater" if higher else "less"
                        ).pvalue
                        got = _one_sided(a, n, b, m, higher)
                        assert got == pytest.approx(min(1.0, ref), rel=1e-13, abs=0)
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, m = (int(x) for x in rng.integers(1, 3000, 2))
        a, b = int(rng.integers(0, n + 1)), int(rng.integers(0, m + 1))
        for higher in (True, False):
            ref = fisher_exact([[a, n - a], [b, m - b]], "greater" if higher else "less").pvalue
            if ref > 1e-300:
                assert _one_sided(a, n, b, m, higher) == pytest.approx(min(1.0, ref), rel=1e-13)
