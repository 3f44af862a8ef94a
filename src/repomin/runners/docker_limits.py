"""The Docker runner's container settings: safe defaults, parsing, and what the report records.

Every limit is on by default and each can be lifted explicitly with ``none``:

- memory (swap included): ``min(2 GiB, half the engine host's RAM / jobs)``, at least 256 MiB.
  2 GiB is ample for the test suites ReproMin reduces, and the share keeps ``jobs`` workers
  together from taking more than half of a small host's memory;
- pids: 512 per container (a fork bomb stops there; builds with ``-j`` stay well below);
- ``/tmp``: a 512 MiB tmpfs; ``/dev/shm``: 64 MiB; ``/work``: a 1 GiB tmpfs (``nosuid,nodev``;
  in bind mode a per-worker tmpfs mounted on the host). ``none`` leaves a tmpfs at the kernel's
  default size (half of RAM). With the default memory limit the scratch filesystems together
  stay below it, so filling one is a full filesystem (``resource_exhausted``), not a host OOM.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docker.errors import DockerException
from docker.utils import parse_bytes

from repomin.errors import UsageError

DEFAULT_USER = "65534:65534"
#: The worker's own processes (init, agent, command shell, a kill exec) need room.
MIN_PIDS_LIMIT = 16
MIN_MEMORY = 6 * 1024 * 1024
MIB = 1024 * 1024
GIB = 1024 * MIB
DEFAULT_MEMORY_CAP = 2 * GIB
DEFAULT_MEMORY_FLOOR = 256 * MIB
DEFAULT_PIDS_LIMIT = 512
DEFAULT_TMP_SIZE = "512m"
DEFAULT_SHM_SIZE = "64m"
DEFAULT_WORK_SIZE = "1g"
#: The agent's private output directory (root-only writes; the sample's stdout and stderr).
CONTROL_SIZE = "256m"
#: A scratch filesystem with less than this free after a sample counts as full (exhausted).
FULL_BELOW_BYTES = MIB

#: How a limit is given: ``None`` = the default, ``"none"`` = no limit, else a value.
LimitSpec = str | int | None


@dataclass(frozen=True, slots=True)
class Limits:
    """The validated, effective container settings of one runner."""

    network: str
    memory: str | None
    memory_bytes: int | None
    cpus: float | None
    pids_limit: int | None
    uid: int
    gid: int
    tmp_size: str | None = DEFAULT_TMP_SIZE
    shm_size: str = DEFAULT_SHM_SIZE
    work_size: str | None = DEFAULT_WORK_SIZE
    defaults: tuple[str, ...] = ()

    @property
    def user(self) -> str:
        return f"{self.uid}:{self.gid}"

    @property
    def keepalive_user(self) -> str:
        other = 65533 if self.uid == 65534 else 65534
        return f"{other}:{other}"

    def tmpfs_options(self, *, mode: str, size: str | None, owner: bool = False) -> str:
        """``rw,nosuid,nodev,...`` for a tmpfs (Docker makes tmpfs ``noexec`` unless told)."""
        options = f"rw,nosuid,nodev,exec,mode={mode}"
        if owner:
            options += f",uid={self.uid},gid={self.gid}"
        if size is not None:
            options += f",size={size}"
        return options

    def describe(self) -> dict[str, Any]:
        """The ``execution`` fields for these settings (effective values; ``null`` = none)."""
        return {
            "docker_network": self.network,
            "docker_memory": self.memory,
            "docker_memory_bytes": self.memory_bytes,
            "docker_cpus": self.cpus,
            "docker_pids_limit": self.pids_limit,
            "docker_user": self.user,
            "docker_tmp_size": self.tmp_size,
            "docker_shm_size": self.shm_size,
            "docker_work_size": self.work_size,
            "docker_work_mount": "tmpfs,nosuid,nodev",
            "docker_limit_defaults": list(self.defaults),
        }


def size_bytes(text: str) -> int | None:
    """``512m`` -> bytes, or ``None`` when it is not a size."""
    try:
        return int(parse_bytes(text))
    except (DockerException, ValueError, TypeError):
        return None


def default_memory(host_memory: int | None, jobs: int) -> int:
    """``min(2 GiB, host RAM / (2 * jobs))``, at least 256 MiB (2 GiB when RAM is unknown)."""
    if not host_memory or host_memory <= 0:
        return DEFAULT_MEMORY_CAP
    share = host_memory // (2 * max(1, jobs))
    return max(DEFAULT_MEMORY_FLOOR, min(DEFAULT_MEMORY_CAP, share))


def _is_none(spec: LimitSpec) -> bool:
    return isinstance(spec, str) and spec.strip().lower() == "none"


def _size(flag: str, spec: LimitSpec, default: str) -> tuple[str | None, bool]:
    """``(effective size or None, taken from the default)`` for a tmpfs size option."""
    if spec is None:
        return default, True
    if _is_none(spec):
        return None, False
    text = str(spec).strip()
    value = size_bytes(text)
    if value is None or value < MIB:
        raise UsageError(f"{flag} {spec!r} is not a size of at least 1m (e.g. 256m, 2g) or none")
    return text, False


def _memory(spec: LimitSpec, host_memory: int | None, jobs: int) -> tuple[str | None, int | None]:
    if spec is None:
        value = default_memory(host_memory, jobs)
        return f"{value // MIB}m", value
    if _is_none(spec):
        return None, None
    parsed = size_bytes(str(spec))
    if parsed is None or parsed < MIN_MEMORY:
        raise UsageError(f"--memory {spec!r} is not a size of at least 6m (e.g. 512m, 2g) or none")
    return str(spec), parsed


def _pids(spec: LimitSpec) -> int | None:
    if spec is None:
        return DEFAULT_PIDS_LIMIT
    if _is_none(spec):
        return None
    try:
        value = int(spec)
    except (TypeError, ValueError):
        raise UsageError(f"--pids-limit {spec!r} is not a number (e.g. 512) or none") from None
    if value < MIN_PIDS_LIMIT:
        raise UsageError(f"--pids-limit {value} is too small; use at least {MIN_PIDS_LIMIT}")
    return value


def parse_limits(
    *,
    network: str = "none",
    memory: LimitSpec = None,
    cpus: float | None = None,
    pids_limit: LimitSpec = None,
    user: str | None = None,
    tmp_size: LimitSpec = None,
    work_size: LimitSpec = None,
    host_memory: int | None = None,
    jobs: int = 1,
) -> Limits:
    """Check the settings; each problem is a :class:`UsageError` naming the value and the fix."""
    if network not in ("none", "bridge"):
        raise UsageError(f"--network {network!r} is not supported; use 'none' or 'bridge'")
    memory_text, memory_bytes = _memory(memory, host_memory, jobs)
    if cpus is not None and not cpus > 0:
        raise UsageError(f"--cpus {cpus!r} must be a positive number (e.g. 1.5)")
    pids = _pids(pids_limit)
    tmp, tmp_default = _size("--tmp-size", tmp_size, DEFAULT_TMP_SIZE)
    work, work_default = _size("--work-size", work_size, DEFAULT_WORK_SIZE)
    spec = DEFAULT_USER if user is None else user
    match = re.fullmatch(r"(\d+)(?::(\d+))?", spec)
    if match is None:
        raise UsageError(f"--user {spec!r} must be numeric UID[:GID] (e.g. {DEFAULT_USER})")
    uid = int(match.group(1))
    gid = int(match.group(2)) if match.group(2) is not None else uid
    if uid == 0:
        raise UsageError("--user 0 (root) is refused: samples run as a non-root user")
    defaults = tuple(
        name
        for name, taken in (
            ("memory", memory is None),
            ("pids_limit", pids_limit is None),
            ("tmp_size", tmp_default),
            ("work_size", work_default),
        )
        if taken
    )
    return Limits(
        network=network,
        memory=memory_text,
        memory_bytes=memory_bytes,
        cpus=cpus,
        pids_limit=pids,
        uid=uid,
        gid=gid,
        tmp_size=tmp,
        work_size=work,
        defaults=defaults,
    )


#: The recorded ``execution`` fields that rebuild a Docker boundary (see :func:`replay_settings`).
RECORDED_SETTINGS = frozenset(
    {
        "docker_network",
        "docker_memory",
        "docker_cpus",
        "docker_pids_limit",
        "docker_user",
        "docker_strategy",
        "docker_tmp_size",
        "docker_work_size",
    }
)


def replay_settings(recorded: Mapping[str, Any]) -> dict[str, Any]:
    """``DockerRunner`` keyword arguments that rebuild the boundary a report recorded.

    A recorded ``null`` limit means "no limit" and is replayed as ``"none"``, never as today's
    default; so is a size a report older than the defaults does not record (it had none).
    """

    def limit(key: str) -> LimitSpec:
        value = recorded.get(key)
        return "none" if value is None else value

    strategy = recorded.get("docker_strategy")
    return {
        "network": str(recorded.get("docker_network", "none")),
        "memory": limit("docker_memory"),
        "cpus": recorded.get("docker_cpus"),
        "pids_limit": limit("docker_pids_limit"),
        "user": recorded.get("docker_user"),
        "tmp_size": limit("docker_tmp_size"),
        "work_size": limit("docker_work_size"),
        "fresh_container": strategy == "container-per-sample",
        "strategy": "exec" if strategy == "exec-per-sample" else None,
    }


#: tmpfs allocates whole pages: the least a file of ``n`` bytes takes in ``/work``.
PAGE = 4096


def check_fits(tree_sizes: list[int], work_size: str | None) -> None:
    """A :class:`UsageError` when a tree cannot fit into ``/work`` (pages alone exceed it).

    Deterministic for a given tree, so it is bad input, not an engine failure: retrying cannot
    help, and a reduction's candidates are never larger than its input.
    """
    if work_size is None:
        return
    limit = size_bytes(work_size)
    needed = sum(-(-n // PAGE) * PAGE for n in tree_sizes)
    if limit is not None and needed > limit:
        raise UsageError(
            f"the tree needs at least {-(-needed // MIB)} MiB in /work, more than --work-size "
            f"{work_size}; pass a larger --work-size (e.g. {-(-needed * 2 // GIB)}g) or none"
        )
