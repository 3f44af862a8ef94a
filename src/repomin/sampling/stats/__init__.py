"""Exact statistics for deciding on flaky candidates: bounds, sequential designs, holdout.

Pure functions and immutable values over scipy; no I/O. docs/statistics.md is the specification and
its reference values are the unit tests.
"""

from __future__ import annotations

from repomin.sampling.stats.baseline import (
    BaselineOdds,
    baseline_looks,
    baseline_odds,
    first_misses,
    looks_needed,
)
from repomin.sampling.stats.bounds import (
    amplified_rate,
    binom_pvalue,
    fewest_passes,
    final_test_passed,
    lower_bound,
    upper_bound,
    zero_failure_runs,
)
from repomin.sampling.stats.gate import CurtailedTest, critical_count, gate_power, sized_runs
from repomin.sampling.stats.holdout import (
    MAX_SUGGESTED_HOLDOUT_RUNS,
    HoldoutResult,
    critical_passes,
    holdout_test,
    min_certifiable_runs,
    suggest_holdout_runs,
)
from repomin.sampling.stats.sequential import (
    DESIGN_VERSION,
    Decision,
    SequentialDesign,
    design,
    threshold_acceptance_probability,
    zero_failure_design,
)
from repomin.sampling.stats.spending import LOG2_SPENDING_CONSTANT, SPENDING_RULES, spend_alpha

__all__ = [
    "DESIGN_VERSION",
    "LOG2_SPENDING_CONSTANT",
    "MAX_SUGGESTED_HOLDOUT_RUNS",
    "SPENDING_RULES",
    "BaselineOdds",
    "CurtailedTest",
    "Decision",
    "HoldoutResult",
    "SequentialDesign",
    "amplified_rate",
    "baseline_looks",
    "baseline_odds",
    "binom_pvalue",
    "critical_count",
    "critical_passes",
    "design",
    "fewest_passes",
    "final_test_passed",
    "first_misses",
    "gate_power",
    "holdout_test",
    "looks_needed",
    "lower_bound",
    "min_certifiable_runs",
    "sized_runs",
    "spend_alpha",
    "suggest_holdout_runs",
    "threshold_acceptance_probability",
    "upper_bound",
    "zero_failure_design",
    "zero_failure_runs",
]
