"""The registry of signature modes: one instance per ``failure_spec`` flag."""

from __future__ import annotations

from repomin.failure.contract import SignatureMode
from repomin.failure.java_exc import JavaExceptionMode
from repomin.failure.process import ProcessFailureMode
from repomin.failure.python_exc import PythonExceptionMode

SIGNATURE_MODES: dict[str, SignatureMode] = {
    mode.flag: mode for mode in (PythonExceptionMode(), JavaExceptionMode(), ProcessFailureMode())
}
