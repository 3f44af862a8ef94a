"""Payload meaning end to end: a flaky failure that slips into a deterministic one is flagged, and
``--keep-rate`` keeps it flaky; a command that reaches a visible SRC by its absolute path stops
the reduction (exit 2) unless ``--allow-src-access``.

The flaky tree is exactly 0.5 and deterministic in order: a counter outside the tree alternates
reproducing and not reproducing runs (``--jobs 1``), so the expected outcome does not depend on
luck. Deleting ``guard.txt`` makes every run print the message.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from repomin.app import reduce as app
from repomin.app.options import ReduceOptions
from repomin.app.progress import NullProgress
from repomin.app.selection import SelectionOptions
from repomin.errors import UsageError
from repomin.failure.contract import FailureSpec
from repomin.runners.host import HostRunner
from tests.conftest import reduce_argv

ROOT = Path(__file__).resolve().parents[2]

RUN_SH = """\
n=$1
if [ -f guard.txt ] && [ $((n % 2)) -eq 1 ]; then echo ok; else echo 'AssertionError: BUG'; fi
exit 1
"""


def flaky_tree(tmp_path: Path) -> tuple[Path, str]:
    src = tmp_path / "src"
    src.mkdir(parents=True)
    (src / "run.sh").write_text(RUN_SH)
    (src / "guard.txt").write_text("keeps the failure flaky\n")
    for i in range(3):
        (src / f"filler{i}.txt").write_text(f"unrelated {i}\n" * 4)
    count = shlex.quote(str(tmp_path / "count"))
    command = f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; sh run.sh $n"
    return src, command


def reduce(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:  # type: ignore[type-arg]
    src, command = flaky_tree(tmp_path)
    out = tmp_path / "out"
    done = subprocess.run(
        reduce_argv(
            src,
            out,
            command,
            "AssertionError: BUG",
            "--baseline-runs",
            "20",
            "--final-runs",
            "20",
            "--jobs",
            "1",
            "--passes",
            "files",
            "--no-trace",
            "--no-session",
            *extra,
        ),
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    return done, report


@pytest.mark.slow
def test_slippage_is_flagged_and_keep_rate_keeps_the_flaky_file(tmp_path: Path) -> None:
    done, report = reduce(tmp_path / "plain")
    assert done.returncode == 0, done.stderr
    payload = sorted(p.name for p in (tmp_path / "plain" / "out").iterdir())
    assert payload == ["run.sh"]  # guard.txt deleted: the failure became deterministic
    slip = report["slippage"]
    assert report["execution"]["baseline_passes"] == 10
    assert slip["direction"] == "higher" and slip["final"]["passes"] == 20
    assert slip["keep_rate"] is None and report["execution"]["keep_rate"] is False
    assert (
        "repomin: warning: slippage: the final runs reproduced 20/20 against the baseline's "
        "10/20" in done.stdout
    )
    assert "--keep-rate" in done.stdout
    md = (tmp_path / "plain" / "out.repomin" / "REPOMIN.md").read_text()
    assert "## Slippage" in md and "significantly more often" in md

    done, report = reduce(tmp_path / "keep", "--keep-rate")
    assert done.returncode == 0, done.stderr
    payload = sorted(p.name for p in (tmp_path / "keep" / "out").iterdir())
    assert payload == ["guard.txt", "run.sh"]  # the flaky failure stayed the flaky failure
    slip = report["slippage"]
    assert slip["direction"] == "none" and slip["final"]["passes"] == 10
    assert report["execution"]["keep_rate"] is True
    keep = slip["keep_rate"]
    assert keep["runs_per_check"] == 20 and keep["rejected"] >= 1
    assert keep["checked"] > keep["rejected"]  # filler deletions were checked and kept
    assert "warning: slippage" not in done.stdout


def src_reaching_tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "data.txt").write_text("BUG\n")
    # an absolute path baked into the tree, as a configured Makefile does
    (src / "run.sh").write_text(f"cat {src / 'data.txt'}\nexit 1\n")
    (src / "other.txt").write_text("filler\n")
    return src


def options(tmp_path: Path, src: Path, **extra: object) -> ReduceOptions:
    return ReduceOptions(
        src=src,
        output=tmp_path / "out",
        command="sh run.sh",
        spec=FailureSpec(match="BUG"),
        selection=SelectionOptions(),
        schedule=("trace", "files"),
        use_session=False,
        **extra,  # type: ignore[arg-type]
    )


def supervisor(o: ReduceOptions) -> HostRunner:
    """The host runner without a namespace: SRC stays visible (the fallback being tested)."""
    return HostRunner(source=o.src, isolation="supervisor")


def test_visible_src_reached_by_absolute_path_exits_2(tmp_path: Path) -> None:
    src = src_reaching_tree(tmp_path)
    with pytest.raises(UsageError) as err:
        app.execute(options(tmp_path, src), NullProgress(), runner_factory=supervisor)
    assert f"by its absolute path ({src / 'data.txt'})" in err.value.message
    assert "--allow-src-access" in err.value.message and err.value.exit_code == 2
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.repomin").exists()


def test_allow_src_access_proceeds_and_is_recorded(tmp_path: Path) -> None:
    src = src_reaching_tree(tmp_path)
    notices: list[str] = []

    class Notices(NullProgress):
        def notice(self, text: str) -> None:
            notices.append(text)

    result = app.execute(
        options(tmp_path, src, allow_src_access=True), Notices(), runner_factory=supervisor
    )
    ex = result.report["execution"]
    assert (ex["source_access"], ex["source_access_path"]) == ("allowed", str(src / "data.txt"))
    assert ex["sample_isolation"] == "supervisor"
    assert any("--allow-src-access" in n for n in notices)


def test_namespace_hides_src_and_a_clean_command_is_checked(tmp_path: Path) -> None:
    src = src_reaching_tree(tmp_path)
    (src / "run.sh").write_text("cat data.txt\nexit 1\n")
    checked = app.execute(options(tmp_path, src), NullProgress(), runner_factory=supervisor)
    assert checked.report["execution"]["source_access"] == "checked"
    assert checked.report["execution"]["source_access_path"] is None
    default = app.execute(
        options(tmp_path / "ns", src), NullProgress(), runner_factory=app.default_runner_factory
    )
    isolation = default.report["execution"]["sample_isolation"]
    expected = "hidden" if isolation == "namespace" else "checked"
    assert default.report["execution"]["source_access"] == expected


def test_a_command_that_hides_from_the_tracer_is_named_as_unprovable(tmp_path: Path) -> None:
    """Supervisor mode: the command reads SRC only when it is not traced (``TracerPid`` 0), so
    the one traced run sees nothing. The report still says ``checked`` (what one traced run
    showed), and the user is told that supervisor mode cannot prove SRC was not read."""
    src = src_reaching_tree(tmp_path)
    (src / "run.sh").write_text(
        "if grep -q '^TracerPid:[[:space:]]*0$' /proc/self/status; then\n"
        f"  cat {src / 'data.txt'}\nelse\n  cat data.txt\nfi\nexit 1\n"
    )
    notices: list[str] = []

    class Notices(NullProgress):
        def notice(self, text: str) -> None:
            notices.append(text)

    result = app.execute(options(tmp_path, src), Notices(), runner_factory=supervisor)
    assert result.report["execution"]["source_access"] == "checked"
    assert any("cannot prove" in n or "can evade" in n for n in notices), notices
