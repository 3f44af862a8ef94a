"""Can samples reach SRC by its absolute path, and did the traced run do so?

A payload that only reproduces because a sample reached the original tree through an absolute
path (a Makefile with ``/path/to/SRC/autoconf/missing``, a ``sys.path`` entry, a symlink
target, a venv) means nothing once SRC is moved. Where the host runner has a private mount
namespace, SRC is an empty directory inside every sample (``hidden``); a container never sees
it either. Where no namespace can be made (the ``supervisor`` fallback), the traced run's
strace log is searched for the first system call whose path lies under SRC
(``trace.first_access_under``): such an access stops the reduction with exit 2 naming the path,
unless ``--allow-src-access`` (then ``allowed`` and the path are recorded). ``checked`` is one
traced run's word: a command that looks for its tracer (``TracerPid``) and reads SRC only when
untraced evades it, so a notice says that supervisor mode cannot prove SRC was not read.
Without an strace log nothing can be checked (``unchecked``, and a notice says so).

The states are the report's ``execution.source_access``; ``execution.source_access_path`` is
the first path reached (or null).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repomin.analysis.trace import TraceResult
from repomin.errors import UsageError
from repomin.runners.base import Runner

SOURCE_ACCESS = ("hidden", "checked", "unchecked", "allowed")


@dataclass(frozen=True, slots=True)
class SourceAccess:
    """The ``execution.source_access`` record of one reduction."""

    state: str
    path: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"source_access": self.state, "source_access_path": self.path}


def source_visible(runner: Runner) -> bool:
    """True unless the runner is known to hide SRC (namespace with SRC hidden, or container)."""
    if getattr(runner, "hides_source", None) is True:
        return False
    return runner.describe().get("sample_isolation") != "container"


def forbidden_roots(src: Path) -> tuple[str, ...]:
    """SRC's absolute path as given and with symlinks resolved (either may appear in a log)."""
    return tuple(dict.fromkeys((os.path.abspath(src), str(src.resolve()))))


def judge(
    visible: bool,
    trace: TraceResult,
    src: Path,
    *,
    allow: bool,
    notice: Callable[[str], None],
) -> SourceAccess:
    """The record for this trace; raises :class:`UsageError` (exit 2) on an access to SRC."""
    if not visible:
        return SourceAccess("hidden")
    reached = trace.forbidden_access
    if reached is not None:
        if allow:
            notice(
                f"the traced run reached SRC at {reached}; proceeding (--allow-src-access): the "
                "payload may not reproduce once SRC is moved"
            )
            return SourceAccess("allowed", reached)
        raise UsageError(
            f"the command reached the source tree by its absolute path ({reached}) in the "
            "traced run, and samples here can see SRC (no mount namespace), so the payload "
            "could depend on files outside it; make that path relative to the tree, install "
            "bubblewrap, or rerun with --allow-src-access to proceed anyway (recorded)"
        )
    if trace.method == "strace":
        notice(
            "samples can see SRC here (supervisor mode, no namespace): one traced run showed no "
            "access under it, which a command that behaves differently when traced can evade; "
            "supervisor mode contains accidents, not attacks: for a tree you do not trust use "
            "--isolation namespace (bubblewrap) or --backend docker"
        )
        return SourceAccess("checked")
    notice(
        f"samples can see SRC at {os.path.abspath(src)} (no mount namespace) and no strace log "
        f"could check whether the command reaches it ({trace.reason}); if it does, the payload "
        "will not reproduce once SRC is moved"
    )
    return SourceAccess("allowed" if allow else "unchecked")
