"""A tiny calculator package (the ReproMin bundled example)."""

from calc.registry import REGISTRY, register

__all__ = ["REGISTRY", "register"]
