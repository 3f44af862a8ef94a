"""Registry of signature modes (filled in by the signature modules)."""

from __future__ import annotations

from repomin.failure.contract import SignatureMode

SIGNATURE_MODES: dict[str, SignatureMode] = {}
