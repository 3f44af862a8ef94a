"""Lithium's condition module: the benchmark's shared failure contract (``interesting.py``).

Lithium imports this file and calls ``interesting([CONTRACT.json, TESTCASE], temp_prefix)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import interesting as _contract


def interesting(cli_args: list[str], temp_prefix: str) -> bool:
    return _contract.main(["interesting.py", *cli_args]) == 0
