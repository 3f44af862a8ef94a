#!/bin/sh
# Build ReproMin's Docker test images locally, without any registry.
#
#   repomin-test/busybox:1  imported from Debian's busybox-static (always; ~2 MB, seconds)
#   repomin-test/noshell:1  the same binary without /bin/sh or applet links (an image with no
#                           shell, for --fresh-container tests; always, it costs nothing)
#   repomin-test/python:1   imported from a debootstrap --variant=minbase root with python3
#                           (only with --python; about a minute, ~160 MB)
#
# Idempotent: an image that already exists is left alone unless --force is given.
# Needs: a running Docker engine, /bin/busybox (apt-get install busybox-static) and, for
# --python, debootstrap (apt-get install debootstrap) and root.
set -eu

BUSYBOX_IMAGE=${REPOMIN_BUSYBOX_IMAGE:-repomin-test/busybox:1}
NOSHELL_IMAGE=${REPOMIN_NOSHELL_IMAGE:-repomin-test/noshell:1}
PYTHON_IMAGE=${REPOMIN_PYTHON_IMAGE:-repomin-test/python:1}
SUITE=${REPOMIN_DEBIAN_SUITE:-bookworm}
want_python=0
force=0
for arg in "$@"; do
    case "$arg" in
        --python) want_python=1 ;;
        --force) force=1 ;;
        -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "build-test-images: unknown option $arg" >&2; exit 2 ;;
    esac
done

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/repomin-images.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# Shared skeleton: a non-root user, mount points and a sticky /tmp.
skeleton() {
    root=$1
    mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/work" "$root/proc" "$root/sys" "$root/dev"
    chmod 1777 "$root/tmp"
    if [ ! -e "$root/etc/passwd" ]; then
        printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
            >"$root/etc/passwd"
        printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
    fi
}

build_busybox() {
    if have_image "$BUSYBOX_IMAGE" && [ "$force" = 0 ]; then
        echo "build-test-images: $BUSYBOX_IMAGE already present"
        return
    fi
    busybox=$(command -v busybox || true)
    if [ -z "$busybox" ] || ! "$busybox" --list >/dev/null 2>&1; then
        echo "build-test-images: busybox not found; run: apt-get install -y busybox-static" >&2
        exit 1
    fi
    if ldd "$busybox" >/dev/null 2>&1; then
        echo "build-test-images: $busybox is dynamically linked; install busybox-static" >&2
        exit 1
    fi
    root="$work/busybox"
    skeleton "$root"
    cp "$busybox" "$root/bin/busybox"
    for applet in $("$busybox" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    mkdir -p "$root/usr"
    ln -s ../bin "$root/usr/bin"
    ln -s bin "$root/sbin"
    tar -C "$root" --numeric-owner -c . | docker import \
        --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
        --change 'CMD ["/bin/sh"]' - "$BUSYBOX_IMAGE" >/dev/null
    echo "build-test-images: built $BUSYBOX_IMAGE"
}

build_noshell() {
    if have_image "$NOSHELL_IMAGE" && [ "$force" = 0 ]; then
        echo "build-test-images: $NOSHELL_IMAGE already present"
        return
    fi
    root="$work/noshell"
    skeleton "$root"
    cp "$(command -v busybox)" "$root/bin/busybox"
    tar -C "$root" --numeric-owner -c . | docker import \
        --change 'ENV PATH=/bin' --change 'CMD ["busybox"]' - "$NOSHELL_IMAGE" >/dev/null
    echo "build-test-images: built $NOSHELL_IMAGE"
}

build_python() {
    if have_image "$PYTHON_IMAGE" && [ "$force" = 0 ]; then
        echo "build-test-images: $PYTHON_IMAGE already present"
        return
    fi
    if ! command -v debootstrap >/dev/null 2>&1; then
        echo "build-test-images: debootstrap not found; run: apt-get install -y debootstrap" >&2
        exit 1
    fi
    root="$work/python"
    debootstrap --variant=minbase --include=python3 "$SUITE" "$root" >"$work/debootstrap.log" 2>&1 || {
        tail -20 "$work/debootstrap.log" >&2
        echo "build-test-images: debootstrap of $SUITE failed" >&2
        exit 1
    }
    rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
    skeleton "$root"
    tar -C "$root" --numeric-owner -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/sh"]' - "$PYTHON_IMAGE" >/dev/null
    echo "build-test-images: built $PYTHON_IMAGE"
}

build_busybox
build_noshell
if [ "$want_python" = 1 ]; then
    build_python
fi
