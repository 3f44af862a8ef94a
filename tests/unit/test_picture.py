"""The pictures beside REPOMIN.md (``repomin.report.picture``) and the size history they draw.

The pictures are checked as XML (parsed with ``xml.etree``): self-contained, and showing the
report's own numbers -- the first and last sizes as labels, every stage by name, and for a flaky
failure each sample's exact bounds equal to what ``repomin.sampling.stats.bounds`` computes.
The size history is checked on the real :class:`Ledger`, and the report's schema bounds it.
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.human import KeptFile, render_repomin_md
from repomin.report.io import structural_errors
from repomin.report.picture import (
    RATES_PICTURE,
    REDUCTION_PICTURE,
    is_flaky,
    picture_names,
    render_pictures,
)
from repomin.sampling.accounting import HISTORY_POINTS, HISTORY_STAGES, Ledger
from repomin.sampling.stats.bounds import lower_bound, upper_bound

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "v1.json"
SVG = "{http://www.w3.org/2000/svg}"

#: A size history consistent with the fixture's events and counts (104 oracle runs: baseline 5,
#: final 3 from run 95, holdout 6 from run 98).
HISTORY: dict[str, Any] = {
    "points": [
        {"runs": r, "seconds": t, "files": f, "bytes": b}
        for r, t, f, b in [
            (5, 0.07, 15, 316),
            (9, 0.38, 2, 160),
            (14, 0.64, 2, 88),
            (20, 0.77, 2, 78),
            (27, 0.97, 2, 69),
            (34, 1.07, 2, 66),
            (41, 1.1, 2, 36),
            (49, 1.26, 1, 36),
            (60, 1.39, 1, 34),
            (70, 1.51, 1, 33),
            (80, 1.71, 1, 28),
        ]
    ],
    "stages": [
        {"name": n, "runs": r, "seconds": t}
        for n, r, t in [
            ("baseline", 0, 0.001),
            ("trace", 5, 0.27),
            ("lines", 9, 0.39),
            ("files", 41, 1.104),
            ("tokens", 49, 1.26),
            ("final", 95, 1.715),
            ("holdout", 98, 1.74),
        ]
    ],
    "recorded_points": 11,
    "recorded_stages": 9,
}


def deterministic() -> dict[str, Any]:
    """The fixture report (every run reproduced) with a size history."""
    report: dict[str, Any] = json.loads(FIXTURE.read_text("utf-8"))
    report["size_history"] = copy.deepcopy(HISTORY)
    return report


def flaky() -> dict[str, Any]:
    """The same with rates below 1: baseline 7/10, final 31/50, 5 of 12 in the user's shell."""
    report = deterministic()
    report["execution"].update(baseline_passes=7, baseline_runs=10, final_passes=31)
    report["execution"]["final_runs"] = 50
    report["user_shell"] = {
        "status": "reproduced",
        "planned_runs": 12,
        "runs": 12,
        "reproduced": 5,
        "required": 1,
        "reason": "",
        "differences": [],
        "outcomes": ["reproduced"] * 5 + ["did not reproduce (exit 0)"] * 7,
    }
    return report


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def texts(root: ET.Element) -> list[str]:
    return [e.text or "" for e in root.iter(f"{SVG}text")]


def assert_self_contained(root: ET.Element) -> None:
    """No script, style sheet, foreign object, link or reference to anything outside."""
    for element in root.iter():
        tag = element.tag.removeprefix(SVG)
        assert tag not in ("script", "style", "foreignObject", "a", "image", "use"), tag
        for name, value in element.attrib.items():
            assert not name.startswith("on"), name
            assert "href" not in name, name
            assert "url(" not in value and "://" not in value, (name, value)


# -- the size of the tree ---------------------------------------------------------------------


def test_a_deterministic_report_gets_the_size_picture_only() -> None:
    report = deterministic()
    assert not is_flaky(report)
    pictures = render_pictures(report)
    assert list(pictures) == [REDUCTION_PICTURE]
    assert render_pictures(copy.deepcopy(report)) == pictures  # deterministic: the same bytes
    root = parse(pictures[REDUCTION_PICTURE])
    assert_self_contained(root)


def test_the_size_picture_labels_the_first_and_last_sizes_and_every_stage() -> None:
    report = deterministic()
    root = parse(render_pictures(report)[REDUCTION_PICTURE])
    shown = texts(root)
    src, out = report["source"], report["output"]
    assert (src["bytes"], out["bytes"]) == (316, 28)
    assert {"316 B", "28 B", "15 files", "1 file"} <= set(shown)
    assert "15 files / 316 B \u2192 1 file / 28 B in 104 oracle runs, 1.78 s" in shown
    for stage in ("baseline", "trace", "lines", "files", "tokens", "final", "holdout"):
        assert stage in shown, stage  # in the legend at least
    tips = [t.text for t in root.iter(f"{SVG}title")]
    assert "lines: runs 9\u201341, 0.390\u20131.104 s" in tips
    assert "holdout: runs 98\u2013104, 1.740\u20131.780 s" in tips


