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

from repomin.errors import UsageError
from repomin.runners.extras import require

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
    """``512m`` -> bytes, or ``None`` when it is not a size (Docker's own parser: the Docker
    SDK, imported here so that the report tools, which only describe limits, never load it)."""
    require("docker", "docker", "a Docker size (--memory, --tmp-size, --work-size)")
    from docker.errors import DockerException
    from docker.utils import parse_bytes

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
    if gid == 0:  # files of group root in the image, and the agent's, would be the sample's
        raise UsageError(
            f"--user {spec}: group 0 (root's group) is refused; give a non-zero GID, e.g. "
            f"{uid}:{uid}"
        )
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


#: The recorded ``execution`` fields that describe a Docker boundary. Replay shows them and never
#: uses them: its boundary is :class:`ReplaySandbox`.
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


@dataclass(frozen=True, slots=True)
class ReplaySandbox:
    """The Docker boundary of ``report replay``: ReproMin's defaults, changed only by the
    replay's own command line (``reduce``'s option names and parsing), never by a report --
    a report arrives with a bug report and is the sender's to write. ``None``: the default."""

    network: str | None = None
    memory: LimitSpec = None
    cpus: float | None = None
    pids_limit: LimitSpec = None
    user: str | None = None
    tmp_size: LimitSpec = None
    work_size: LimitSpec = None
    fresh_container: bool = False

    def given(self) -> list[str]:
        """The options given on the command line (for "apply to a docker report only")."""
        named = (
            ("--network", self.network),
            ("--memory", self.memory),
            ("--cpus", self.cpus),
            ("--pids-limit", self.pids_limit),
            ("--user", self.user),
            ("--tmp-size", self.tmp_size),
            ("--work-size", self.work_size),
        )
        flags = [flag for flag, value in named if value is not None]
        return flags + (["--fresh-container"] if self.fresh_container else [])


def replay_settings(sandbox: ReplaySandbox) -> dict[str, Any]:
    """``DockerRunner`` keyword arguments for a replay, checked now: a bad value is a usage
    error before the engine is asked, and neither root's uid nor root's group is accepted
    (:func:`parse_limits`, as for a reduction)."""
    limits = parse_limits(
        network=sandbox.network or "none",
        memory=sandbox.memory,
        cpus=sandbox.cpus,
        pids_limit=sandbox.pids_limit,
        user=sandbox.user,
        tmp_size=sandbox.tmp_size,
        work_size=sandbox.work_size,
    )
    return {
        "network": limits.network,
        "memory": sandbox.memory,
        "cpus": sandbox.cpus,
        "pids_limit": sandbox.pids_limit,
        "user": sandbox.user,
        "tmp_size": sandbox.tmp_size,
        "work_size": sandbox.work_size,
        "fresh_container": sandbox.fresh_container,
        "strategy": None,
    }


def _shown(spec: LimitSpec, default: str, flag: str, unit: str = "") -> str:
    if spec is None:
        return f"{default} (default)"
    if _is_none(spec):
        return f"no limit ({flag})"
    return f"{spec}{unit} ({flag})"


def describe_replay_sandbox(sandbox: ReplaySandbox) -> list[str]:
    """One line per part of the boundary a replay will run in, each saying where it comes
    from (``default`` or the option that set it). Memory's default depends on the engine's
    RAM and the jobs, so its exact value is shown once the engine answered."""
    user = sandbox.user or DEFAULT_USER
    if ":" not in user:
        user = f"{user}:{user}"
    return [
        "network " + (f"{sandbox.network} (--network)" if sandbox.network else "none (default)"),
        "memory "
        + _shown(
            sandbox.memory,
            "min(2 GiB, engine host RAM / (2 x jobs)), at least 256 MiB, swap included",
            "--memory",
            ", swap included",
        ),
        "cpus "
        + (f"{sandbox.cpus:g} (--cpus)" if sandbox.cpus is not None else "no limit (default)"),
        "processes " + _shown(sandbox.pids_limit, str(DEFAULT_PIDS_LIMIT), "--pids-limit"),
        "/tmp " + _shown(sandbox.tmp_size, f"{DEFAULT_TMP_SIZE} tmpfs", "--tmp-size", " tmpfs"),
        "/work " + _shown(sandbox.work_size, f"{DEFAULT_WORK_SIZE} tmpfs", "--work-size", " tmpfs"),
        f"/dev/shm {DEFAULT_SHM_SIZE} tmpfs",
        "user " + (f"{user} (--user)" if sandbox.user else f"{user} (default)"),
        "strategy "
        + (
            "container-per-sample (--fresh-container)"
            if sandbox.fresh_container
            else "agent-per-worker (default; exec-per-sample or a container per sample when "
            "the image needs it)"
        ),
        "always: read-only root, all capabilities dropped, no-new-privileges, private IPC, "
        "an init process, no container logs",
    ]


def describe_recorded(recorded: Mapping[str, Any]) -> str:
    """What a report recorded for its Docker boundary, in :func:`describe_replay_sandbox`'s
    words (``null``: no limit); user 0 and group 0 are marked. Raw report text: escape it."""
    labels = (
        ("docker_network", "network"),
        ("docker_memory", "memory"),
        ("docker_cpus", "cpus"),
        ("docker_pids_limit", "processes"),
        ("docker_tmp_size", "/tmp"),
        ("docker_work_size", "/work"),
        ("docker_user", "user"),
        ("docker_strategy", "strategy"),
    )
    parts = []
    for key, label in labels:
        if key not in recorded:
            continue
        value = recorded[key]
        text = "no limit" if value is None else str(value)
        if key == "docker_user" and isinstance(value, str):
            uid, _, gid = value.partition(":")
            if uid.lstrip("0") == "":
                text += " (root)"
            elif gid and gid.lstrip("0") == "":
                text += " (root's group)"
        parts.append(f"{label} {text}")
    return ", ".join(parts)


def describe_effective(described: Mapping[str, Any]) -> str:
    """The boundary a started Docker runner holds (its ``describe()``), in one line."""

    def value(key: str) -> str:
        item = described.get(key)
        return "no limit" if item is None else str(item)

    return (
        f"network {value('docker_network')}, memory {value('docker_memory')}, "
        f"cpus {value('docker_cpus')}, processes {value('docker_pids_limit')}, "
        f"/tmp {value('docker_tmp_size')}, /work {value('docker_work_size')}, "
        f"user {value('docker_user')}, strategy {value('docker_strategy')}"
    )


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
