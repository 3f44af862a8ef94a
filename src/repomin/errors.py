"""One exception hierarchy for everything ReproMin reports to a user.

Each error carries the fields its message is built from, and an ``exit_code``; the CLI maps
errors to exit codes in one place (``repomin.cli.main``). Messages are one line: what is wrong,
with the offending value, and how to fix it.
"""

from __future__ import annotations


class ReproMinError(Exception):
    """Base class. ``exit_code`` 2 means bad input or an invalid report."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(ReproMinError):
    """Bad command-line input: a missing path, an invalid regex, conflicting options."""


class SelectionError(ReproMinError):
    """The input tree cannot be read or contains something ReproMin refuses to copy."""


class BaselineError(ReproMinError):
    """The command does not reproduce the failure often enough on the unreduced tree."""


class SignatureError(ReproMinError):
    """A signature mode could not learn one consistent failure identity from the baseline."""


class ReportError(ReproMinError):
    """A report (or its payload) is malformed, unsupported or inconsistent."""


class InfrastructureError(ReproMinError):
    """The execution backend failed (daemon gone, image missing); never a verdict on a tree."""

    exit_code = 3


class SessionError(ReproMinError):
    """A persistent session cannot be resumed with the given configuration."""


class Interrupted(ReproMinError):
    """The user interrupted the run (SIGINT/SIGTERM)."""

    exit_code = 130
