"""The process failure signature, on real exits of C programs and shells run in tmp_path."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from repomin.errors import UsageError
from repomin.failure.contract import FailureContract, FailureSpec
from repomin.failure.process import ProcessFailureMode, classify
from repomin.runners.base import Outcome

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "signatures" / "c" / "crash.c"
MODE = ProcessFailureMode()


def _no_core_dumps() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(workdir: Path, *argv: str) -> Outcome:
    proc = subprocess.run(
        list(argv),
        cwd=workdir,
        capture_output=True,
        timeout=30,
        preexec_fn=_no_core_dumps,
        check=False,
    )
    rc = proc.returncode
    return Outcome(
        exit_code=rc,
        stdout=proc.stdout,
        stderr=proc.stderr,
        signal=-rc if rc < 0 else None,
        workdir=str(workdir),
    )


def sh(workdir: Path, script: str) -> Outcome:
    return run(workdir, "sh", "-c", script)


def extract(outcome: Outcome) -> dict[str, Any]:
    sig = MODE.extract(outcome)
    assert sig is not None, outcome
    assert json.loads(json.dumps(sig)) == sig
    return sig


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The C fixture, compiled once per module."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not on PATH: the C crash fixtures (abort, segfault, exit 3) need it")
    binary = tmp_path_factory.mktemp("crash") / "crash"
    subprocess.run([gcc, "-O0", "-o", str(binary), str(FIXTURE)], check=True, capture_output=True)
    return binary


def test_abort_is_sigabrt(crash: Path) -> None:
    sig = extract(run(crash.parent, str(crash), "abort"))
    assert sig == {
        "kind": "signal",
        "exit_code": -6,
        "signal": 6,
        "signal_name": "SIGABRT",
        "windows_status": None,
    }


def test_segfault_is_sigsegv(crash: Path) -> None:
    sig = extract(run(crash.parent, str(crash), "segv"))
    assert (sig["kind"], sig["signal"], sig["signal_name"]) == ("signal", 11, "SIGSEGV")
    assert not MODE.matches(sig, extract(run(crash.parent, str(crash), "abort")))


def test_exit_code(crash: Path) -> None:
    sig = extract(run(crash.parent, str(crash), "exit3"))
    assert sig == {
        "kind": "exit_code",
        "exit_code": 3,
        "signal": None,
        "signal_name": None,
        "windows_status": None,
    }
    assert not MODE.matches(sig, extract(sh(crash.parent, "exit 4")))
    assert MODE.matches(sig, extract(sh(crash.parent, "exit 3")))
    assert MODE.extract(run(crash.parent, str(crash), "none")) is None


def test_a_signal_through_a_shell_matches_the_direct_one(crash: Path, tmp_path: Path) -> None:
    direct = extract(run(crash.parent, str(crash), "abort"))
    wrapped_outcome = sh(crash.parent, f"'{crash}' abort; exit $?")
    assert (wrapped_outcome.exit_code, wrapped_outcome.signal) == (134, None)
    wrapped = extract(wrapped_outcome)
    assert (wrapped["kind"], wrapped["signal_name"], wrapped["exit_code"]) == (
        "signal",
        "SIGABRT",
        134,
    )
    assert MODE.matches(direct, wrapped) and MODE.matches(wrapped, direct)
    assert not MODE.matches(direct, extract(sh(tmp_path, "exit 6")))


def test_shell_killing_itself(tmp_path: Path) -> None:
    own = sh(tmp_path, "kill -SEGV $$")
    assert own.exit_code == -11
    nested = sh(tmp_path, 'sh -c "kill -SEGV \\$\\$"; exit $?')
    assert nested.exit_code == 139
    own_sig, nested_sig = extract(own), extract(nested)
    assert own_sig["signal_name"] == nested_sig["signal_name"] == "SIGSEGV"
    assert MODE.matches(own_sig, nested_sig)
    script = tmp_path / "die.sh"
    script.write_text("#!/bin/sh\necho dying\nkill -SEGV $$\n")
    script.chmod(0o755)
    assert MODE.matches(own_sig, extract(run(tmp_path, str(script))))


def test_timeouts_and_exhaustion_never_have_a_signature(tmp_path: Path) -> None:
    killed = sh(tmp_path, "kill -KILL $$")
    assert extract(killed)["signal_name"] == "SIGKILL"
    assert MODE.extract(Outcome(exit_code=-9, signal=9, timed_out=True)) is None
    assert MODE.extract(Outcome(exit_code=137, resource_exhausted=True)) is None
    assert MODE.extract(Outcome(exit_code=None, infrastructure_error="daemon gone")) is None
    assert MODE.extract(Outcome(exit_code=0)) is None


def test_contract_pins_the_baseline_signal(crash: Path) -> None:
    baseline = [run(crash.parent, str(crash), "abort") for _ in range(2)]
    contract = FailureContract(FailureSpec(process_failure=True)).learn(baseline)
    assert contract.signature is not None and contract.signature["signal_name"] == "SIGABRT"
    assert contract.reproduces(sh(crash.parent, f"'{crash}' abort; exit $?"))
    assert not contract.reproduces(run(crash.parent, str(crash), "segv"))
    assert not contract.reproduces(run(crash.parent, str(crash), "exit3"))


def test_process_failure_cannot_be_combined_with_exit_code() -> None:
    with pytest.raises(UsageError, match="--exit-code"):
        FailureSpec(process_failure=True, exit_code=3)


# --- pasted statuses -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "name"),
    [
        (3221225477, "0xC0000005", "STATUS_ACCESS_VIOLATION"),
        (-1073741819, "0xC0000005", "STATUS_ACCESS_VIOLATION"),
        (0xC00000FD, "0xC00000FD", "STATUS_STACK_OVERFLOW"),
        (-1073740791, "0xC0000409", "STATUS_STACK_BUFFER_OVERRUN"),
        (0x80000003, "0x80000003", "STATUS_BREAKPOINT"),
        (0xC0150002, "0xC0150002", None),
    ],
)
def test_windows_status(code: int, status: str, name: str | None) -> None:
    sig = classify(code)
    assert sig is not None
    assert (sig["kind"], sig["windows_status"], sig["windows_status_name"]) == (
        "windows_status",
        status,
        name,
    )
    assert sig["exit_code"] == code and sig["signal"] is None


def test_windows_status_signed_and_unsigned_forms_match() -> None:
    unsigned, signed = classify(3221225477), classify(-1073741819)
    assert unsigned is not None and signed is not None
    assert MODE.matches(unsigned, signed) and MODE.matches(signed, unsigned)
    overflow = classify(0xC00000FD)
    assert overflow is not None and not MODE.matches(unsigned, overflow)


@pytest.mark.parametrize(
    ("code", "kind", "signal"),
    [
        (1, "exit_code", None),
        (127, "exit_code", None),
        (128, "exit_code", None),
        (129, "signal", 1),
        (159, "signal", 31),
        (160, "exit_code", None),
        (255, "exit_code", None),
        (-1, "signal", 1),
        (-64, "signal", 64),
        (4294967295, "exit_code", None),
        (1000, "exit_code", None),
    ],
)
def test_exit_status_classification(code: int, kind: str, signal: int | None) -> None:
    sig = classify(code)
    assert sig is not None
    assert (sig["kind"], sig["signal"], sig["exit_code"]) == (kind, signal, code)


def test_runner_reported_signal_wins() -> None:
    sig = classify(None, 9)
    assert sig is not None and (sig["signal_name"], sig["exit_code"]) == ("SIGKILL", -9)


def test_matching_by_number_when_a_name_is_missing() -> None:
    pinned = {"kind": "signal", "exit_code": -11, "signal": 11, "signal_name": None}
    assert MODE.matches(pinned, {"kind": "signal", "signal": 11, "signal_name": "SIGSEGV"})
    assert not MODE.matches(pinned, {"kind": "signal", "signal": 6, "signal_name": "SIGABRT"})
    assert not MODE.matches(pinned, {"kind": "exit_code", "exit_code": 139})
    assert not MODE.matches({"kind": "bogus"}, {"kind": "bogus"})
