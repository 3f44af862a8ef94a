"""Signature modes: the :class:`SignatureMode` protocol and the registry (one instance per
``failure_spec`` flag). :mod:`repomin.failure.contract` imports this module, not the reverse."""

from __future__ import annotations

from typing import Any, Protocol

from repomin.failure.java_exc import JavaExceptionMode
from repomin.failure.process import ProcessFailureMode
from repomin.failure.python_exc import PythonExceptionMode
from repomin.runners.base import Outcome


class SignatureMode(Protocol):
    """A way to extract a failure identity from one outcome.

    ``flag`` is the ``failure_spec`` boolean (e.g. ``"python_exception"``), ``report_field`` the
    top-level report key (e.g. ``"python_exception_signature"``). ``extract`` returns a JSON-able
    normalised signature or ``None`` when the outcome shows no such failure; ``matches`` compares
    a pinned signature with one extracted from a new outcome.
    """

    flag: str
    report_field: str

    def extract(self, outcome: Outcome) -> dict[str, Any] | None: ...

    def matches(self, pinned: dict[str, Any], observed: dict[str, Any]) -> bool: ...


SIGNATURE_MODES: dict[str, SignatureMode] = {
    mode.flag: mode for mode in (PythonExceptionMode(), JavaExceptionMode(), ProcessFailureMode())
}
