"""The in-container side of the Docker runner: the sample script and its framing protocol.

One ``docker exec`` per sample runs :data:`SAMPLE_SCRIPT` as the sample's (non-root) user. It
reaps whatever the previous sample left running, wipes scratch space and the container's IPC
objects, copies the tree in (when it is streamed), runs the command in ``/work``, reaps again,
wipes again, and frames the command's stderr with a
header and a trailer that carry the exit status and the cgroup's OOM-kill and pids-limit counters.

The frame cannot be forged by the sample: the header is written before the command starts, the
trailer only after every process of the sample's uid is gone, and both carry a per-sample nonce;
the parser only accepts a header at the very start and a trailer at the very end of stderr.
Reaping uses shell builtins only, so it still works when a fork bomb holds the pids limit, and
it polls ``/proc`` because ``kill -9 -1`` reports success even when stragglers remain.
"""

from __future__ import annotations

from dataclasses import dataclass

from repomin.runners.base import OUTPUT_LIMIT, truncate

#: Same marker as :func:`repomin.runners.base.truncate` uses.
TRUNCATION_MARK = b"\n[... repomin: output truncated ...]\n"

#: Streamed trees are padded with zeros to a multiple of this (tar ignores trailing zeros).
STREAM_BLOCK = 65536

#: Where the tree lives inside the container (also ``Outcome.workdir``).
WORKDIR = "/work"

#: Emptying scratch directories as the sample user (no single quotes: embedded in one).
_WIPE_FUNCTIONS = r"""
rp_empty() {
    for rp_e in "$1"/* "$1"/.[!.]* "$1"/..?*; do
        if [ -e "$rp_e" ] || [ -L "$rp_e" ]; then return 1; fi
    done
    return 0
}
rp_wipe() {
    cd / || return 1
    rp_clean=1
    for rp_dir in "$@"; do
        [ -d "$rp_dir" ] || continue
        rp_empty "$rp_dir" && continue
        rm -rf "$rp_dir"/* "$rp_dir"/.[!.]* "$rp_dir"/..?* 2>/dev/null
        if ! rp_empty "$rp_dir"; then
            chmod -R u+rwx "$rp_dir"/* "$rp_dir"/.[!.]* "$rp_dir"/..?* 2>/dev/null
            rm -rf "$rp_dir"/* "$rp_dir"/.[!.]* "$rp_dir"/..?* 2>/dev/null
            rp_empty "$rp_dir" || rp_clean=0
        fi
    done
    [ "$rp_clean" = 1 ]
}
"""

#: ``rp_ipcdirty``: whether the container's IPC namespace holds an object a sample left: a POSIX
#: message queue (``/dev/mqueue``) or a System V shared memory segment, semaphore set or message
#: queue (``/proc/sysvipc``). Builtins only. (No single quotes: embedded in one.)
IPC_CHECK = r"""rp_ipcdirty() {
    for rp_e in /dev/mqueue/* /dev/mqueue/.[!.]* /dev/mqueue/..?*; do
        if [ -e "$rp_e" ] || [ -L "$rp_e" ]; then return 0; fi
    done
    for rp_f in /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg; do
        { { read -r rp_x && read -r rp_x; } <"$rp_f"; } 2>/dev/null && return 0
    done
    return 1
}
"""

#: ``rp_ipcwipe``, run as the sample user once its processes are gone: removes the POSIX message
#: queues and, with the image's ``ipcrm``, the System V objects (their creator may always remove
#: them); exit 0 only when nothing is left -- otherwise the worker must be replaced.
_IPC_WIPE = (
    IPC_CHECK
    + r"""rp_ipcwipe() {
    rp_ipcdirty || return 0
    [ -d /dev/mqueue ] && rp_wipe /dev/mqueue
    if command -v ipcrm >/dev/null 2>&1; then
        for rp_f in shm:m sem:s msg:q; do
            rp_ids=
            { { read -r rp_x
                while read -r rp_k rp_id rp_rest; do
                    case $rp_id in
                        *[!0-9]*|"") ;;
                        *) rp_ids="$rp_ids -${rp_f#*:} $rp_id" ;;
                    esac
                done; } <"/proc/sysvipc/${rp_f%:*}"; } 2>/dev/null
            [ -z "$rp_ids" ] || ipcrm $rp_ids >/dev/null 2>&1
        done
    fi
    ! rp_ipcdirty
}
"""
)

