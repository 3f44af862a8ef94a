"""Execution backends. A runner executes one sample: one command on a fresh copy of a tree."""

from __future__ import annotations

from repomin.runners.base import Outcome, Runner, RunRequest

__all__ = ["Outcome", "RunRequest", "Runner"]
