"""``repomin report validate`` and ``repomin report replay`` (registered on import)."""

from __future__ import annotations
