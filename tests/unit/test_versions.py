"""The tool versions recorded beside the failure: which probes a command asks for, and what a
real interpreter answers."""

from __future__ import annotations

import sys

from repomin.app.versions import probe_versions, tools_of


def test_the_tools_a_command_names_each_once() -> None:
    assert tools_of("python3 -m pytest -x tests && python3 x.py") == [
        ("python3", ["python3", "--version"]),
        ("pytest", ["python3", "-m", "pytest", "--version"]),
    ]
    assert [label for label, _ in tools_of("make -s all && gcc -o d d.c && ./d")] == [
        "make",
        "gcc",
    ]
    assert tools_of("cargo build --offline") == [("cargo", ["cargo", "--version"])]
    assert tools_of("javac -d out A.java && java -cp out A")[0] == ("javac", ["javac", "-version"])


def test_a_path_into_the_tree_is_never_run_outside_a_sample() -> None:
    assert tools_of("./node_modules/.bin/tsc -p . && venv/bin/python t.py") == []
    assert tools_of(f"{sys.executable} -V") == [
        (sys.executable.rsplit("/", 1)[-1], [sys.executable, "--version"])
    ]


def test_a_real_interpreter_and_its_pytest_answer() -> None:
    versions = probe_versions(f"'{sys.executable}' -m pytest -q", {})
    name = sys.executable.rsplit("/", 1)[-1]
    major, minor = sys.version_info[:2]
    assert versions[name].startswith(f"Python {major}.{minor}.")
    assert versions["pytest"].startswith("pytest ")
    assert versions["os"]


def test_a_tool_that_is_not_there_is_left_out() -> None:
    versions = probe_versions("gcc -o x x.c && node x.js", {"PATH": "/nonexistent"})
    assert set(versions) == {"os"}
