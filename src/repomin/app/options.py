"""Library options of one reduction: :class:`ReduceOptions` (frozen, validated once).

Owns the typed, validated description of a ``reduce`` call (the CLI parses its flags into it;
library callers build it directly), the pass schedule planning and ``--env`` parsing, and the
configuration fingerprint a session must match to be resumed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from repomin.analysis.semantic import SemanticConfig
from repomin.app.diagnose import check_command
from repomin.app.selection import SelectionOptions
from repomin.cluster.wiring import ClusterConfig
from repomin.errors import UsageError
from repomin.failure.contract import FailureSpec
from repomin.passes import DEFAULT_SCHEDULE, REGISTRY
from repomin.report.build import environment_digest
from repomin.sampling.holdout import HoldoutConfig
from repomin.sampling.oracle import Budget
from repomin.sampling.policy import SamplingConfig

STRATEGY_VERSION = "repomin-hdd-v5"


@dataclass(frozen=True, slots=True)
class ReduceOptions:
    src: Path
    output: Path
    command: str
    spec: FailureSpec
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    #: Every run at ``timeout`` (``--fixed-timeout``); default: adaptive candidate limit.
    fixed_timeout: bool = False
    selection: SelectionOptions = SelectionOptions()
    sampling: SamplingConfig = SamplingConfig()
    jobs: int = 1
    use_cache: bool = True
    budget: Budget = Budget()
    force: bool = False
    schedule: tuple[str, ...] = DEFAULT_SCHEDULE
    backend: str = "host"
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    holdout: HoldoutConfig | None = None
    session_dir: Path | None = None
    resume: bool = False
    use_session: bool = True
    export_on_interrupt: bool = False
    semantic: SemanticConfig | None = None
    #: ``--keep-rate``: reject candidates whose rate is significantly above the baseline's.
    keep_rate: bool = False
    #: ``--isolation``: the host runner's sample boundary (``auto``: the namespace when bwrap
    #: works here, else the supervisor; ``namespace``: required, exit 2 when it cannot be made).
    #: Not part of the session configuration: the report records what was used.
    isolation: str = "auto"
    #: ``--home``: the host samples' HOME (``fresh``: a private empty one per sample;
    #: ``inherit``: the user's, read-only in the namespace; see ``repomin.runners.host``).
    home: str = "fresh"
    #: ``--user-shell-runs``: runs of the payload in the user's own shell before export (0:
    #: skipped; not part of the session configuration).
    user_shell_runs: int = 3
    #: ``--allow-src-access``: proceed when a visible SRC was reached by its absolute path.
    allow_src_access: bool = False
    #: ``--cluster``: samples run on a Dask cluster (not part of the session configuration,
    #: so ``--resume`` may continue on another cluster or locally).
    cluster: ClusterConfig | None = None

    def __post_init__(self) -> None:
        check_command(self.command)
        if self.timeout <= 0:
            raise UsageError(f"--timeout {self.timeout} must be positive (seconds)")
        if self.jobs < 1:
            raise UsageError(f"--jobs {self.jobs} must be at least 1")
        if self.home not in ("fresh", "inherit"):
            raise UsageError(f"--home {self.home!r} must be fresh or inherit")
        if self.home == "inherit" and self.backend != "host":
            raise UsageError(
                "--home inherit is for the host runner: a container has its own HOME (drop "
                "--home or use --backend host)"
            )
        if self.home == "inherit" and "HOME" in self.env:
            raise UsageError(
                "--home inherit and --env HOME both set the samples' HOME; pass one of them"
            )
        if self.user_shell_runs < 0:
            raise UsageError(f"--user-shell-runs {self.user_shell_runs} must be 0 or more")
        unknown = [p for p in self.schedule if p not in REGISTRY]
        if unknown:
            raise UsageError(
                f"unknown pass {unknown[0]!r}; available passes: {', '.join(sorted(REGISTRY))}"
            )
        if "semantic" in self.schedule and self.semantic is None:
            raise UsageError(
                "the semantic pass needs --semantic-endpoint URL and --semantic-model NAME"
            )

    @property
    def reduction_strategy(self) -> str:
        return f"{STRATEGY_VERSION}:{','.join(self.schedule)}"

    def session_config(self, source_digest: str) -> dict[str, Any]:
        """Everything that must be equal for ``--resume`` to continue a session."""
        return {
            "source_tree": source_digest,
            "command": self.command,
            "failure_spec": self.spec.to_json(),
            "environment_sha256": environment_digest(self.env),
            "environment_names": sorted(self.env),
            "timeout": self.timeout,
            "fixed_timeout": self.fixed_timeout,
            "sampling": {
                k: str(v) if isinstance(v, str) else v for k, v in asdict(self.sampling).items()
            },
            "backend": self.backend,
            "backend_options": {k: str(v) for k, v in sorted(self.backend_options.items())},
            "jobs": self.jobs,
            "cache": self.use_cache,
            "reduction_strategy": self.reduction_strategy,
            # only when set, so that sessions written before the flag existed still resume
            **({"keep_rate": True} if self.keep_rate else {}),
            **({"home": "inherit"} if self.home == "inherit" else {}),
        }


def plan_schedule(
    schedule: tuple[str, ...], *, trace: bool = True, semantic: bool = False
) -> tuple[str, ...]:
    """``--no-trace`` drops the trace cut; ``--semantic-endpoint`` adds the semantic pass right
    after ``files`` (first if there is no ``files``) unless the schedule names it already."""
    planned = [p for p in schedule if trace or p != "trace"]
    if semantic and "semantic" not in planned:
        at = planned.index("files") + 1 if "files" in planned else 0
        planned.insert(at, "semantic")
    return tuple(planned)


def parse_env(items: tuple[str, ...], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``NAME=VALUE`` sets, ``NAME`` passes the current value through."""
    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if (
            not name
            or not (name[0].isalpha() or name[0] == "_")
            or not all(c.isalnum() or c == "_" for c in name)
        ):
            raise UsageError(f"--env {item!r}: expected NAME=VALUE or NAME (a valid variable name)")
        if not sep:
            if name not in environ:
                raise UsageError(
                    f"--env {name}: not set in the current environment; use --env {name}=VALUE"
                )
            value = environ[name]
        env[name] = value
    return env
