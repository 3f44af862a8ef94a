"""Reading and writing report files: one shipped JSON Schema, atomic writes."""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = frozenset({1})


@cache
def load_schema() -> dict[str, Any]:
    """The report's JSON Schema as shipped in the package (the writer's and validator's)."""
    text = resources.files("repomin.report").joinpath("report.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def structural_errors(report: Any) -> list[str]:
    """JSON Schema violations, one line each (path: message)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = []
    for err in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        errors.append(f"schema: {where}: {err.message}")
    return errors


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to ``path`` via a temporary sibling and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=False, allow_nan=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
