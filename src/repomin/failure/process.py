"""The process failure signature: how the process ended -- a signal, a Windows status, an exit code.

One exit status is read in exactly one way, in this order:

1. ``Outcome.signal`` set by the runner, or a return code in -64..-1 (``subprocess`` on POSIX)
   -> ``signal`` N.
2. A value that reads as an NTSTATUS warning or error when taken as an unsigned 32-bit number
   -- top byte 0x80 or 0xC0, e.g. ``3221225477`` or its signed form ``-1073741819`` =
   ``0xC0000005`` -> ``windows_status``. (``exit(-1)`` on Windows, 0xFFFFFFFF, is not one.)
3. 129..159, i.e. 128 + N for a standard signal N: how shells and container engines report a
   death by signal -> ``signal`` N. A program that itself calls ``exit(139)`` is
   indistinguishable and is read the same way.
4. Any other non-zero value -> ``exit_code``. Exit 0 is not a failure.

Matching compares the kind and then the one thing that identifies it: the signal (by name when
both sides have one, so ``-11`` on the host and ``139`` through ``sh -c`` both mean SIGSEGV), the
NTSTATUS, or the exact exit code.
"""

from __future__ import annotations

import signal as _signal
from typing import Any

from repomin.runners.base import Outcome

KIND_SIGNAL = "signal"
KIND_WINDOWS = "windows_status"
KIND_EXIT = "exit_code"

_SHELL_SIGNAL_BASE = 128
_SHELL_SIGNAL_MAX = 31
_HOST_SIGNAL_MAX = 64
_NTSTATUS_TOP_BYTES = (0x80, 0xC0)
_UINT32 = 0xFFFFFFFF

#: Names of common NTSTATUS failure codes (informative; matching uses the hex value).
NTSTATUS_NAMES = {
    0x80000003: "STATUS_BREAKPOINT",
    0xC0000005: "STATUS_ACCESS_VIOLATION",
    0xC000001D: "STATUS_ILLEGAL_INSTRUCTION",
    0xC0000094: "STATUS_INTEGER_DIVIDE_BY_ZERO",
    0xC00000FD: "STATUS_STACK_OVERFLOW",
    0xC0000135: "STATUS_DLL_NOT_FOUND",
    0xC000013A: "STATUS_CONTROL_C_EXIT",
    0xC0000374: "STATUS_HEAP_CORRUPTION",
    0xC0000409: "STATUS_STACK_BUFFER_OVERRUN",
}


def signal_name(number: int) -> str:
    """The platform's name for a signal number (``SIG<n>`` when it has none)."""
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def classify(exit_code: int | None, signal: int | None = None) -> dict[str, Any] | None:
    """The process signature of one exit status, or ``None`` for success / no status."""
    if signal is not None and signal > 0:
        return _signal_signature(exit_code if exit_code is not None else -signal, signal)
    if exit_code is None or exit_code == 0:
        return None
    if -_HOST_SIGNAL_MAX <= exit_code < 0:
        return _signal_signature(exit_code, -exit_code)
    unsigned = exit_code & _UINT32
    if -(2**31) <= exit_code <= _UINT32 and unsigned >> 24 in _NTSTATUS_TOP_BYTES:
        return {
            "kind": KIND_WINDOWS,
            "exit_code": exit_code,
            "signal": None,
            "signal_name": None,
            "windows_status": f"0x{unsigned:08X}",
            "windows_status_name": NTSTATUS_NAMES.get(unsigned),
        }
    if _SHELL_SIGNAL_BASE < exit_code <= _SHELL_SIGNAL_BASE + _SHELL_SIGNAL_MAX:
        return _signal_signature(exit_code, exit_code - _SHELL_SIGNAL_BASE)
    return {
        "kind": KIND_EXIT,
        "exit_code": exit_code,
        "signal": None,
        "signal_name": None,
        "windows_status": None,
    }


def _signal_signature(exit_code: int, number: int) -> dict[str, Any]:
    return {
        "kind": KIND_SIGNAL,
        "exit_code": exit_code,
        "signal": number,
        "signal_name": signal_name(number),
        "windows_status": None,
    }


class ProcessFailureMode:
    """``--process-failure``: see the module docstring for the classification rules."""

    flag: str = "process_failure"
    report_field: str = "process_failure_signature"

    def extract(self, outcome: Outcome) -> dict[str, Any] | None:
        if outcome.timed_out or outcome.resource_exhausted or outcome.infrastructure_error:
            return None
        return classify(outcome.exit_code, outcome.signal)

    def matches(self, pinned: dict[str, Any], observed: dict[str, Any]) -> bool:
        kind = pinned.get("kind")
        if kind != observed.get("kind"):
            return False
        if kind == KIND_SIGNAL:
            names = (pinned.get("signal_name"), observed.get("signal_name"))
            if all(isinstance(name, str) for name in names):
                return names[0] == names[1]
            return pinned.get("signal") == observed.get("signal")
        if kind == KIND_WINDOWS:
            return (
                str(pinned.get("windows_status")).upper()
                == str(observed.get("windows_status")).upper()
            )
        if kind == KIND_EXIT:
            return pinned.get("exit_code") == observed.get("exit_code")
        return False
