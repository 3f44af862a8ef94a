"""``scipy.stats``, imported on first use, and warmed in the background by the CLI.

Importing ``scipy.stats`` costs about a second on a loaded 2-core machine (measured: 2.1 s of
``repomin reduce``'s start-up at load 4, under ``-X importtime``) and nothing needs it before
the first baseline sample has finished. So the statistics modules ask for it here when they
compute, and ``repomin reduce`` starts :func:`warm` before it selects the tree: the import runs
in a daemon thread while the main thread selects, connects and waits for the first samples
(subprocesses). Python's per-module import lock makes a caller that arrives first wait for the
thread's import to finish; the numbers computed are the same either way.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any


def scipy_stats() -> Any:
    """The ``scipy.stats`` module (imported now if it is not yet)."""
    import scipy.stats

    return scipy.stats


def warm(*also: str) -> None:
    """Import ``scipy.stats``, then the modules ``also``, in a daemon thread (returns at once).
    ``repomin reduce`` adds ``jsonschema``: the report's structural check needs it only at the
    end, where importing it cost 0.3-0.75 s of the 16-worker cluster benchmark's wall."""

    def run() -> None:
        scipy_stats()
        for name in also:
            importlib.import_module(name)

    threading.Thread(target=run, name="repomin-import-scipy", daemon=True).start()


__all__ = ["scipy_stats", "warm"]
