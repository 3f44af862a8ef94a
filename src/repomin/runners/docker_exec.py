"""Two ways to run one sample in a live worker: through its agent, or with one ``docker exec``.

``agent`` (the default) sends the request over the worker's attached stream
(:class:`~repomin.runners.docker_agent.AgentChannel`): no engine API call per sample.
``exec`` (images where the agent cannot switch to the sample user, or
``DockerRunner(strategy="exec")``) runs :data:`~repomin.runners.docker_script.SAMPLE_SCRIPT`
as the sample user in one exec; the client keeps the deadline and a second exec kills the
sample at the timeout.

Both return ``(outcome, healthy)``: an unhealthy worker (a sample it could not reap or wipe)
is recycled by the runner. Engine trouble raises :class:`EngineFailure` or an engine error.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

from repomin.runners.base import Outcome, RunRequest
from repomin.runners.docker_context import Engine, Worker
from repomin.runners.docker_engine import (
    ENGINE_ERRORS,
    IMPLICIT_ENVIRONMENT,
    KILL_GRACE,
    EngineFailure,
    Pump,
    engine_error,
    no_timeout,
)
from repomin.runners.docker_script import (
    REAP_SCRIPT,
    SAMPLE_SCRIPT,
    WORKDIR,
    assemble,
    increased,
    split_header,
    split_trailer,
)
from repomin.runners.docker_transport import wipe

log = logging.getLogger(__name__)


def _common(worker: Worker, stdout: bytes, stderr: bytes, duration: float) -> dict[str, Any]:
    return {
        "stdout": stdout,
        "stderr": stderr,
        "duration": duration,
        "workdir": WORKDIR,
        "extra": {"docker_container": worker.cid[:12]},
    }


def run_agent(worker: Worker, request: RunRequest, payload: bytes) -> tuple[Outcome, bool]:
    """One sample through the worker's agent."""
    assert worker.agent is not None
    mode = "bind" if worker.bind_dir is not None else "stream"
    env = {**IMPLICIT_ENVIRONMENT, **request.env}
    result = worker.agent.run(request.command, env, request.timeout, payload, mode)
    if result.healthy and worker.bind_dir is not None:
        wipe(worker.bind_dir)
    common = _common(worker, result.stdout, result.stderr, result.duration)
    if result.timed_out:
        return Outcome(exit_code=None, timed_out=True, **common), result.healthy
    outcome = Outcome(
        exit_code=result.exit_code,
        resource_exhausted=result.exhausted,
        cpu_seconds=result.cpu_seconds,
        **common,
    )
    return outcome, result.healthy


def run_exec(
    engine: Engine, worker: Worker, request: RunRequest, payload: bytes
) -> tuple[Outcome, bool]:
    """One sample in a live worker with one exec; the outcome and whether the worker is reusable."""
    lim = engine.limits
    api = engine.api
    nonce = secrets.token_hex(8)
    mode = "stream" if worker.bind_dir is None else "bind"
    argv = [str(lim.uid), nonce, mode, str(len(payload)), request.command]
    exec_id = api.exec_create(
        worker.cid,
        ["/bin/sh", "-c", SAMPLE_SCRIPT, "repomin", *argv],
        user=lim.user,
        environment={**IMPLICIT_ENVIRONMENT, **request.env},
        stdin=bool(payload),
        workdir="/",
    )["Id"]
    sock = api.exec_start(exec_id, socket=True)
    no_timeout(sock)
    pump = Pump(sock, payload)
    pump.start()
    if not pump.sent.wait(max(60.0, request.timeout)):
        raise EngineFailure("the engine did not accept the tree in time")
    started = time.monotonic()
    pump.join(request.timeout)
    timed_out = pump.is_alive()
    healthy = True
    if timed_out:
        healthy = kill_sample(engine, worker) is not None
        pump.join(KILL_GRACE)
        if pump.is_alive():
            raise EngineFailure("the engine did not end a timed-out sample")
    duration = time.monotonic() - started
    if pump.error is not None and not timed_out:
        raise EngineFailure(f"lost the sample's output stream: {engine_error(pump.error)}")

    script_status = None if timed_out else api.exec_inspect(exec_id).get("ExitCode")
    stdout = assemble(*pump.out.parts())
    head, tail = pump.err.parts()
    header, head = split_header(head, nonce)
    trailer = None
    # Only a script that finished wrote the trailer: a sample that printed a fake one and
    # then killed the script must not choose its own verdict.
    if script_status == 0 and tail is None:
        trailer, head = split_trailer(head, nonce)
    elif script_status == 0 and tail is not None:
        trailer, tail = split_trailer(tail, nonce)
    common = _common(worker, stdout, assemble(head, tail), duration)
    if timed_out:
        if healthy and worker.bind_dir is not None:
            wipe(worker.bind_dir)
        return Outcome(exit_code=None, timed_out=True, **common), healthy

    if trailer is not None and trailer.setup_error is not None:
        raise _setup_failure(trailer.setup_error)
    if trailer is None:
        # The script itself was killed: by the sample (kill -9 -1) or by the OOM killer.
        counters = kill_sample(engine, worker)
        if counters is None:
            raise EngineFailure("could not clean up after a sample that killed its runner")
        if script_status is None:
            raise EngineFailure("the engine lost the sample's exit status")
        oom, pids = counters
        exit_code, reaped, clean = int(script_status), True, True
    else:
        exit_code = trailer.exit_code if trailer.exit_code is not None else -1
        oom, pids = trailer.oom_kills, trailer.pids_max_events
        reaped, clean = trailer.reaped, trailer.clean
    exhausted = header is not None and (
        increased(header.oom_kills, oom) or increased(header.pids_max_events, pids)
    )
    healthy = reaped and clean
    if healthy and worker.bind_dir is not None:
        wipe(worker.bind_dir)
    return Outcome(exit_code=exit_code, resource_exhausted=exhausted, **common), healthy


def _setup_failure(error: str) -> EngineFailure:
    """Why the sample script could not prepare the sample (the worker is replaced)."""
    if error == "ipc":
        return EngineFailure(
            "an earlier sample left System V IPC objects that this image cannot remove (no "
            "ipcrm); the worker is replaced"
        )
    return EngineFailure(
        f"could not prepare the sample ({error}); the tree must fit into --work-size and --memory"
    )


def kill_sample(engine: Engine, worker: Worker) -> tuple[int | None, int | None] | None:
    """Kill every process of the sample's uid; the cgroup counters, or ``None`` on failure."""
    lim = engine.limits
    try:
        exec_id = engine.api.exec_create(
            worker.cid,
            ["/bin/sh", "-c", REAP_SCRIPT, "repomin", str(lim.uid)],
            user=lim.user,
            workdir="/",
        )["Id"]
        output = engine.api.exec_start(exec_id).decode("ascii", "replace").split()
    except ENGINE_ERRORS as exc:
        log.warning("could not kill a sample in %s: %s", worker.cid[:12], engine_error(exc))
        return None
    if len(output) != 3 or output[0] != "0":
        return None
    return _int_or_none(output[1]), _int_or_none(output[2])


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None
