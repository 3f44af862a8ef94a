"""What a traced run writes back, read as hostile input: JSON records bounded in size and
count, never through a link or a FIFO; absolute paths mapped into the sample's tree."""

from __future__ import annotations

import json
import os
from pathlib import Path

from repomin.analysis.records import json_records, relative_to_roots


def test_json_records_are_bounded_regular_files(tmp_path: Path) -> None:
    for k in range(5):
        (tmp_path / f"{k}.json").write_text(json.dumps({"k": k}))
    (tmp_path / "big.json").write_text(json.dumps({"x": "a" * 200}))
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "other.txt").write_text("{}")
    os.symlink(tmp_path / "0.json", tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    records = json_records(tmp_path, max_bytes=100, max_count=100)
    assert records is not None
    assert sorted(r["k"] for r in records if isinstance(r, dict) and "k" in r) == [0, 1, 2, 3, 4]
    assert len(list(json_records(tmp_path, max_bytes=100, max_count=2) or [])) == 2
    assert json_records(tmp_path / "missing", 100, 10) is None
    (empty := tmp_path / "empty").mkdir()
    assert json_records(empty, 100, 10) is None


def test_relative_to_roots() -> None:
    roots = ["/s/tree", "/real/tree/"]
    assert relative_to_roots("/s/tree/a/b.py", roots) == "a/b.py"
    assert relative_to_roots("/s/tree/../tree/a.py", roots) == "a.py"
    assert relative_to_roots("/real/tree/x", roots) == "x"
    assert relative_to_roots("/s/tree", roots) == ""
    assert relative_to_roots("/s/treehouse/a.py", roots) is None
    assert relative_to_roots("/s/tree/../secret", roots) is None
