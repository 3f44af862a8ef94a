"""scipy, imported on first use, and warmed in the background by ``repomin reduce``.

Importing ``scipy.stats`` costs 1.1 s wall and 1.2 s of CPU on this 2-core machine
(``scipy.special``: 0.35 s wall, 0.47 s CPU; measured with ``python -c``), mostly holding the
GIL. The verdicts of every sample (Clopper–Pearson bounds, binomial p-values, the sequential
tables) need only ``scipy.special``'s incomplete beta and its inverse, which ``scipy.stats``'
``beta.ppf`` and ``binom.sf`` call themselves, so they give the same floats (tested on a grid).
Only the report's slippage comparison (Fisher's exact test) and the holdout plan need
``scipy.stats``.

So ``repomin reduce`` warms ``scipy.special`` at once (the first baseline verdict needs it) and
``scipy.stats`` and ``jsonschema`` (the report's structural check) only after the first
sample has started: before that the main thread selects the tree and the runner starts (a
cluster connection), both holding the GIL too, and an import beside them delayed the first
sample (measured in ``benchmarks/cluster.py``'s 16-worker run: see ARCHITECTURE.md). Python's
per-module import lock makes a caller that arrives first wait for the thread's import to
finish; the numbers computed are the same either way.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

#: How long a deferred warm-up waits for its event before importing anyway.
WAIT_SECONDS = 30.0


def scipy_stats() -> Any:
    """The ``scipy.stats`` module (imported now if it is not yet)."""
    import scipy.stats

    return scipy.stats


def scipy_special() -> Any:
    """The ``scipy.special`` module (imported now if it is not yet)."""
    import scipy.special

    return scipy.special


def warm(*modules: str, after: threading.Event | None = None) -> None:
    """Import ``modules`` in order in a daemon thread (returns at once); with ``after``, the
    thread first waits for that event (at most ``WAIT_SECONDS``)."""

    def run() -> None:
        if after is not None:
            after.wait(WAIT_SECONDS)
        for name in modules:
            importlib.import_module(name)

    threading.Thread(target=run, name="repomin-import", daemon=True).start()


__all__ = ["scipy_special", "scipy_stats", "warm"]