#: The agent's wipe, run as the sample user: ``sh -c USER_WIPE sh DIR...`` (exit 0 = clean):
#: the directories, then the IPC objects of the container.
USER_WIPE = (
    _WIPE_FUNCTIONS
    + _IPC_WIPE
    + 'chmod u+rwx "$@" 2>/dev/null\nrp_w=0\nrp_wipe "$@" || rp_w=1\nrp_ipcwipe || rp_w=1\n'
    + "exit $rp_w\n"
)

#: ``rp_counters``: the cgroup's OOM-kill and pids-limit counters (v2 files, else v1) into
#: ``$rp_oom`` and ``$rp_pids`` (``-`` when unreadable); shared with the sample agent.
COUNTER_FUNCTIONS = r"""rp_counter() {
    rp_key=$1
    shift
    rp_v=-
    for rp_f in "$@"; do
        [ -r "$rp_f" ] || continue
        { while IFS="$rp_ws" read -r rp_k rp_a rp_rest; do
            [ "$rp_k" = "$rp_key" ] && rp_v=$rp_a
          done <"$rp_f"; } 2>/dev/null
        [ "$rp_v" != - ] && return 0
    done
}
rp_counters() {
    rp_counter oom_kill /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control
    rp_oom=$rp_v
    rp_counter max /sys/fs/cgroup/pids.events /sys/fs/cgroup/pids/pids.events
    rp_pids=$rp_v
}
"""

#: Shared shell functions. ``$rp_uid`` must be set; only builtins are used in ``rp_reap``.
_FUNCTIONS = (
    "\nrp_ws=' \t\n'\n"
    + r"""rp_reap() {
    rp_n=0
    while :; do
        kill -9 -1 2>/dev/null
        rp_left=0
        for rp_d in /proc/[0-9]*; do
            [ "${rp_d#/proc/}" = "$$" ] && continue
            rp_u=; rp_s=
            { while IFS="$rp_ws" read -r rp_k rp_a rp_rest; do
                case $rp_k in Uid:) rp_u=$rp_a ;; State:) rp_s=$rp_a ;; esac
              done <"$rp_d/status"; } 2>/dev/null
            if [ "$rp_u" = "$rp_uid" ] && [ "$rp_s" != Z ] && [ "$rp_s" != X ]; then
                rp_left=$((rp_left + 1))
            fi
        done
        [ "$rp_left" = 0 ] && return 0
        rp_n=$((rp_n + 1))
        [ "$rp_n" -ge 200 ] && return 1
    done
}
"""
    + COUNTER_FUNCTIONS
    + _WIPE_FUNCTIONS
    + _IPC_WIPE
    + r"""PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"""
)

#: argv: uid nonce transport(bind|stream) payload-bytes command. Exits 0 when it framed.
#: A streamed payload's length must be a multiple of :data:`STREAM_BLOCK`.
SAMPLE_SCRIPT = (
    r"""
rp_uid=$1; rp_nonce=$2; rp_mode=$3; rp_size=$4; rp_cmd=$5; rp_path=$PATH
exec 3>&2 2>/dev/null
"""
    + _FUNCTIONS
    + r"""
if ! rp_reap; then
    printf '\n%s setup-failed reap\n' "$rp_nonce" >&3
    exit 0
fi
if [ "$rp_mode" = stream ]; then
    rp_wipe /work /tmp /dev/shm
    rp_w=$?
else
    rp_wipe /tmp /dev/shm
    rp_w=$?
fi
if [ "$rp_w" != 0 ]; then
    printf '\n%s setup-failed wipe\n' "$rp_nonce" >&3
    exit 0
fi
if ! rp_ipcwipe; then
    printf '\n%s setup-failed ipc\n' "$rp_nonce" >&3
    exit 0
fi
if [ "$rp_mode" = stream ]; then
    # dd reads the (64 KiB-padded) payload in big blocks; head -c is the portable fallback.
    if dd if=/dev/zero of=/dev/null bs=512 count=1 iflag=fullblock 2>/dev/null; then
        (umask 0 && dd bs=65536 count=$((rp_size / 65536)) iflag=fullblock 2>/dev/null |
            tar -xf - -C /work)
    else
        (umask 0 && head -c "$rp_size" | tar -xf - -C /work)
    fi
    rp_t=$?
    if [ "$rp_t" != 0 ]; then
        rp_counters
        printf '\n%s setup-failed tar:%s:%s\n' "$rp_nonce" "$rp_t" "$rp_oom" >&3
        exit 0
    fi
fi
rp_counters
printf '%s begin %s %s\n' "$rp_nonce" "$rp_oom" "$rp_pids" >&3
(cd /work || exit 126; PATH=$rp_path; exec /bin/sh -c "$rp_cmd" </dev/null 2>&3 3>&-)
rp_rc=$?
cd /
rp_reap
rp_r=$?
rp_counters
if [ "$rp_mode" = stream ]; then rp_wipe /work /tmp /dev/shm; else rp_wipe /tmp /dev/shm; fi
rp_w=$?
rp_ipcwipe || rp_w=1
printf '\n%s end %s %s %s %s %s\n' "$rp_nonce" "$rp_rc" "$rp_oom" "$rp_pids" "$rp_r" "$rp_w" >&3
exit 0
"""
)

