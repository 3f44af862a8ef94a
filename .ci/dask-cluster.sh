#!/usr/bin/env bash
# Starts a real Dask cluster on 127.0.0.1 in the background -- `dask scheduler` and 3
# `dask worker`s, each with one thread and no nanny (so the recorded PIDs are all there is to
# stop; stop them with SIGKILL: a worker whose scheduler is gone waits on SIGTERM) -- for the
# tests marked `cluster`, and prints shell
# lines exporting its address (REPOMIN_TEST_CLUSTER) and the PIDs to stop
# (REPOMIN_TEST_CLUSTER_PIDS). The workers import ReproMin from this checkout (PYTHONPATH), so
# they may start before it is installed. Usage: eval "$(bash .ci/dask-cluster.sh)".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d "${TMPDIR:-/tmp}/repomin-ci-dask.XXXXXX")
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
dask=(python -m distributed.cli.dask_scheduler)
worker=(python -m distributed.cli.dask_worker)
"${dask[@]}" --host 127.0.0.1 --port 0 --no-dashboard --scheduler-file "$root/scheduler.json" \
    >"$root/scheduler.log" 2>&1 &
pids=($!)
for _ in $(seq 1 300); do
    [ -s "$root/scheduler.json" ] && break
    sleep 0.1
done
address=$(python -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' \
    "$root/scheduler.json")
for i in 1 2 3; do
    mkdir -p "$root/w$i"
    "${worker[@]}" "$address" --nthreads 1 --no-nanny --host 127.0.0.1 --no-dashboard --name "ci-w$i" \
        --local-directory "$root/w$i" >"$root/w$i/log" 2>&1 &
    pids+=($!)
done
python - "$address" <<'PY' >&2
import sys
from distributed import Client
with Client(sys.argv[1], timeout=60, set_as_default=False) as client:
    client.wait_for_workers(3, timeout=60)
print(f"Dask cluster at {sys.argv[1]} with 3 workers")
PY
echo "export REPOMIN_TEST_CLUSTER=$address"
echo "export REPOMIN_TEST_CLUSTER_PIDS='${pids[*]}'"
