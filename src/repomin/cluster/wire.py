"""What crosses the network between ReproMin's client and its workers: plain data, no pickle.

A message is :data:`MAGIC`, a 4-byte big-endian length, a JSON object (the *header*) and the
raw byte strings the header's ``parts`` list sizes (file contents one way, stdout and stderr
the other), so bytes travel without base64. Requests (client → worker) carry the tree digest,
a manifest delta, the blobs and the run request; answers (worker → client) are one of ``ok``
(an outcome), ``need`` (what the worker lacks), ``refused`` (its environment) or ``error``,
and a probe answer describes a worker at start. The client decodes answers itself and checks
every field's type and bound (:class:`WireError` otherwise): a worker's answer can only ever
become an :class:`~repomin.runners.base.Outcome`, never an object of the worker's choosing.
Everything here is pure (no Dask, no disk).
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from repomin.cluster import manifest as mf
from repomin.cluster.env import PROTOCOL
from repomin.runners.base import OUTPUT_LIMIT, Outcome, RunRequest, truncate

MAGIC = b"repomin-wire\n"
#: Largest answer header the client accepts (a ``need`` listing ~900,000 blob digests fits).
HEADER_LIMIT = 64 << 20
#: Largest stdout or stderr an answer may carry: the runners' bound plus room for their
#: truncation marker and the Docker agent's slack.
STREAM_LIMIT = OUTPUT_LIMIT + (64 << 10)
#: Longest text field of an answer (an error, an environment value, a description value).
TEXT_LIMIT = 4096
#: No bound (fields of a request, which comes from the client).
UNBOUNDED = 1 << 62

Status = Literal["ok", "need", "refused", "error"]
_STATUSES = ("ok", "need", "refused", "error")
_KINDS = ("file", "symlink", "dir")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_LEN = struct.Struct(">I")


class WireError(ValueError):
    """A message that is not what the protocol allows (the sender is broken or hostile)."""


# -- framing -------------------------------------------------------------------------------------


def pack(header: Mapping[str, Any], parts: Sequence[bytes] = ()) -> bytes:
    head = dict(header)
    head["parts"] = [len(p) for p in parts]
    text = json.dumps(head, separators=(",", ":"), allow_nan=False).encode()
    return b"".join([MAGIC, _LEN.pack(len(text)), text, *parts])


def unpack(
    message: object, limit: int, header_limit: int = HEADER_LIMIT
) -> tuple[dict[str, Any], list[bytes]]:
    """(header, parts) of a message of at most ``limit`` bytes (its header at most
    ``header_limit``), of this protocol."""
    if not isinstance(message, bytes | bytearray | memoryview):
        raise WireError(f"a message must be bytes, not {type(message).__name__}")
    data = bytes(message)
    if len(data) > limit:
        raise WireError(f"message of {len(data)} bytes exceeds {limit}")
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _LEN.size:
        raise WireError("not a ReproMin message")
    at = len(MAGIC)
    (size,) = _LEN.unpack_from(data, at)
    at += _LEN.size
    if size > header_limit or at + size > len(data):
        raise WireError("bad header length")
    try:
        header = json.loads(data[at : at + size], parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WireError(f"header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise WireError("header is not an object")
    at += size
    sizes = header.pop("parts", None)
    if not isinstance(sizes, list) or not all(_plain_int(n) and n >= 0 for n in sizes):
        raise WireError("bad parts list")
    if at + sum(sizes) != len(data):
        raise WireError("parts do not match the message length")
    parts: list[bytes] = []
    for n in sizes:
        parts.append(data[at : at + n])
        at += n
    if header.get("protocol") != PROTOCOL:
        raise WireError(f"protocol {header.get('protocol')!r}, expected {PROTOCOL}")
    return header, parts


def _plain_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


# -- field checks ----------------------------------------------------------------------------------


def _int(h: Mapping[str, Any], key: str) -> int:
    v = h.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise WireError(f"{key} must be an integer")
    return v


def _opt_int(h: Mapping[str, Any], key: str) -> int | None:
    return None if h.get(key) is None else _int(h, key)


def _num(h: Mapping[str, Any], key: str) -> float:
    v = h.get(key)
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
        raise WireError(f"{key} must be a finite number >= 0")
    return float(v)


def _opt_num(h: Mapping[str, Any], key: str) -> float | None:
    return None if h.get(key) is None else _num(h, key)


def _bool(h: Mapping[str, Any], key: str) -> bool:
    v = h.get(key)
    if not isinstance(v, bool):
        raise WireError(f"{key} must be true or false")
    return v


def _text(h: Mapping[str, Any], key: str, limit: int = TEXT_LIMIT) -> str:
    v = h.get(key)
    if not isinstance(v, str) or len(v) > limit:
        raise WireError(f"{key} must be a string of at most {limit} characters")
    return v


def _opt_text(h: Mapping[str, Any], key: str) -> str | None:
    return None if h.get(key) is None else _text(h, key)


def _strings(v: object, what: str, limit: int = TEXT_LIMIT, count: int = 256) -> dict[str, str]:
    if not isinstance(v, dict) or len(v) > count:
        raise WireError(f"{what} must be an object of at most {count} strings")
    for k, x in v.items():
        if not isinstance(x, str) or len(k) > limit or len(x) > limit:
            raise WireError(f"{what}.{k[:40]} must be a string")
    return dict(v)


Scalar = str | int | float | bool | None
Plain = Scalar | list[Scalar]


def _scalar(x: object) -> bool:
    return (
        x is None
        or isinstance(x, bool | int | float)
        or (isinstance(x, str) and len(x) <= TEXT_LIMIT)
    )


def _plain(v: object, what: str) -> dict[str, Plain]:
    """A flat object of scalars and lists of scalars (a runner's description, an outcome's
    extra fields)."""
    if not isinstance(v, dict) or len(v) > 64:
        raise WireError(f"{what} must be an object of at most 64 fields")
    for k, x in v.items():
        ok = _scalar(x) or (isinstance(x, list) and len(x) <= 64 and all(map(_scalar, x)))
        if not ok or len(k) > 200:
            raise WireError(f"{what}.{k[:40]} must be a string, number, boolean, null or list")
    return dict(v)


def _digest(v: object, what: str) -> str:
    if not isinstance(v, str) or not _HEX64.fullmatch(v):
        raise WireError(f"{what} must be a SHA-256 hex digest")
    return v


# -- requests (client -> worker) -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SampleRequest:
    """One sample as a worker reads it: the tree (a delta and the blobs it lacks) and the run."""

    digest: str
    delta: mf.Delta
    blobs: dict[str, bytes]
    request: RunRequest
    env_digest: str | None


def encode_request(r: SampleRequest) -> bytes:
    changed = [
        [path, kind, mode, mtime, ref.hex() if isinstance(ref, bytes) else ref]
        for path, (kind, mode, mtime, ref) in r.delta.changed.items()
    ]
    digests = sorted(r.blobs)
    header = {
        "protocol": PROTOCOL,
        "digest": r.digest,
        "env_digest": r.env_digest,
        "delta": {"base": r.delta.base, "removed": list(r.delta.removed), "changed": changed},
        "blobs": digests,
        "request": {
            "command": r.request.command,
            "env": dict(r.request.env),
            "timeout": r.request.timeout,
            "sample_id": r.request.sample_id,
        },
    }
    return pack(header, [r.blobs[d] for d in digests])


def decode_request(data: object) -> SampleRequest:
    """A request (WireError when malformed). File refs are digests; symlink and directory
    refs travel as hex of their bytes."""
    h, parts = unpack(data, UNBOUNDED, UNBOUNDED)
    digest = _digest(h.get("digest"), "digest")
    env_digest = h.get("env_digest")
    if env_digest is not None:
        env_digest = _digest(env_digest, "env_digest")
    d = h.get("delta")
    if not isinstance(d, dict):
        raise WireError("delta must be an object")
    base = d.get("base")
    if base is not None:
        base = _digest(base, "delta.base")
    removed = d.get("removed")
    if not isinstance(removed, list) or not all(isinstance(p, str) for p in removed):
        raise WireError("delta.removed must be a list of paths")
    rows = d.get("changed")
    if not isinstance(rows, list):
        raise WireError("delta.changed must be a list")
    changed: mf.Manifest = {}
    for row in rows:
        if not (isinstance(row, list) and len(row) == 5 and isinstance(row[0], str)):
            raise WireError("delta.changed rows are [path, kind, mode, mtime, ref]")
        path, kind, mode, mtime, ref = row
        if kind not in _KINDS or not _plain_int(mode) or not (mtime is None or _plain_int(mtime)):
            raise WireError(f"delta.changed {path[:80]!r}: bad kind, mode or mtime")
        if not isinstance(ref, str):
            raise WireError(f"delta.changed {path[:80]!r}: bad ref")
        if kind == "file":
            changed[path] = (kind, mode, mtime, _digest(ref, "file ref"))
        else:
            try:
                changed[path] = (kind, mode, mtime, bytes.fromhex(ref))
            except ValueError:
                raise WireError(f"delta.changed {path[:80]!r}: bad ref") from None
    names = h.get("blobs")
    if not isinstance(names, list) or len(names) != len(parts):
        raise WireError("blobs must name every part")
    blobs = {_digest(n, "blob"): p for n, p in zip(names, parts, strict=True)}
    q = h.get("request")
    if not isinstance(q, dict):
        raise WireError("request must be an object")
    request = RunRequest(
        # From the client, which the worker obeys anyway: types only, no tight bounds.
        command=_text(q, "command", UNBOUNDED),
        env=_strings(q.get("env"), "request.env", UNBOUNDED, UNBOUNDED),
        timeout=_num(q, "timeout"),
        sample_id=_text(q, "sample_id"),
    )
    return SampleRequest(
        digest, mf.Delta(base, tuple(removed), changed), blobs, request, env_digest
    )


# -- answers (worker -> client) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """A worker's answer to one request (see the module docstring)."""

    worker: str
    status: Status
    outcome: Outcome | None = None  # ok
    base: bool = False  # need: the delta's anchor is missing
    blobs: tuple[str, ...] = ()  # need: the blob digests missing
    env: dict[str, str] = field(default_factory=dict)  # refused: the worker's environment
    error: str = ""  # error


