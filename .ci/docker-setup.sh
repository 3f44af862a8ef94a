#!/bin/sh
# Give CI a real Docker engine and ReproMin's test images.
#
#   .ci/docker-setup.sh [--python]
#
# Installs Debian's docker.io and busybox-static (and debootstrap with --python) with apt-get,
# starts dockerd in the background (log: $REPOMIN_DOCKERD_LOG, default /var/log/dockerd.log),
# waits up to 60 s for `docker info`, then builds the test images with
# docker/build-test-images.sh. If the normal daemon configuration does not start, it retries
# without iptables/bridge and then with the vfs storage driver. With --python, when pip has a CA
# bundle configured (PIP_CERT or pip's global.cert; REPOMIN_BUILD_CA overrides), it also builds
# ReproMin's own image from docker/Dockerfile on repomin-test/python:1 with that bundle and
# pip's index (tag $REPOMIN_IMAGE, default repomin:ci; REPOMIN_BUILD_IMAGE=0 skips it).
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

# ReproMin's own image (docker/Dockerfile) on the local Python test image, built with the
# host's pip CA bundle and index when one is configured (a TLS-inspecting proxy or a private
# mirror); skipped with a note when there is none, when not asked for (--python) or when the
# build fails (the tests do not need this image).
pip_setting() {
    for py in "${VIRTUAL_ENV:-/nonexistent}/bin/python" python3; do
        value=$("$py" -m pip config get "$1" 2>/dev/null) && [ -n "$value" ] &&
            { printf '%s\n' "$value" | head -1; return 0; }
    done
    return 1
}

build_repomin_image() {
    image=${REPOMIN_IMAGE:-repomin:ci}
    ca=${REPOMIN_BUILD_CA:-${PIP_CERT:-$(pip_setting global.cert)}}
    if [ -z "$ca" ] || [ ! -r "$ca" ]; then
        echo "docker-setup: no CA bundle configured for pip; not building $image"
        return 0
    fi
    index=${PIP_INDEX_URL:-$(pip_setting global.index-url)}
    extra=${PIP_EXTRA_INDEX_URL:-$(pip_setting global.extra-index-url)}
    echo "docker-setup: building $image from $PYTHON_BASE with the CA bundle $ca"
    # A private build context: the bundle goes in as docker/ca.pem (too big for an argument),
    # and the checkout is left as it is.
    context=$(mktemp -d) || return 0
    log=$context.log
    cp -r "$here/pyproject.toml" "$here/README.md" "$here/src" "$here/docker" "$context/" &&
        cp "$ca" "$context/docker/ca.pem" || { rm -rf "$context"; return 0; }
    # shellcheck disable=SC2086
    if timeout "${REPOMIN_IMAGE_BUILD_TIMEOUT:-1200}" docker build -q --network host \
        -f "$context/docker/Dockerfile" -t "$image" --build-arg BASE="$PYTHON_BASE" \
        --build-arg INDEX_URL="$index" --build-arg EXTRA_INDEX_URL="$extra" \
        ${HTTPS_PROXY:+--build-arg HTTPS_PROXY="$HTTPS_PROXY"} \
        ${https_proxy:+--build-arg https_proxy="$https_proxy"} \
        ${HTTP_PROXY:+--build-arg HTTP_PROXY="$HTTP_PROXY"} \
        ${http_proxy:+--build-arg http_proxy="$http_proxy"} \
        "$context" >"$log" 2>&1 &&
        docker run --rm --network none "$image" --version; then
        echo "docker-setup: built $image"
    else
        tail -5 "$log" >&2
        echo "WARNING: docker-setup: building $image failed (log: $log); the tests do not need it" >&2
    fi
    rm -rf "$context"
}

PYTHON_BASE=${REPOMIN_PYTHON_IMAGE:-repomin-test/python:1}
if [ -n "$python_flag" ] && [ "${REPOMIN_BUILD_IMAGE:-1}" != 0 ] &&
    docker image inspect "$PYTHON_BASE" >/dev/null 2>&1; then
    build_repomin_image
fi
exit 0
