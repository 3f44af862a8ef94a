"""The sample agent's in-container side: a POSIX sh loop that runs one sample per request.

The agent is the worker container's own process (under ``docker-init``), started once per
worker. It runs as root *inside* the container with only ``SETUID``, ``SETGID`` and ``KILL``
(every other capability dropped, ``no-new-privileges``, read-only root) and never runs sample
code as root: each command is started with ``nsenter -S UID -G GID`` (or ``setpriv``, whichever
the image has; both busybox and util-linux ship ``nsenter``) in its own session, as the sample
user, so the sample can neither signal, trace nor read the agent, nor reach its request and
response channels (file descriptors 4 and 3, closed for the sample). Why a shell agent: every
image with ``/bin/sh`` can run it (busybox test images have no Python), and its per-sample work
is a handful of ``fork``/``exec`` calls -- the cost that matters is the engine round trip it
replaces.

Protocol (over the container's attached stdin/stdout; one request at a time):

- start-up: ``repomin-agent 1 ready KIND`` or ``repomin-agent 1 unusable WHY`` (then it exits);
- request: line 1 ``NONCE TIMEOUT MODE TAR_BYTES``, line 2 a shell line ``set -- NAME=VALUE
  ...`` (the sample's environment, words quoted by :func:`shell_quote`; applied by ``env``
  *after* the switch to the sample user, so no root-run tool sees e.g. ``LD_PRELOAD``), line 3
  ``rp_cmd=QUOTED``, then
  ``TAR_BYTES`` of tree archive (``MODE`` stream) -- nothing follows until the response;
- response: ``NONCE R RC OOM0 OOM1 PIDS0 PIDS1 REAPED CLEAN FULL TIMEDOUT OUT OUTCUT ERR
  ERRCUT CU0 CS0 CU1 CS1`` (``CU``/``CS``: the agent's children's user and system time as its
  ``times`` builtin prints them, e.g. ``0m0.020000s``, before the sample and after waiting for
  it, ``-`` when unreadable), then ``OUT`` bytes of stdout and ``ERR`` bytes of stderr
  (``*CUT`` 1: head and tail of an oversized stream were sent), or ``NONCE E REASON`` when the
  tree could not be unpacked.

Per request it reaps (kills every process but init and itself, polling ``/proc``: builtins
only, so it works while a fork bomb holds the pids limit), unpacks a streamed tree as the
sample user, runs the command with a watchdog (the shell's ``times`` before and after: the CPU
time of the sample's process and of every descendant it waited for), reaps again, reads the
cgroup's ``oom_kill`` and pids ``max`` counters, checks whether a scratch filesystem is full,
wipes ``/tmp``, ``/dev/shm`` (and a streamed ``/work``) and removes the IPC objects the sample
left in the container's IPC namespace (POSIX message queues, System V shared memory, semaphores
and message queues) as the sample user, and answers. What it cannot remove (System V objects in
an image without ``ipcrm``) makes the answer unclean: the client replaces the worker.
"""

from __future__ import annotations

from repomin.runners.docker_script import COUNTER_FUNCTIONS, IPC_CHECK, USER_WIPE

#: Version of the request/response protocol (first line the agent prints).
AGENT_PROTOCOL = "2"
#: The agent's private directory (a root-owned 0700 tmpfs): the sample's output files.
CONTROL = "/repomin"

_CHECK_UID = (
    'while read -r k a b r; do [ "$k" = Uid: ] && [ "$a" = "$0" ] && [ "$b" = "$0" ] && exit 0; '
    "done </proc/self/status; exit 1"
)

