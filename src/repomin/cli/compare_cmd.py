"""``repomin report compare`` (registered on import)."""

from __future__ import annotations
