"""scipy, imported on first use, and imports warmed in the background by ``repomin reduce``.

Importing ``scipy.stats`` costs 1.1 s wall and 1.2 s of CPU on this 2-core machine
(``scipy.special``: 0.35 s wall, 0.47 s CPU; measured with ``python -c``), mostly holding the
GIL. So nothing ReproMin runs imports ``scipy.stats``: the verdicts (Clopper–Pearson bounds,
binomial p-values, the sequential tables) and the holdout plan use ``scipy.special``'s
incomplete beta and its inverse, which ``scipy.stats``' ``beta.ppf`` and ``binom.sf`` call
themselves (the same floats, tested on a grid), and the slippage comparison's Fisher test is
an exact integer sum (``stats.slippage``). Before, ``scipy.stats`` was warmed in a thread
after the first sample had started, and that thread's GIL time slowed the dispatch of the
search's first rounds (measured in ``benchmarks/cluster.py``'s 16-worker run).

``repomin reduce`` warms ``scipy.special`` (the first baseline verdict needs it) and
``jsonschema`` (the report's structural check, 0.1 s of CPU) once the first sample has
started: before that the main thread selects the tree and the runner starts (a cluster
connection), both holding the GIL too. Python's per-module import lock makes a caller that
arrives first wait for the thread's import to finish; the numbers computed are the same
either way.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

#: How long a deferred warm-up waits for its event before importing anyway.
WAIT_SECONDS = 30.0


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


__all__ = ["scipy_special", "warm"]
