"""Sampling: deciding one tree from runs of the command.

The oracle (the one door between trees and the runner), the sampling policy and its verdicts,
the exact statistics under them (``stats``), the sample slots (``parallel``, ``lanes``), budgets,
adaptive timeouts, the incumbent's rate, slippage, holdout certification and the counters the
report is built from.
"""
