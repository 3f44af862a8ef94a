"""docs/report-schema.md names every top-level and ``execution`` property of the shipped schema.

A property counts as documented when the page writes it as inline code, `` `name` ``; a new
schema field without its line in the page fails here, so the page stays complete.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "report-schema.md"
SCHEMA = ROOT / "src" / "repomin" / "report" / "report.schema.json"


def _properties(where: str) -> set[str]:
    schema: dict[str, Any] = json.loads(SCHEMA.read_text("utf-8"))
    node = schema if where == "top level" else schema["$defs"][where]
    return set(node["properties"])


def _inline_code() -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", DOC.read_text("utf-8")))


@pytest.mark.parametrize("where", ["top level", "execution"])
def test_every_schema_property_is_documented(where: str) -> None:
    props = _properties(where)
    assert len(props) > 10, "the schema lost its properties: the test would check nothing"
    missing = sorted(props - _inline_code())
    assert not missing, (
        f"docs/report-schema.md does not mention the {where} properties "
        + ", ".join(f"`{name}`" for name in missing)
    )