def test_the_size_picture_steps_once_per_recorded_change() -> None:
    report = deterministic()
    root = parse(render_pictures(report)[REDUCTION_PICTURE])
    paths = {p.get("stroke"): p.get("d") or "" for p in root.iter(f"{SVG}path")}
    assert len(paths) == 2  # bytes and files
    for d in paths.values():
        assert d.startswith("M92.00 ")  # the first run, at the axis
        assert d.count("V") == len(HISTORY["points"]) - 1
        assert d.endswith("H668.00")  # the last run, at the end of the axis


def test_a_report_without_a_size_history_gets_no_size_picture_and_no_link() -> None:
    legacy: dict[str, Any] = json.loads(FIXTURE.read_text("utf-8"))  # written before it existed
    assert picture_names(legacy) == []
    assert render_pictures(legacy) == {}
    assert "](" not in render_repomin_md(legacy, "out", [KeptFile("run.sh", 28)])


def test_repomin_md_links_exactly_the_pictures_written_beside_it() -> None:
    md = render_repomin_md(deterministic(), "out", [KeptFile("run.sh", 28)])
    assert re.findall(r"!\[[^\]]+\]\(([^)]+)\)", md) == [REDUCTION_PICTURE]
    md = render_repomin_md(flaky(), "out", [KeptFile("run.sh", 28)])
    assert re.findall(r"!\[[^\]]+\]\(([^)]+)\)", md) == [REDUCTION_PICTURE, RATES_PICTURE]
    assert list(render_pictures(flaky())) == [REDUCTION_PICTURE, RATES_PICTURE]


def test_text_from_the_report_is_escaped() -> None:
    report = deterministic()
    report["size_history"]["stages"][2]["name"] = "<script>alert(1)</script>\x07\u202e\udcff&"
    root = parse(render_pictures(report)[REDUCTION_PICTURE])  # still well-formed XML
    assert_self_contained(root)
    assert "<script>alert(1)</script>\ufffd\ufffd\ufffd&" in texts(root)  # text, not markup


# -- reproduction rates -----------------------------------------------------------------------


def test_a_flaky_report_gets_the_rates_with_the_stats_modules_exact_bounds() -> None:
    report = flaky()
    assert is_flaky(report)
    root = parse(render_pictures(report)[RATES_PICTURE])
    assert_self_contained(root)
    confidence = report["execution"]["confidence"]
    expected = {
        "baseline (original tree)": (7, 10, confidence),
        "final test (payload)": (31, 50, confidence),
        "your shell (payload)": (5, 12, confidence),
        "holdout (fresh runs)": (6, 6, report["holdout_certification"]["confidence"]),
    }
    scale = _rate_scale(root)
    intervals = {}
    for line in root.iter(f"{SVG}line"):
        tip = line.find(f"{SVG}title")
        if tip is None or tip.text is None:
            continue
        label = tip.text.split(":")[0]
        found = re.search(r"lower ([0-9.e-]+), upper ([0-9.e-]+)$", tip.text)
        assert found is not None, tip.text
        intervals[label] = (float(found[1]), float(found[2]))
        k, n, c = expected[label]
        assert f"{k} of {n} runs reproduced" in tip.text
        assert float(line.get("x1", "nan")) == pytest.approx(scale(lower_bound(k, n, c)), abs=0.01)
        assert float(line.get("x2", "nan")) == pytest.approx(scale(upper_bound(k, n, c)), abs=0.01)
    assert intervals == {
        label: (lower_bound(k, n, c), upper_bound(k, n, c)) for label, (k, n, c) in expected.items()
    }
    shown = texts(root)
    assert "7/10 = 70 %   [0.393, 0.913]" in shown
    assert "5/12 = 41.7 %   [0.181, 0.685]" in shown
    assert any(t.startswith("\u03b8 = 0.275") for t in shown)


def _rate_scale(root: ET.Element) -> Any:
    """The rate axis as drawn: from the positions of its "0 %" and "100 %" labels."""
    at = {e.text: float(e.get("x", "nan")) for e in root.iter(f"{SVG}text")}
    zero, one = at["0 %"], at["100 %"]
    return lambda p: zero + p * (one - zero)


