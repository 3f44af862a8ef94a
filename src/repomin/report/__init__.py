"""The report: ``OUTPUT.repomin/report.json``, its JSON Schema, and the tools that read it."""

from __future__ import annotations

from repomin.report.io import SCHEMA_VERSION, load_schema, write_json_atomic

__all__ = ["SCHEMA_VERSION", "load_schema", "write_json_atomic"]
