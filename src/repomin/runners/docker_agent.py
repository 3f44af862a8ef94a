"""The client end of a worker's sample agent (see :mod:`repomin.runners.docker_agent_script`).

One :class:`AgentChannel` per worker container: the container's attached stdin carries requests,
its stdout (demultiplexed by a reader thread) carries responses. Requests on one channel are
strictly sequential -- the agent reads a request only after answering the previous one, which is
what lets it read with ordinary tools without over-reading. No engine API call happens per
sample: the round trip is one write and one read on an open connection.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docker.utils.socket import frames_iter

from repomin.runners.base import OUTPUT_LIMIT
from repomin.runners.docker_agent_script import AGENT_PROTOCOL, shell_quote
from repomin.runners.docker_engine import EngineFailure, close_socket, raw_socket
from repomin.runners.docker_script import TRUNCATION_MARK

#: Seconds a new agent has to say it is ready.
READY_TIMEOUT = 30.0
#: Seconds beyond the sample's timeout for the agent's own work (unpacking, reaping, output).
AGENT_GRACE = 60.0
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class AgentResult:
    """One answered request."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration: float
    timed_out: bool
    exhausted: bool
    healthy: bool
    cpu_seconds: float | None = None  # the command's, as the agent's shell measured it


def _count(text: str) -> int | None:
    return int(text) if text.isdigit() else None


_TIMES = re.compile(r"(\d+)m(\d+(?:\.\d*)?)s")


def _seconds(text: str) -> float | None:
    """``0m1.250000s`` (a shell's ``times``) in seconds."""
    match = _TIMES.fullmatch(text)
    return int(match[1]) * 60 + float(match[2]) if match else None


def _cpu(fields: list[str]) -> float | None:
    """The children's CPU time the agent gained while it waited for the sample: ``CU1 + CS1 -
    CU0 - CS0`` (see the protocol); ``None`` when a value is unreadable."""
    values = [_seconds(text) for text in fields]
    if any(v is None for v in values) or len(values) != 4:
        return None
    cu0, cs0, cu1, cs1 = (float(v or 0.0) for v in values)
    return round(max(0.0, cu1 + cs1 - cu0 - cs0), 6)


def _rose(before: str, after: str) -> bool:
    first, second = _count(before), _count(after)
    return first is not None and second is not None and second > first


class AgentChannel:
    """Requests to and answers from one agent. Used by one thread at a time (its slot's)."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self._buf = bytearray()
        self._cond = threading.Condition()
        self._eof = False
        self.error: BaseException | None = None
        self.kind = ""
        self._reader = threading.Thread(target=self._read, name="repomin-agent-read", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for stream, data in frames_iter(self.sock, tty=False):
                if stream == 1 and data:
                    with self._cond:
                        self._buf += data
                        self._cond.notify_all()
        except Exception as exc:  # the sample's thread decides what a lost stream means
            self.error = exc
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _take(self, deadline: float, *, line: bool = False, size: int = 0) -> bytes:
        with self._cond:
            while True:
                if line:
                    at = self._buf.find(b"\n")
                    if at >= 0:
                        out = bytes(self._buf[:at])
                        del self._buf[: at + 1]
                        return out
                elif len(self._buf) >= size:
                    out = bytes(self._buf[:size])
                    del self._buf[:size]
                    return out
                if self._eof:
                    reason = f": {self.error}" if self.error is not None else ""
                    raise EngineFailure(f"the sample agent's stream ended{reason}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise EngineFailure("the sample agent did not answer in time")
                self._cond.wait(left)

    def handshake(self) -> bool:
        """Wait for the agent's first line: ``True`` = ready, ``False`` = it cannot run here."""
        fields = (
            self._take(time.monotonic() + READY_TIMEOUT, line=True)
            .decode("ascii", "replace")
            .split()
        )
        if fields[:2] != ["repomin-agent", AGENT_PROTOCOL] or len(fields) < 4:
            raise EngineFailure(f"unexpected greeting from the sample agent: {fields!r}")
        self.kind = fields[3]
        return fields[2] == "ready"

    def run(
        self, command: str, env: Mapping[str, str], timeout: float, payload: bytes, mode: str
    ) -> AgentResult:
        """Send one request and wait for its answer (``EngineFailure`` when none comes)."""
        for name in env:
            if _NAME.fullmatch(name) is None:
                raise EngineFailure(f"environment name {name!r} cannot be passed to a shell")
        nonce = secrets.token_hex(8)
        words = " ".join(shell_quote(f"{name}={value}") for name, value in env.items())
        head = (
            f"{nonce} {max(timeout, 0.001):.3f} {mode} {len(payload)}\n"
            f"set -- {words}\n"
            f"rp_cmd={shell_quote(command)}\n"
        ).encode("utf-8", "surrogateescape")
        started = time.monotonic()
        self._send(head + payload)
        deadline = started + timeout + AGENT_GRACE
        fields = self._take(deadline, line=True).decode("ascii", "replace").split()
        duration = time.monotonic() - started
        if len(fields) >= 3 and fields[:2] == [nonce, "E"]:
            raise EngineFailure(
                f"could not unpack the tree in the container ({fields[2]}); the tree must fit "
                "into --work-size and --memory"
            )
        if len(fields) != 19 or fields[:2] != [nonce, "R"]:
            raise EngineFailure(f"the sample agent answered out of protocol: {fields[:3]!r}")
        stdout = self._stream(fields[11], fields[12], deadline)
        stderr = self._stream(fields[13], fields[14], deadline)
        timed_out = fields[10] == "1"
        full = fields[9] == "1"
        return AgentResult(
            exit_code=None if timed_out else _count(fields[2]),
            stdout=stdout,
            stderr=stderr,
            duration=duration,
            timed_out=timed_out,
            exhausted=_rose(fields[3], fields[4]) or _rose(fields[5], fields[6]) or full,
            healthy=fields[7] == "0" and fields[8] == "0",
            # A timed-out sample's group was killed at once: its orphans were reaped by the
            # container's init, so the agent's count would be short.
            cpu_seconds=None if timed_out else _cpu(fields[15:19]),
        )

    def _stream(self, size_text: str, cut: str, deadline: float) -> bytes:
        size = _count(size_text)
        if size is None:
            raise EngineFailure("the sample agent sent a malformed output size")
        data = self._take(deadline, size=size)
        if cut == "1":
            half = OUTPUT_LIMIT // 2
            return data[:half] + TRUNCATION_MARK + data[half:]
        return data

    def _send(self, data: bytes) -> None:
        sock = raw_socket(self.sock)
        if len(data) <= 65536:
            sock.sendall(data)
            return
        # A big tree: send from a helper so a stuck engine cannot block past the deadline.
        failure: list[BaseException] = []

        def send() -> None:
            try:
                sock.sendall(data)
            except BaseException as exc:  # reported below
                failure.append(exc)

        sender = threading.Thread(target=send, name="repomin-agent-send", daemon=True)
        sender.start()
        sender.join(AGENT_GRACE)
        if sender.is_alive() or failure:
            raise EngineFailure(f"could not send the tree to the agent: {failure or 'timeout'}")

    def close(self) -> None:
        close_socket(self.sock)