def test_an_escalated_search_counts_as_flaky_even_when_every_sample_reproduced() -> None:
    report = deterministic()
    report["execution"]["sampling_policy_switches"] = 1
    assert is_flaky(report)
    assert RATES_PICTURE in render_pictures(report)


# -- the history in the report ----------------------------------------------------------------


def test_the_ledger_records_sizes_and_where_each_stage_began() -> None:
    ledger = Ledger()
    for _ in range(5):
        ledger.add_sample(None)
    ledger.event("baseline", "b", files=10, bytes=100, oracle_passes=5, oracle_runs=5)
    ledger.track_stage("files", 10, 100)  # the same size: no new point
    for _ in range(4):
        ledger.add_sample("files")
    ledger.track_size(4, 60)
    ledger.track_stage("lines", 4, 60)  # draws no run: dropped
    ledger.track_stage("tokens", 4, 60)
    ledger.add_sample("tokens")
    ledger.track_size(4, 55)
    for _ in range(3):
        ledger.add_sample(None)
    ledger.event("final", "f", files=4, bytes=55, oracle_passes=3, oracle_runs=3)
    history = ledger.size_history()
    assert history is not None
    points = [(p["runs"], p["files"], p["bytes"]) for p in history["points"]]
    assert points == [(5, 10, 100), (9, 4, 60), (10, 4, 55)]
    stages = [(s["name"], s["runs"]) for s in history["stages"]]
    assert stages == [("baseline", 0), ("files", 5), ("tokens", 9), ("final", 10)]
    assert (history["recorded_points"], history["recorded_stages"]) == (3, 5)


def test_final_runs_started_beside_the_search_do_not_move_a_stage_back() -> None:
    ledger = Ledger()
    ledger.track_stage("files", 3, 30)
    for _ in range(6):
        ledger.add_sample("files")  # say 4 of them were final runs started early
    ledger.event("final", "f", files=3, bytes=30, oracle_passes=5, oracle_runs=5)
    history = ledger.size_history()
    assert history is not None
    assert [(s["name"], s["runs"]) for s in history["stages"]] == [("files", 0), ("final", 1)]
    ledger.track_stage("lines", 3, 30)
    ledger.add_sample("lines")
    ledger.event("final", "f", files=3, bytes=30, oracle_passes=5, oracle_runs=5)  # all early
    history = ledger.size_history()
    assert history is not None
    stages = [(s["name"], s["runs"]) for s in history["stages"]]
    assert stages == [("files", 0), ("final", 1), ("final", 6)]  # clamped: lines drew none


def test_a_long_history_is_downsampled_to_its_bounds() -> None:
    ledger = Ledger()
    size = 10_000_000
    for step in range(3_000):
        ledger.track_stage(("files", "lines", "tokens")[step % 3], 100, size)
        for _ in range(1 + step % 5):
            ledger.add_sample("lines")
        size -= 1_000
        ledger.track_size(100, size)
    history = ledger.size_history()
    assert history is not None
    points, stages = history["points"], history["stages"]
    assert len(points) <= HISTORY_POINTS and len(stages) <= HISTORY_STAGES
    assert (history["recorded_points"], history["recorded_stages"]) == (3_001, 3_000)
    assert points[0]["bytes"] == 10_000_000 and points[-1]["bytes"] == size  # ends kept
    assert [p["runs"] for p in points] == sorted(p["runs"] for p in points)
    starts = [s["runs"] for s in stages]
    assert starts[0] == 0 and starts == sorted(starts)
    assert all(s["runs"] <= ledger.samples for s in stages)


def test_the_schema_takes_the_history_and_bounds_it() -> None:
    report = deterministic()
    assert structural_errors(report) == []
    report["size_history"]["points"] *= 30  # 330 points
    assert any("size_history/points" in e for e in structural_errors(report))
    report = deterministic()
    report["size_history"]["stages"][0]["name"] = "Not a name"
    assert any("size_history/stages/0/name" in e for e in structural_errors(report))


def test_validate_accepts_a_sidecar_holding_the_pictures(tmp_path: Path) -> None:
    side = tmp_path / "out.repomin"
    side.mkdir()
    report = deterministic()
    (side / "report.json").write_text(json.dumps(report), "utf-8")
    (side / "REPOMIN.md").write_text(render_repomin_md(report, "out", []), "utf-8")
    for name, svg in {**render_pictures(report), **render_pictures(flaky())}.items():
        (side / name).write_text(svg, "utf-8")
    result = CliRunner().invoke(cli, ["report", "validate", str(side)])
    assert result.exit_code == 0, result.output
