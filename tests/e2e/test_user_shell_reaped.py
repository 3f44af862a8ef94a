"""SIGKILL of ``repomin reduce`` during the your-shell stage leaves nothing behind for long.

The your-shell runs happen outside the sample boundary, but not outside ReproMin's control: a
process the payload's command starts there dies with ReproMin (a supervisor with a parent-death
signal kills its process group), and the directory holding the payload copy is recorded with
its owner in ReproMin's private scratch root, so the next start of ReproMin removes it.

The command starts ``sleep`` only in the user's shell: samples do not see ``REPOMIN_TEST_MARK``
(it comes from the user's environment, not from ``--env``). It writes the sleeper's PID and its
working directory to a file the test names, then waits.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from repomin.runners.scratch import private_root
from tests.conftest import reduce_argv
from tests.e2e._reduce import clean_up_after_sigkill, sigkill_at_mark

pytestmark = pytest.mark.slow

COMMAND = (
    'cat main.txt >/dev/null; if [ -n "$REPOMIN_TEST_MARK" ]; then '
    'sleep 100 & echo "$! $PWD" > "$REPOMIN_TEST_MARK.tmp"; '
    'mv "$REPOMIN_TEST_MARK.tmp" "$REPOMIN_TEST_MARK"; wait; fi; echo BUG >&2; exit 1'
)


def _source(root: Path) -> Path:
    src = root / "src"
    src.mkdir()
    (src / "main.txt").write_text("needed\n")
    for n in range(3):
        (src / f"junk{n}.txt").write_text(f"junk {n}\n")
    return src


def test_sigkill_in_the_your_shell_stage_kills_its_runs_and_the_next_start_reaps_the_dir(
    tmp_path: Path,
) -> None:
    mark = tmp_path / "your-shell-started"
    argv = reduce_argv(
        _source(tmp_path), tmp_path / "out", COMMAND, "BUG", "--jobs", "1", "--passes", "files"
    )
    env = {**os.environ, "REPOMIN_TEST_MARK": str(mark)}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sleeper: int | None = None
    payload: Path | None = None
    try:
        sleeper, payload = sigkill_at_mark(proc, mark, "the your-shell run")
        workdir = payload.parent
        assert workdir.name.startswith(f"repomin-{proc.pid}-your-shell-"), workdir
        assert workdir.parent == private_root(), workdir
        assert workdir.exists()  # nothing could remove it at SIGKILL ...

        quick = ["--jobs", "1", "--passes", "files", "--user-shell-runs", "0", "-q"]
        again = subprocess.run(
            reduce_argv(
                tmp_path / "src", tmp_path / "out2", "cat main.txt; echo BUG", "BUG", *quick
            ),
            capture_output=True,
            timeout=300,
        )
        assert again.returncode == 0, again.stderr.decode()
        assert not workdir.exists()  # ... and the next start of ReproMin removed it
    finally:
        clean_up_after_sigkill(proc, sleeper, payload)
