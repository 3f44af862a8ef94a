"""``python -m repomin``: the same entry point as the ``repomin`` command."""

from __future__ import annotations

from repomin.cli.main import main

main()