def _clip(value: Any) -> Any:
    """A text field cut to what the client accepts (an honest answer is never refused)."""
    if isinstance(value, str):
        return value[:TEXT_LIMIT]
    if isinstance(value, list):
        return [_clip(v) for v in value]
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    return value


def _stream(data: bytes) -> bytes:
    return data if len(data) <= STREAM_LIMIT else truncate(data, OUTPUT_LIMIT)


def encode_answer(a: Answer) -> bytes:
    header: dict[str, Any] = {"protocol": PROTOCOL, "worker": a.worker, "status": a.status}
    parts: list[bytes] = []
    if a.status == "ok":
        o = a.outcome
        assert o is not None
        header["outcome"] = {
            "exit_code": o.exit_code,
            "duration": o.duration,
            "timed_out": o.timed_out,
            "resource_exhausted": o.resource_exhausted,
            "signal": o.signal,
            "workdir": o.workdir,
            "infrastructure_error": _clip(o.infrastructure_error),
            "extra": _clip(dict(o.extra)),
            "cpu_seconds": o.cpu_seconds,
        }
        parts = [_stream(o.stdout), _stream(o.stderr)]
    elif a.status == "need":
        header["base"] = a.base
        header["blobs"] = list(a.blobs)
    elif a.status == "refused":
        header["env"] = _clip(a.env)
    else:
        header["error"] = a.error[:TEXT_LIMIT]
    return pack(header, parts)