#: argv: uid. Kills every process of the uid, then prints ``reaped oom pids`` on stdout.
REAP_SCRIPT = (
    r"""
rp_uid=$1
"""
    + _FUNCTIONS
    + r"""
rp_reap
rp_r=$?
rp_counters
printf '%s %s %s\n' "$rp_r" "$rp_oom" "$rp_pids"
"""
)

#: The keep-alive of a worker container: exits when its attached stdin closes (client gone).
KEEPALIVE = ["/bin/sh", "-c", "while read -r _; do :; done"]


def _int(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


@dataclass(frozen=True, slots=True)
class Header:
    """Counters read just before the command started (``None`` = not readable here)."""

    oom_kills: int | None
    pids_max_events: int | None


@dataclass(frozen=True, slots=True)
class Trailer:
    """What the script reports after the command: its status and the state it left behind."""

    exit_code: int | None
    oom_kills: int | None
    pids_max_events: int | None
    reaped: bool
    clean: bool
    setup_error: str | None = None


def split_header(data: bytes, nonce: str) -> tuple[Header | None, bytes]:
    """Remove the script's header line from the start of stderr (when it is there)."""
    prefix = f"{nonce} begin ".encode()
    if not data.startswith(prefix) or b"\n" not in data:
        return None, data
    line, _, rest = data.partition(b"\n")
    fields = line.decode("ascii", "replace").split()
    if len(fields) != 4:
        return None, data
    return Header(_int(fields[2]), _int(fields[3])), rest


def split_trailer(data: bytes, nonce: str) -> tuple[Trailer | None, bytes]:
    """Remove the script's trailer from the very end of stderr (when it is there)."""
    at = data.rfind(f"\n{nonce} ".encode())
    if at < 0 or not data.endswith(b"\n") or b"\n" in data[at + 1 : -1]:
        return None, data
    fields = data[at + 1 : -1].decode("ascii", "replace").split()
    trailer: Trailer | None = None
    if len(fields) == 7 and fields[1] == "end":
        trailer = Trailer(
            exit_code=_int(fields[2]),
            oom_kills=_int(fields[3]),
            pids_max_events=_int(fields[4]),
            reaped=fields[5] == "0",
            clean=fields[6] == "0",
        )
    elif len(fields) == 3 and fields[1] == "setup-failed":
        trailer = Trailer(None, None, None, True, True, setup_error=fields[2])
    return (trailer, data[:at]) if trailer is not None else (None, data)


def increased(before: int | None, after: int | None) -> bool:
    """Whether a cgroup event counter moved (unknown counters never count as moved)."""
    return before is not None and after is not None and after > before


class Capture:
    """A bounded byte sink that keeps the head and the tail of a stream (thread-confined).

    It keeps ``slack`` bytes more than :func:`assemble` needs at each end, so that the protocol
    header and trailer survive however much the sample printed in between.
    """

    def __init__(self, limit: int = OUTPUT_LIMIT, slack: int = 4096) -> None:
        self.limit = limit
        self._keep = limit // 2 + slack
        self._head = bytearray()
        self._tail: bytearray | None = None

    def add(self, data: bytes) -> None:
        if self._tail is None:
            self._head += data
            if len(self._head) <= 2 * self._keep:
                return
            self._tail = self._head[self._keep :]
            del self._head[self._keep :]
        else:
            self._tail += data
        if len(self._tail) > 2 * self._keep:  # trimming lazily keeps appends amortised O(1)
            del self._tail[: len(self._tail) - self._keep]

    def parts(self) -> tuple[bytes, bytes | None]:
        """``(everything, None)``, or ``(head, tail)`` once the middle has been dropped."""
        if self._tail is None:
            return bytes(self._head), None
        return bytes(self._head), bytes(self._tail[-self._keep :])


def assemble(head: bytes, tail: bytes | None, limit: int = OUTPUT_LIMIT) -> bytes:
    """The final stream value, bounded like the host runner's (head and tail kept)."""
    if tail is None:
        return truncate(head, limit)
    half = limit // 2
    return head[:half] + TRUNCATION_MARK + tail[-half:]