#: argv: uid gid output-limit. Runs as root in the container (see the module docstring).
AGENT_SCRIPT = (
    r"""
rp_uid=$1; rp_gid=$2; rp_limit=$3; rp_half=$(($3 / 2)); rp_path=$PATH
"""
    + "rp_ws=' \t\n'\nrp_nl='\n'\n"
    + r"""
exec 4<&0 </dev/null 3>&1 >/dev/null 2>/dev/null
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
rp_check='"""
    + _CHECK_UID
    + r"""'
rp_userwipe='"""
    + USER_WIPE
    + r"""'
rp_kind=
rp_tool=$(command -v nsenter)
if [ -n "$rp_tool" ] && "$rp_tool" -S "$rp_uid" -G "$rp_gid" /bin/sh -c "$rp_check" "$rp_uid"
then
    rp_kind=nsenter
else
    rp_tool=$(command -v setpriv)
    if [ -n "$rp_tool" ] && "$rp_tool" --reuid="$rp_uid" --regid="$rp_gid" --clear-groups \
        /bin/sh -c "$rp_check" "$rp_uid"; then
        rp_kind=setpriv
    fi
fi
rp_setsid=$(command -v setsid)
rp_envtool=$(command -v env)
[ -n "$rp_envtool" ] || rp_kind=
if [ -z "$rp_kind" ]; then
    printf 'repomin-agent %s unusable no-uid-switch\n' """
    + AGENT_PROTOCOL
    + r""" >&3
    exit 0
fi
rp_as() {
    if [ "$rp_kind" = nsenter ]; then
        "$rp_tool" -S "$rp_uid" -G "$rp_gid" "$@"
    else
        "$rp_tool" --reuid="$rp_uid" --regid="$rp_gid" --clear-groups "$@"
    fi
}
rp_reap() {
    rp_n=0
    while :; do
        kill -9 -1 2>/dev/null
        rp_left=0
        for rp_d in /proc/[0-9]*; do
            rp_p=${rp_d#/proc/}
            [ "$rp_p" = "$$" ] && continue
            [ "$rp_p" = 1 ] && continue
            rp_s=
            { while IFS="$rp_ws" read -r rp_k rp_a rp_rest; do
                [ "$rp_k" = State: ] && { rp_s=$rp_a; break; }
              done <"$rp_d/status"; } 2>/dev/null
            case $rp_s in ''|Z|X) ;; *) rp_left=$((rp_left + 1)) ;; esac
        done
        [ "$rp_left" = 0 ] && break
        rp_n=$((rp_n + 1))
        [ "$rp_n" -ge 200 ] && return 1
    done
    wait 2>/dev/null
    return 0
}
"""
    + COUNTER_FUNCTIONS
    + IPC_CHECK
    + r"""rp_dirty() {
    for rp_e in "$1"/* "$1"/.[!.]* "$1"/..?*; do
        if [ -e "$rp_e" ] || [ -L "$rp_e" ]; then return 0; fi
    done
    return 1
}
rp_full() {
    rp_full=0
    stat -f -c '%a %S' "$@" >"""
    + CONTROL
    + r"""/df 2>/dev/null || return 0
    while read -r rp_a rp_b; do
        [ $((rp_a * rp_b)) -lt 1048576 ] && rp_full=1
    done <"""
    + CONTROL
    + r"""/df
}
rp_size() {
    rp_sz=0
    [ -s "$1" ] || return 0
    rp_sz=$(wc -c <"$1")
    rp_sz=${rp_sz##* }
}
rp_send() {
    [ "$2" = 0 ] && return 0
    if [ "$2" -le "$rp_limit" ]; then
        cat "$1"
    else
        head -c "$rp_half" "$1"; tail -c "$rp_half" "$1"
    fi
}
rp_times() {
    rp_tu=; rp_ts=
    { read -r rp_x rp_y; read -r rp_tu rp_ts; } <"""
    + CONTROL
    + r"""/times 2>/dev/null
    [ -n "$rp_tu" ] || rp_tu=-
    [ -n "$rp_ts" ] || rp_ts=-
}
rp_sent() {
    rp_cut=0; rp_n=$1
    if [ "$1" -gt "$rp_limit" ]; then rp_cut=1; rp_n=$((rp_half * 2)); fi
}
printf 'repomin-agent %s ready %s\n' """
    + AGENT_PROTOCOL
    + r""" "$rp_kind" >&3
cd /
while IFS="$rp_ws" read -r rp_nonce rp_timeout rp_mode rp_tar <&4; do
    IFS= read -r rp_env <&4 || break
    IFS= read -r rp_cmdline <&4 || break
    eval "$rp_cmdline"
    rp_reap
    rp_r=$?
    rp_dirs='/tmp /dev/shm'
    if [ "$rp_mode" = stream ]; then
        rp_dirs='/tmp /dev/shm /work'
        head -c "$rp_tar" <&4 | rp_as /bin/sh -c \
            'umask 0; tar -xf - -C /work; rp_t=$?; cat >/dev/null; exit $rp_t' 3>&- 4<&-
        rp_t=$?
        if [ "$rp_t" != 0 ]; then
            rp_counters
            rp_as /bin/sh -c "$rp_userwipe" sh /work 3>&- 4<&-
            printf '%s E tar:%s:%s\n' "$rp_nonce" "$rp_t" "$rp_oom" >&3
            continue
        fi
    fi
    rp_counters
    rp_oom0=$rp_oom; rp_pids0=$rp_pids
    # Nothing is sent during a sample: input or its end means the client is gone.
    ( cat >/dev/null; kill -9 -1 ) <&4 >/dev/null 2>&1 3>&- 4<&- &
    : >"""
    + CONTROL
    + r"""/wd
    times >"""
    + CONTROL
    + r"""/times
    rp_times; rp_cu0=$rp_tu; rp_cs0=$rp_ts
    (
        echo 1000 >/proc/self/oom_score_adj 2>/dev/null
        cd /work || exit 126
        PATH=$rp_path
        eval "$rp_env"
        if [ "$rp_kind" = nsenter ]; then
            exec $rp_setsid "$rp_tool" -S "$rp_uid" -G "$rp_gid" \
                "$rp_envtool" "$@" /bin/sh -c "$rp_cmd"
        fi
        exec $rp_setsid "$rp_tool" --reuid="$rp_uid" --regid="$rp_gid" --clear-groups \
            "$rp_envtool" "$@" /bin/sh -c "$rp_cmd"
    ) </dev/null >"""
    + CONTROL
    + r"""/out 2>"""
    + CONTROL
    + r"""/err 3>&- 4<&- &
    rp_pid=$!
    (
        sleep "$rp_timeout"
        echo 1 >"""
    + CONTROL
    + r"""/wd
        kill -9 -"$rp_pid" 2>/dev/null || kill -9 "$rp_pid"
    ) </dev/null >/dev/null 2>&1 3>&- 4<&- &
    wait "$rp_pid"
    rp_rc=$?
    times >"""
    + CONTROL
    + r"""/times
    rp_times
    rp_reap
    rp_r2=$?
    [ "$rp_r2" = 0 ] || rp_r=$rp_r2
    rp_to=0
    [ -s """
    + CONTROL
    + r"""/wd ] && rp_to=1
    rp_counters
    rp_full /tmp /dev/shm /work """
    + CONTROL
    + r"""
    rp_w=0
    rp_wipe=
    for rp_dir in $rp_dirs; do
        if [ "$rp_dir" = /work ] || rp_dirty "$rp_dir"; then rp_wipe="$rp_wipe $rp_dir"; fi
    done
    if [ -n "$rp_wipe" ] || rp_ipcdirty; then
        rp_as /bin/sh -c "$rp_userwipe" sh $rp_wipe 3>&- 4<&-
        rp_w=$?
    fi
    rp_size """
    + CONTROL
    + r"""/out; rp_o=$rp_sz
    rp_size """
    + CONTROL
    + r"""/err; rp_e=$rp_sz
    rp_sent "$rp_o"; rp_on=$rp_n; rp_oc=$rp_cut
    rp_sent "$rp_e"; rp_en=$rp_n; rp_ec=$rp_cut
    printf '%s R %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s %s\n' "$rp_nonce" "$rp_rc" \
        "$rp_oom0" "$rp_oom" "$rp_pids0" "$rp_pids" "$rp_r" "$rp_w" "$rp_full" "$rp_to" \
        "$rp_on" "$rp_oc" "$rp_en" "$rp_ec" "$rp_cu0" "$rp_cs0" "$rp_tu" "$rp_ts" >&3
    { rp_send """
    + CONTROL
    + r"""/out "$rp_o"; rp_send """
    + CONTROL
    + r"""/err "$rp_e"; } >&3
    : >"""
    + CONTROL
    + r"""/out
    : >"""
    + CONTROL
    + r"""/err
done
exit 0
"""
)


def shell_quote(text: str) -> str:
    """``text`` as one POSIX-shell word on one line (newlines become ``"$rp_nl"``)."""
    quoted = "'" + text.replace("'", "'\\''") + "'"
    return quoted.replace("\n", "'\"$rp_nl\"'")
