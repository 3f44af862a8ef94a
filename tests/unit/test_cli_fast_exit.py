"""The console entry point skips the interpreter's last garbage collection (``gc.freeze``)
when the process ends; ``main([...])`` called in-process (tests, embedding) never does."""

from __future__ import annotations

import sys

import pytest

from repomin.cli import main as cli_main


def test_the_console_entry_freezes_before_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[bool] = []
    monkeypatch.setattr(cli_main.gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(sys, "argv", ["repomin", "--version"])
    with pytest.raises(SystemExit) as exited:
        cli_main.main()
    assert exited.value.code in (0, None)
    assert frozen == [True]


def test_an_in_process_call_does_not_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[bool] = []
    monkeypatch.setattr(cli_main.gc, "freeze", lambda: frozen.append(True))
    with pytest.raises(SystemExit):
        cli_main.main(["--version"])
    assert frozen == []
