"""The failure specification and the contract the oracle applies to every sample.

``FailureSpec`` is exactly the report's ``failure_spec`` object. A signature mode (Python or
Java exception, process failure) and, by default, the failure's identity
(:mod:`repomin.failure.identity`) are *learnt once* from the baseline and then pinned: the
:class:`FailureContract` holds them and never replaces them. ``--match`` searches the output
without the source lines tools echo (:mod:`repomin.failure.echo`). Timeouts and resource
exhaustion never reproduce, whatever the spec says.

Owns ``FailureSpec`` and ``FailureContract``; the signature modes and their registry live in
:mod:`repomin.failure.signatures` (imported here, never the other way round).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from repomin.errors import SignatureError, UsageError
from repomin.failure.echo import counted_text
from repomin.failure.identity import IDENTITY_MODES, Identity, infer_identity
from repomin.failure.signatures import SIGNATURE_MODES, SignatureMode
from repomin.runners.base import Outcome

SIGNATURE_FLAGS = ("java_exception", "python_exception", "process_failure")

#: ``failure_spec.match_scope``: where ``--match`` looks. Reports written before the scope was
#: recorded searched the whole output, and replay keeps that for them.
MATCH_SCOPES = ("no_echoed_source", "whole_output")


@dataclass(frozen=True, slots=True)
class FailureSpec:
    """The report's ``failure_spec``: match, exit code and at most one signature mode."""

    match: str | None = None
    exit_code: int | None = None
    java_exception: bool = False
    python_exception: bool = False
    process_failure: bool = False
    identity: str = "auto"
    match_scope: str = "no_echoed_source"

    def __post_init__(self) -> None:
        if self.identity not in IDENTITY_MODES:
            raise UsageError(
                f"--identity {self.identity!r} is not one of {', '.join(IDENTITY_MODES)}"
            )
        if self.match_scope not in MATCH_SCOPES:
            raise UsageError(
                f"match scope {self.match_scope!r} is not one of {', '.join(MATCH_SCOPES)}"
            )
        modes = [flag for flag in SIGNATURE_FLAGS if getattr(self, flag)]
        if len(modes) > 1:
            raise UsageError(
                f"only one signature mode may be used, got {', '.join(modes)}: pick one of "
                "--python-exception, --java-exception, --process-failure"
            )
        if self.process_failure and self.exit_code is not None:
            raise UsageError(
                "--process-failure cannot be combined with --exit-code: the signature already "
                "pins the exit status; drop --exit-code"
            )
        if self.match is None and self.exit_code is None and not modes:
            raise UsageError(
                "no failure specified: pass --match REGEX, --exit-code N, or a signature mode "
                "(--python-exception, --java-exception, --process-failure)"
            )
        if self.match is not None:
            try:
                re.compile(self.match)
            except re.error as exc:
                raise UsageError(
                    f"invalid --match regular expression {self.match!r}: {exc}; "
                    "fix the pattern (Python re syntax)"
                ) from None

    @property
    def signature_flag(self) -> str | None:
        for flag in SIGNATURE_FLAGS:
            if getattr(self, flag):
                return flag
        return None

    @property
    def oracle_mode(self) -> str:
        """The privacy-safe enumerated mode used by summaries and comparisons."""
        flag = self.signature_flag
        if flag is not None:
            return flag
        if self.match is not None and self.exit_code is not None:
            return "match_and_exit_code"
        return "match" if self.match is not None else "exit_code"

    def to_json(self) -> dict[str, Any]:
        return {
            "match": self.match,
            "exit_code": self.exit_code,
            "java_exception": self.java_exception,
            "python_exception": self.python_exception,
            "process_failure": self.process_failure,
            "identity": self.identity,
            "match_scope": self.match_scope,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FailureSpec:
        """A recorded spec; one written before identity and match scope were recorded pinned
        no identity and searched the whole output, and is read so."""
        return cls(
            match=data.get("match"),
            exit_code=data.get("exit_code"),
            java_exception=bool(data.get("java_exception", False)),
            python_exception=bool(data.get("python_exception", False)),
            process_failure=bool(data.get("process_failure", False)),
            identity=str(data.get("identity", "off")),
            match_scope=str(data.get("match_scope", "whole_output")),
        )


def signature_mode_for(flag: str) -> SignatureMode:
    """The registered implementation of a signature flag."""
    try:
        return SIGNATURE_MODES[flag]
    except KeyError:
        raise UsageError(f"signature mode {flag!r} is not available in this build") from None


@dataclass(frozen=True)
class FailureContract:
    """A spec plus the pinned signature (when a signature mode is selected) and the pinned
    identity (``None`` until learnt, and always under ``--identity off``)."""

    spec: FailureSpec
    signature: dict[str, Any] | None = None
    identity: Identity | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_regex", re.compile(self.spec.match) if self.spec.match is not None else None
        )

    @property
    def mode(self) -> SignatureMode | None:
        flag = self.spec.signature_flag
        return signature_mode_for(flag) if flag else None

    def base_matches(self, outcome: Outcome) -> bool:
        """The regex and exit-code part of the contract (no signature)."""
        if outcome.timed_out or outcome.resource_exhausted or outcome.infrastructure_error:
            return False
        if self.spec.exit_code is not None and outcome.exit_code != self.spec.exit_code:
            return False
        regex: re.Pattern[str] | None = getattr(self, "_regex")  # noqa: B009
        return not (regex is not None and regex.search(self.searched_text(outcome)) is None)

    def searched_text(self, outcome: Outcome) -> str:
        """The text ``--match`` searches: the output, less echoed source unless the recorded
        scope is the whole output."""
        if self.spec.match_scope == "whole_output":
            return outcome.output
        return counted_text(outcome.output)

    def signature_matches(self, outcome: Outcome) -> bool:
        """The signature part of the contract (true when no signature mode is selected)."""
        mode = self.mode
        if mode is None:
            return True
        if self.signature is None:
            raise SignatureError("internal error: signature mode selected but nothing pinned")
        observed = mode.extract(outcome)
        return observed is not None and mode.matches(self.signature, observed)

    def reproduces(self, outcome: Outcome) -> bool:
        """Does this sample show *the* failure? Timeouts and exhaustion never do."""
        if not self.base_matches(outcome) or not self.signature_matches(outcome):
            return False
        return self.identity is None or self.identity.matches(outcome)

    def learn(self, outcomes: list[Outcome]) -> FailureContract:
        """Pin the signature (all reproducing baseline runs must agree) and then the identity
        (what every run that satisfies the rest of the contract shows)."""
        learnt = self._learn_signature(outcomes)
        if self.spec.identity != "auto":
            return learnt
        agreeing = [o for o in outcomes if learnt.base_matches(o) and learnt.signature_matches(o)]
        return replace(learnt, identity=infer_identity(agreeing))

    def _learn_signature(self, outcomes: list[Outcome]) -> FailureContract:
        mode = self.mode
        if mode is None:
            return self
        signatures: list[dict[str, Any]] = []
        for outcome in outcomes:
            if not self.base_matches(outcome):
                continue
            sig = mode.extract(outcome)
            if sig is not None:
                signatures.append(sig)
        if not signatures:
            raise SignatureError(
                f"--{mode.flag.replace('_', '-')}: no baseline run showed such a failure; check "
                "the command's output, or use --match/--exit-code instead"
            )
        first = signatures[0]
        for other in signatures[1:]:
            if not (mode.matches(first, other) and mode.matches(other, first)):
                raise SignatureError(
                    f"--{mode.flag.replace('_', '-')}: baseline runs disagree on the failure "
                    f"({_brief(first)} vs {_brief(other)}); make the failure deterministic in "
                    "kind, or narrow it with --match"
                )
        return FailureContract(self.spec, first, self.identity)


def _brief(sig: dict[str, Any]) -> str:
    keys = ("exception_class", "kind", "signal_name", "exit_code", "message")
    return " ".join(f"{k}={sig[k]!r}" for k in keys if k in sig)[:200]
