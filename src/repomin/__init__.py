"""ReproMin: shrink a repository to the smallest tree that still reproduces a failure.

The public surface is small on purpose: the CLI (``repomin``) is the product; the library
entry points below are what the CLI builds on and what tests drive in-process.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