def decode_answer(data: object) -> Answer:
    """A worker's answer, checked field by field (WireError when anything is off)."""
    h, parts = unpack(data, 2 * STREAM_LIMIT + HEADER_LIMIT)
    worker = _text(h, "worker")
    status = h.get("status")
    if status not in _STATUSES:
        raise WireError(f"unknown status {str(status)[:40]!r}")
    if status == "ok":
        o = h.get("outcome")
        if not isinstance(o, dict) or len(parts) != 2:
            raise WireError("an ok answer carries an outcome, stdout and stderr")
        if any(len(p) > STREAM_LIMIT for p in parts):
            raise WireError(f"stdout or stderr longer than {STREAM_LIMIT} bytes")
        outcome = Outcome(
            exit_code=_opt_int(o, "exit_code"),
            stdout=parts[0],
            stderr=parts[1],
            duration=_num(o, "duration"),
            timed_out=_bool(o, "timed_out"),
            resource_exhausted=_bool(o, "resource_exhausted"),
            signal=_opt_int(o, "signal"),
            workdir=_text(o, "workdir"),
            infrastructure_error=_opt_text(o, "infrastructure_error"),
            extra=_plain(o.get("extra"), "outcome.extra"),
            cpu_seconds=_opt_num(o, "cpu_seconds"),
        )
        return Answer(worker, "ok", outcome=outcome)
    if parts:
        raise WireError(f"a {status} answer carries no parts")
    if status == "need":
        blobs = h.get("blobs")
        if not isinstance(blobs, list):
            raise WireError("blobs must be a list")
        return Answer(
            worker,
            "need",
            base=_bool(h, "base"),
            blobs=tuple(_digest(b, "blob") for b in blobs),
        )
    if status == "refused":
        return Answer(worker, "refused", env=_strings(h.get("env"), "env"))
    return Answer(worker, "error", error=_text(h, "error"))


# -- probe answers (worker -> client, at start) --------------------------------------------------


@dataclass(frozen=True, slots=True)
class Probe:
    """What a worker reports before it gets samples."""

    address: str
    env: dict[str, str]
    describe: dict[str, Plain]
    nthreads: int


def encode_probe(p: Probe) -> bytes:
    return pack(
        {
            "protocol": PROTOCOL,
            "address": p.address,
            "env": _clip(p.env),
            "describe": _clip(p.describe),
            "nthreads": p.nthreads,
        }
    )


def decode_probe(data: object) -> Probe:
    h, parts = unpack(data, HEADER_LIMIT)
    if parts:
        raise WireError("a probe answer carries no parts")
    nthreads = _int(h, "nthreads")
    if not 1 <= nthreads <= 4096:
        raise WireError("nthreads must be in 1..4096")
    return Probe(
        address=_text(h, "address"),
        env=_strings(h.get("env"), "env"),
        describe=_plain(h.get("describe"), "describe"),
        nthreads=nthreads,
    )
