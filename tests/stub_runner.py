"""The runner protocol's bookkeeping for in-process test runners: subclasses write ``run``."""

from __future__ import annotations

from typing import Any


class StubRunner:
    """A host-backend runner with nothing to describe, kill or close."""

    backend = "host"

    def describe(self) -> dict[str, Any]:
        return {"backend": "host"}

    def kill_all(self) -> None:
        pass

    def close(self) -> None:
        pass
