"""The human summary (terminal and REPOMIN.md): content derived from the report, commands that
run from where they say."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from repomin.report.human import (
    KeptFile,
    evidence_sentence,
    files_of_tree,
    files_on_disk,
    removals,
    render_repomin_md,
    render_terminal,
    size_text,
)
from repomin.tree import Entry, Tree

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "v1.json"


def report() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def test_removals_per_pass_in_schedule_order() -> None:
    lines = removals(report())
    assert lines[0] == "trace: 13 files, 156 B in 4 runs"
    assert lines[1] == "files: 1 file, 0 B in 12 runs"
    assert not any(line.startswith("normalise") for line in lines)  # no runs, nothing removed


def test_evidence_sentence_counts_from_the_report() -> None:
    assert evidence_sentence(report()) == (
        "The failure (output matching `FATAL: widget overflow`) reproduced in 5/5 runs of the "
        "original tree and in 3/3 fresh runs of the payload, and the exact one-sided test of a "
        "reproduction rate above 0.275 at confidence 0.95 passed; the holdout (6/6 fresh runs, "
        "never used by the search) certified p >= 0.5."
    )
    failed = report()
    failed["execution"]["final_validation_passed"] = False
    failed["holdout_certification"] = {"status": "not_requested"}
    assert "0.95 failed; no holdout was requested." in evidence_sentence(failed)


def test_kept_files_from_tree_and_disk_agree(tmp_path: Path) -> None:
    tree = Tree.of(
        {
            "a.txt": Entry("file", b"12345"),
            "d": Entry("dir"),
            "d/b.py": Entry("file", b"x" * 1200),
            "link": Entry("symlink", b"a.txt"),
        }
    )
    (tmp_path / "d").mkdir()
    (tmp_path / "a.txt").write_bytes(b"12345")
    (tmp_path / "d" / "b.py").write_bytes(b"x" * 1200)
    (tmp_path / "link").symlink_to("a.txt")
    expected = [KeptFile("d/b.py", 1200), KeptFile("a.txt", 5), KeptFile("link", 0, True)]
    assert files_of_tree(tree) == expected
    assert files_on_disk(tmp_path) == expected
    assert [size_text(n) for n in (5, 1200, 2_500_000)] == ["5 B", "1.2 kB", "2.5 MB"]


def _block_after(text: str, heading: str) -> str:
    match = re.search(re.escape(heading) + r".*?```sh\n(.*?)\n```", text, re.S)
    assert match, heading
    return match.group(1)


def test_repomin_md_commands_run_from_the_stated_directory(tmp_path: Path) -> None:
    rep = copy.deepcopy(report())
    rep["command"] = 'cat input.txt; echo "home=$HOME" >&2; test ! -e ../input.txt'
    rep["execution"]["environment_names"] = []
    parent = tmp_path / "work dir"
    payload = parent / "min out"
    payload.mkdir(parents=True)
    (payload / "input.txt").write_text("FATAL: widget overflow\n")
    md = render_repomin_md(rep, payload.name, files_on_disk(payload))
    assert "`min out/` holds 1 file (28 B)" in md
    assert "input.txt  23 B" in md
    assert "- trace: 13 files, 156 B in 4 runs" in md
    assert "parent of the directory this file is in" in md
    replay = _block_after(md, "Replay the failure")
    assert replay == "repomin report replay 'min out.repomin/report.json' --payload 'min out' --yes"
    by_hand = _block_after(md, "in the environment a sample gets")
    done = subprocess.run(
        ["sh", "-c", by_hand], cwd=parent, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "FATAL: widget overflow\n"
    assert "home=/" in done.stderr and str(payload) not in done.stderr
    assert f"home={os.environ.get('HOME')}\n" not in done.stderr  # a fresh HOME
    own = _block_after(md, "in your own shell")
    mine = subprocess.run(["sh", "-c", own], cwd=parent, capture_output=True, text=True, timeout=30)
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout == "FATAL: widget overflow\n"
    assert f"home={os.environ.get('HOME')}\n" in mine.stderr  # the reader's own HOME
    assert sorted(p.name for p in payload.iterdir()) == ["input.txt"]  # run on a copy


def test_repomin_md_names_env_values_to_fill_in() -> None:
    md = render_repomin_md(report(), "out", [KeptFile("run.sh", 28)])
    assert "(fill in the `--env` values)" in md
    assert "REPOMIN_FIXTURE_TOKEN=\"...\" sh -c 'sh run.sh'" in md


def test_terminal_summary_paths_absolute_and_consistent(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    files = [KeptFile(f"f{i}.txt", 100 - i) for i in range(25)]
    lines = render_terminal(report(), Path("out"), Path("out.repomin/report.json"), files)
    text = "\n".join(lines)
    assert f"repomin: payload: {tmp_path / 'out'}" in lines
    assert f"repomin: report:  {tmp_path / 'out.repomin' / 'report.json'}" in lines
    assert (
        f"repomin: replay:  repomin report replay {tmp_path}/out.repomin/report.json "
        f"--payload {tmp_path}/out --env REPOMIN_FIXTURE_TOKEN --yes"
    ) in lines
    assert "  f19.txt  81 B" in lines and "f20.txt" not in text
    assert "  ... and 5 more files (390 B)" in lines
    assert lines[0] == (
        "repomin: 15 files / 316 B -> 1 file / 28 B in 104 runs "
        f"({report()['accepted_mutations']} accepted mutations, "
        f"{report()['cache_hits']} cache hits)"
    )


def _slipped(final: tuple[int, int], keep: bool = False) -> dict[str, Any]:
    from repomin.sampling.rate_guard import KeepRate, slippage_record
    from repomin.sampling.verdict import Baseline

    base = Baseline(10, 20, 0.3, 0.7, 1, 0, ())
    guard = KeepRate(base, 0.05, lambda _t: True) if keep else None
    rep = report()
    rep["slippage"] = slippage_record(base, final, {"status": "not_requested"}, 0.05, guard)
    return rep


def test_slippage_warning_with_the_exact_p_value(tmp_path: Path) -> None:
    from math import comb

    rep = _slipped((20, 20))
    # Fisher, table [[20, 0], [10, 10]]: P(X >= 20), X ~ Hypergeom(40 runs, 30 passes, 20 drawn)
    p_two_sided = 2 * comb(30, 20) / comb(40, 20)
    assert abs(rep["slippage"]["final"]["p_value"] - p_two_sided) < 1e-12
    assert rep["slippage"]["direction"] == "higher" and rep["slippage"]["holdout"] is None
    lines = render_terminal(rep, tmp_path / "out", tmp_path / "out.repomin/report.json", [])
    warning = next(line for line in lines if line.startswith("repomin: warning: slippage:"))
    assert "20/20 against the baseline's 10/20 (Fisher exact test, two-sided p = " in warning
    assert f"{p_two_sided:.2g} <= 0.05)" in warning and "--keep-rate" in warning
    md = render_repomin_md(rep, "out", [])
    assert "## Slippage" in md and "**Warning:** the final runs reproduced 20/20" in md


def test_no_slippage_no_warning_and_keep_rate_line(tmp_path: Path) -> None:
    rep = _slipped((11, 20), keep=True)
    assert rep["slippage"]["direction"] == "none" and rep["slippage"]["advice"] == ""
    lines = render_terminal(rep, tmp_path / "out", tmp_path / "out.repomin/report.json", [])
    assert not any("warning: slippage" in line for line in lines)
    assert (
        "repomin: --keep-rate: 0 accepted candidates got 20 fresh runs each; 0 rejected for a "
        "rate significantly above the baseline's"
    ) in lines
    assert "## Slippage" in render_repomin_md(rep, "out", [])


def test_printed_replay_commands_name_every_recorded_environment_variable() -> None:
    """Replay gives a recorded name a value only when ``--env NAME`` is passed, so the command
    the summary prints passes each one (else it would exit 2)."""
    rep = report()
    rep["execution"]["environment_names"] = ["API_TOKEN", "MODE"]
    md = render_repomin_md(rep, "out", [])
    assert "--env API_TOKEN --env MODE --yes" in md


def test_the_by_hand_command_keeps_your_home_for_an_inherit_report() -> None:
    rep = report()
    assert 'HOME="$d/tmp"' in render_repomin_md(rep, "out", [])
    rep["execution"]["home"] = "inherit"
    md = render_repomin_md(rep, "out", [])
    assert 'HOME="$HOME"' in md and 'HOME="$d/tmp"' not in md


def test_the_printed_replay_command_passes_home_inherit_for_an_inherit_report() -> None:
    rep = report()
    rep["execution"]["home"] = "inherit"
    assert "--home inherit --yes" in render_repomin_md(rep, "out", [])
