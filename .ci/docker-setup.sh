#!/bin/sh
# Give CI a real Docker engine and ReproMin's test images.
#
#   .ci/docker-setup.sh [--python]
#
# Installs Debian's docker.io and busybox-static (and debootstrap with --python) with apt-get,
# starts dockerd in the background (log: $REPOMIN_DOCKERD_LOG, default /var/log/dockerd.log),
# waits up to 60 s for `docker info`, then builds the test images with
# docker/build-test-images.sh. If the normal daemon configuration does not start, it retries
# without iptables/bridge and then with the vfs storage driver.
#
# Idempotent: an engine that already answers is reused, present images are kept.
# Never fails the build: when no engine can be started it prints a WARNING and exits 0, so the
# Docker tests skip with a visible reason instead.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
log=${REPOMIN_DOCKERD_LOG:-/var/log/dockerd.log}
python_flag=
if [ "${1:-}" = --python ] || [ "${REPOMIN_DOCKER_PYTHON:-0}" = 1 ]; then
    python_flag=--python
fi

warn() {
    echo "WARNING: docker-setup: $*; the Docker tests will be skipped" >&2
    exit 0
}

as_root() {
    if [ "$(id -u)" = 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -n "$@"
    else
        return 1
    fi
}

engine_up() { docker info >/dev/null 2>&1; }

wait_engine() {
    i=0
    while [ "$i" -lt "$1" ]; do
        engine_up && return 0
        if [ -n "${dockerd_pid:-}" ] && ! kill -0 "$dockerd_pid" 2>/dev/null; then
            return 1
        fi
        sleep 1
        i=$((i + 1))
    done
    return 1
}

install_packages() {
    missing=
    command -v dockerd >/dev/null 2>&1 || missing="$missing docker.io"
    [ -x /bin/busybox ] || missing="$missing busybox-static"
    if [ -n "$python_flag" ] && ! command -v debootstrap >/dev/null 2>&1; then
        missing="$missing debootstrap"
    fi
    [ -z "$missing" ] && return 0
    command -v apt-get >/dev/null 2>&1 || warn "apt-get not found; install$missing by hand"
    echo "docker-setup: installing$missing"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null ||
        warn "apt-get update failed"
    # shellcheck disable=SC2086
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null ||
        warn "apt-get install$missing failed"
}

start_dockerd() {
    echo "docker-setup: starting dockerd $* (log: $log)"
    as_root sh -c 'nohup dockerd "$@" >>"$0" 2>&1 & echo $!' "$log" "$@" >"$log.pid" ||
        return 1
    dockerd_pid=$(cat "$log.pid")
    if wait_engine 60; then
        return 0
    fi
    tail -5 "$log" >&2
    as_root kill "$dockerd_pid" 2>/dev/null
    sleep 2
    dockerd_pid=
    return 1
}

if engine_up; then
    echo "docker-setup: reusing the running engine"
else
    install_packages
    command -v dockerd >/dev/null 2>&1 || warn "dockerd is not installed"
    as_root true || warn "starting dockerd needs root (or passwordless sudo)"
    start_dockerd ||
        start_dockerd --iptables=false --bridge=none ||
        start_dockerd --iptables=false --bridge=none --storage-driver=vfs ||
        warn "dockerd did not come up (waited up to 60 s per configuration; see $log)"
fi
install_packages
docker info --format 'docker-setup: engine {{.ServerVersion}}, {{.Driver}}, cgroup v{{.CgroupVersion}}' ||
    true
"$here/docker/build-test-images.sh" $python_flag || warn "building the test images failed"
