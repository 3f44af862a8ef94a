"""The benchmark suite: the generated cases (:mod:`cases`) followed by the real ones
(:mod:`real_cases`), in run order. Kept apart from both so that neither imports the other."""

from __future__ import annotations

from pathlib import Path

from cases import Case, generated_cases
from real_cases import real_cases


def all_cases(cache: Path) -> list[Case]:
    """Every case, in run order (quick cases first)."""
    return [*generated_cases(cache), *real_cases(cache)]
