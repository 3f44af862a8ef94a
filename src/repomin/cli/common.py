"""What every command shares: errors become one line on stderr and an exit code.

Owns the mapping of :class:`~repomin.errors.ReproMinError` (and Ctrl-C) to exit codes; no
traceback reaches the user. An interrupt that escaped as the search's internal
:class:`~repomin.sampling.budget.StopSearch` (every stage should turn it into
:class:`~repomin.errors.Interrupted` itself) is still an interrupt: one line, exit 130.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from repomin.errors import ReproMinError
from repomin.sampling.budget import StopSearch

F = TypeVar("F", bound=Callable[..., Any])


def errors_to_exit(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ReproMinError as exc:
            click.echo(f"repomin: error: {exc.message}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("repomin: interrupted", err=True)
            sys.exit(130)
        except StopSearch as exc:
            if exc.reason != "interrupted":
                raise
            click.echo("repomin: interrupted; rerun the same command with --resume", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]
