"""``--cluster`` on the command line: flag checks (no cluster needed) and an unreachable
scheduler (exit 2, one line naming the address and how to check it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from repomin.cluster.wiring import config_from_flags
from repomin.errors import UsageError

from ._support import SRC


def test_companion_flags_need_an_address(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="need --cluster ADDRESS"):
        config_from_flags(None, tmp_path / "ca.pem", None, None, False, False)
    with pytest.raises(UsageError, match="need --cluster ADDRESS"):
        config_from_flags(None, None, None, None, True, False)
    assert config_from_flags(None, None, None, None, False, False) is None


def test_tls_flags_need_tls_and_existing_files(tmp_path: Path) -> None:
    ca, cert = tmp_path / "ca.pem", tmp_path / "cert.pem"
    with pytest.raises(UsageError, match="no such file"):
        config_from_flags("tls://h:1", ca, None, None, False, False)
    ca.write_text("x")
    cert.write_text("x")
    with pytest.raises(UsageError, match="need a tls:// address"):
        config_from_flags("tcp://h:1", ca, None, None, False, False)
    with pytest.raises(UsageError, match="needs --cluster-tls-ca"):
        config_from_flags("tls://h:1", None, None, None, False, False)
    config = config_from_flags("tls://h:1", ca, cert, None, True, True)
    assert config is not None and config.allow_mixed_workers and not config.jobs_from_cluster
    auto = config_from_flags("127.0.0.1:8786", None, None, None, False, False)
    assert auto is not None and auto.jobs_from_cluster


@pytest.mark.cluster
def test_unreachable_scheduler_exits_2_with_one_line(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    env = {**os.environ, "PYTHONPATH": SRC, "REPOMIN_CLUSTER": "tcp://127.0.0.1:9"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "repomin",
            "reduce",
            str(src),
            "-o",
            str(tmp_path / "out"),
            "--command",
            "false",
            "--exit-code",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "tcp://127.0.0.1:9" in lines[0] and "dask" in lines[0]
    assert not (tmp_path / "out").exists()
