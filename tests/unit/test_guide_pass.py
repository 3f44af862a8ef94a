"""CONTRIBUTING.md's "Adding a pass", shown working: a pass written only against the guide
(``tests/unit/guide_pass.py``) is registered the way the guide says, and a real in-process
reduction (``repomin.app.reduce.execute``, the host runner, a real ``/bin/sh`` command on a tmp
tree) runs it with ``--jobs 1`` and ``--jobs 2``. Both reach the same payload, the pass's
accepted candidates show under its own name in the report's per-pass accounting, and the
report passes ``repomin report validate``'s checks.

The guide's one registration step is done here for the test only, with ``monkeypatch`` (undone
after each test): the line in ``repomin.passes.REGISTRY``. Nothing else names a pass: the
report schema takes any pass name (``test_every_registered_pass_name_fits_the_schema``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import repomin.passes
from repomin.app.reduce import ReduceOptions, execute
from repomin.cluster.wiring import ClusterConfig
from repomin.failure.contract import FailureSpec
from repomin.report.io import load_schema
from repomin.report.validate import validate_report
from tests.unit.guide_pass import DropText

#: The tree: the command reads ``need.txt`` (the largest ``.txt`` file, so the pass's first
#: candidate is rejected); four other ``.txt`` files are dead weight; ``data.csv`` is dead
#: too, but not the pass's business, so it must survive.
FILES = {
    "run.sh": "cat need.txt\n",
    "need.txt": "BUG: the root is missing\n" * 3,
    "notes/a.txt": "a" * 40,
    "notes/b.txt": "b" * 30,
    "c.txt": "c" * 20,
    "d.txt": "d" * 10,
    "data.csv": "x,y\n1,2\n",
}
JUNK = ["notes/a.txt", "notes/b.txt", "c.txt", "d.txt"]  # largest first


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guide's registration, for this test only."""
    monkeypatch.setitem(repomin.passes.REGISTRY, DropText.name, DropText)


def test_every_registered_pass_name_fits_the_schema() -> None:
    import re

    defs = load_schema()["$defs"]
    names = [*repomin.passes.REGISTRY, DropText.name, "baseline", "final", "export", "holdout"]
    for where in (defs["phase"]["properties"]["name"], defs["event"]["properties"]["phase"]):
        assert "enum" not in where
        assert all(re.fullmatch(where["pattern"], n) for n in names)
    assert not re.fullmatch(defs["phase"]["properties"]["name"]["pattern"], "Not A Name")


def reduce_with_guide_pass(
    root: Path, jobs: int, cluster: ClusterConfig | None = None
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A real reduction of :data:`FILES` with the guide pass alone (locally, or with the
    samples on a Dask cluster: ``tests/cluster/test_guide_pass_cluster.py``)."""
    src = root / "src"
    for rel, text in FILES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    options = ReduceOptions(
        src=src,
        output=root / "out",
        command="sh run.sh",
        spec=FailureSpec(match="BUG: the root"),
        schedule=(DropText.name,),
        jobs=jobs,
        cluster=cluster,
    )
    result = execute(options)  # the default runner factory: the host runner
    assert result.exit_code == 0
    out = root / "out"
    payload = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    return result.report, payload


def test_the_guide_pass_reduces_alike_with_one_and_two_jobs(
    registered: None, tmp_path: Path
) -> None:
    reports, payloads = {}, {}
    for jobs in (1, 2):
        (tmp_path / str(jobs)).mkdir()
        reports[jobs], payloads[jobs] = reduce_with_guide_pass(tmp_path / str(jobs), jobs)

    assert sorted(payloads[1]) == ["data.csv", "need.txt", "run.sh"]
    assert payloads[1] == payloads[2]
    content = [r["output"]["tree_content_sha256"] for r in reports.values()]
    assert content[0] == content[1]

    for jobs, report in reports.items():
        assert report["execution"]["jobs"] == jobs
        phases = {p["name"]: p for p in report["phase_statistics"]["phases"]}
        assert set(phases) == {DropText.name}, phases
        own = phases[DropText.name]
        assert own["accepted"] == len(JUNK), own
        assert own["files_removed"] == len(JUNK)
        assert own["bytes_removed"] == sum(len(FILES[p]) for p in JUNK)
        assert own["rejected"] >= 1  # need.txt, proposed first, is refused
        assert report["accepted_mutations"] == len(JUNK)
        accepted = [
            e for e in report["events"] if e["decision"] == "accepted" and e["phase"] != "final"
        ]
        assert {e["phase"] for e in accepted} == {DropText.name}
        assert accepted[-1]["files"] == len(FILES) - len(JUNK)
        if jobs == 1:  # one candidate at a time: one event per file, the largest first
            assert [e["description"] for e in accepted] == [f"delete {p}" for p in JUNK]
        # with two slots the search layer may fold a round's accepted candidates into one
        # event ("fold of 4 candidates: ..."); the pass's accounting above counts each
        checked = validate_report(report, payload=tmp_path / str(jobs) / "out")
        assert checked.valid, checked.problems
        assert checked.payload_fingerprint_mode == "exact"


def test_without_registration_the_schedule_is_refused(tmp_path: Path) -> None:
    """The guide's REGISTRY line is what makes a pass schedulable (``--passes``)."""
    from repomin.errors import UsageError

    with pytest.raises(UsageError, match="unknown pass 'droptext'"):
        ReduceOptions(
            src=tmp_path,
            output=tmp_path / "out",
            command="true",
            spec=FailureSpec(match="x"),
            schedule=(DropText.name,),
        )
