"""Failure contracts: when does a sample count as reproducing the failure."""

from __future__ import annotations

from repomin.failure.contract import FailureContract, FailureSpec
from repomin.failure.signatures import SignatureMode

__all__ = ["FailureContract", "FailureSpec", "SignatureMode"]
