# Sourced by the RUN steps of docker/Dockerfile (POSIX sh): applies the CA bundle (the file
# docker/ca.pem of the build context, copied next to this script, and/or the CA_CERT build
# argument's PEM text) and the INDEX_URL and EXTRA_INDEX_URL build arguments to this step only.
#
# pip verifies TLS with its own CA bundle, not the system store, so the given CA is appended to
# pip's bundle (and to the system bundle when the image has one) in a build-only file that pip
# and requests use through PIP_CERT / REQUESTS_CA_BUNDLE. Nothing is written to the image's
# configuration: the final image verifies TLS as its base does.
repomin_given=${REPOMIN_BUILD_GIVEN:-/opt/repomin-build/ca.pem}
if [ -n "${CA_CERT:-}" ] || [ -s "$repomin_given" ]; then
    repomin_bundle=${REPOMIN_BUILD_BUNDLE:-/tmp/repomin-build-ca.pem}
    repomin_certifi=$(python3 -c 'import pip._vendor.certifi as c; print(c.where())' 2>/dev/null)
    {
        if [ -n "$repomin_certifi" ] && [ -r "$repomin_certifi" ]; then cat "$repomin_certifi"; fi
        if [ -r /etc/ssl/certs/ca-certificates.crt ]; then cat /etc/ssl/certs/ca-certificates.crt; fi
        if [ -s "$repomin_given" ]; then cat "$repomin_given"; fi
        if [ -n "${CA_CERT:-}" ]; then printf '%s\n' "$CA_CERT"; fi
    } >"$repomin_bundle"
    export PIP_CERT="$repomin_bundle" REQUESTS_CA_BUNDLE="$repomin_bundle"
fi
if [ -n "${INDEX_URL:-}" ]; then
    export PIP_INDEX_URL="$INDEX_URL"
fi
if [ -n "${EXTRA_INDEX_URL:-}" ]; then
    export PIP_EXTRA_INDEX_URL="$EXTRA_INDEX_URL"
fi
true
