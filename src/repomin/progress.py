"""Progress display. Only this module (and the CLI) writes to the terminal.

``LiveProgress`` shows phase, size, runs, runs per second, accepted mutations, jobs in flight,
the current rate and bound and elapsed time with ``rich`` on a terminal; ``LogProgress`` prints
one line per accepted mutation in verbose mode; ``NullProgress`` is silent (pipes, ``--quiet``).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Protocol


class Progress(Protocol):
    def start(self) -> None: ...

    def update(self, **fields: Any) -> None: ...

    def message(self, text: str) -> None: ...

    def stop(self) -> None: ...


class NullProgress:
    def start(self) -> None:
        pass

    def update(self, **fields: Any) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass


class LogProgress(NullProgress):
    """Plain lines on stderr (pipes with --verbose)."""

    def message(self, text: str) -> None:
        print(f"repomin: {text}", file=sys.stderr, flush=True)


class LiveProgress:
    """A rich live status line, refreshed a few times a second."""

    def __init__(self, verbose: bool = False) -> None:
        from rich.console import Console
        from rich.live import Live

        self._console = Console(stderr=True)
        self._live = Live(console=self._console, refresh_per_second=4, transient=True)
        self._fields: dict[str, Any] = {"phase": "starting"}
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._verbose = verbose

    def start(self) -> None:
        self._live.start()
        self._live.update(self._render())

    def update(self, **fields: Any) -> None:
        with self._lock:
            self._fields.update(fields)
        self._live.update(self._render())

    def message(self, text: str) -> None:
        if self._verbose:
            self._console.print(f"repomin: {text}", highlight=False)

    def stop(self) -> None:
        self._live.stop()

    def _render(self) -> str:
        f = self._fields
        elapsed = time.monotonic() - self._started
        runs = f.get("runs", 0)
        rate = runs / elapsed if elapsed > 0 else 0.0
        parts = [
            f"[bold]{f.get('phase')}[/bold]",
            f"{f.get('files', '?')} files / {f.get('bytes', '?')} B",
            f"runs {runs} ({rate:.1f}/s)",
            f"accepted {f.get('accepted', 0)}",
            f"jobs {f.get('inflight', 0)}/{f.get('jobs', 1)}",
        ]
        if f.get("rate") is not None:
            parts.append(f"rate {f['rate']:.2f} (≥{f.get('bound', 0.0):.2f})")
        parts.append(f"{elapsed:.0f}s")
        return "  ".join(parts)


def make_progress(*, quiet: bool, verbose: bool) -> Progress:
    if quiet:
        return NullProgress()
    if sys.stderr.isatty():
        return LiveProgress(verbose)
    return LogProgress() if verbose else NullProgress()
