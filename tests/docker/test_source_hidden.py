"""The Docker backend never shows SRC to a sample: the container sees only its own copy of the
candidate tree, so a command that reaches SRC through its absolute path finds nothing there
(the host backend needs a mount namespace for the same property)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.docker._support import run

pytestmark = pytest.mark.docker


@pytest.mark.parametrize("transport", ["bind", "stream"])
def test_src_is_not_visible_in_the_container(
    make_runner: Any, tmp_path: Path, transport: str
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "secret.txt").write_text("from SRC\n")
    runner = make_runner(transport=transport)
    out = run(runner, f"cat {src}/secret.txt; ls {src} 2>&1; exit 3")
    assert out.exit_code == 3
    assert b"from SRC" not in out.stdout
    assert b"secret.txt" not in out.stdout
