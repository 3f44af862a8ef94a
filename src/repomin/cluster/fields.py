"""The report's cluster dispatch fields and their cross-field rule (``execution.cluster``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The fields of a cluster dispatch (docs/cluster.md); all present when ``dispatch_engine`` is.
CLUSTER_FIELDS = (
    "cluster_workers",
    "cluster_threads",
    "cluster_scheduler_sha256",
    "cluster_mixed_workers_allowed",
    "cluster_environments",
)


def cluster_problems(ex: Mapping[str, Any]) -> list[str]:
    """Rule ``execution.cluster``: what is wrong with a report's dispatch fields."""
    present = [f for f in CLUSTER_FIELDS if f in ex]
    if "dispatch_engine" not in ex:
        return [f"{present[0]} is recorded without dispatch_engine"] if present else []
    missing = [f for f in CLUSTER_FIELDS if f not in ex]
    if missing:
        return [f"dispatch_engine is recorded without {', '.join(missing)}"]
    if ex["cluster_environments"] > 1 and ex["cluster_mixed_workers_allowed"] is not True:
        return [
            f"{ex['cluster_environments']} worker environments but "
            "cluster_mixed_workers_allowed is not true"
        ]
    return []
