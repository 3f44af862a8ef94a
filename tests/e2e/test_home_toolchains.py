"""Toolchains that live in HOME: the baseline's diagnosis names them, ``--home inherit`` uses them.

Every host sample gets a fresh, empty HOME, so a command whose tool lives under ``~`` (rustup's
``~/.rustup``, ``pip install --user`` packages in ``~/.local/lib/pythonX.Y/site-packages``, a
``~/.toolrc``) fails in every sample although it fails "properly" in the user's shell. Before
the baseline gives up, ReproMin runs the command once in the user's own shell; when the failure
reproduces there, the error names what the samples looked for under HOME and ``--home
inherit``. With ``--home inherit`` the samples see the user's HOME (read-only in namespace
mode) and the reduction succeeds; the report records ``execution.home`` and replay refuses to
drop it silently.

Every test runs ``repomin`` with HOME set to a temporary directory (never the real one), in a
subprocess (``python -m repomin``) or through the real host runner.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repomin.errors import UsageError
from repomin.report import replay as rp
from repomin.report.validate import validate_file
from repomin.runners import sandbox
from repomin.runners.base import RunRequest
from repomin.runners.host import HostRunner
from repomin.runners.scratch import private_root
from repomin.tree import Entry, Tree
from tests.conftest import reduce_argv
from tests.e2e._reduce import base_python, clean_up_after_sigkill, sigkill_at_mark

TOOL_COMMAND = (
    'test -f "$HOME/.toolrc" || { echo "tool: no default is configured" >&2; exit 3; }; '
    "grep -q BUG main.txt && { echo 'tool: BUG found in main.txt' >&2; exit 1; }; exit 0"
)
HAS_STRACE = shutil.which("strace") is not None
NAMESPACE = sandbox.bwrap_problem() is None


def _home(root: Path, *, toolrc: bool = True) -> Path:
    home = root / "home"
    home.mkdir(parents=True)
    if toolrc:
        (home / ".toolrc").write_text("default = stable\n")
    return home


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _tool_source(root: Path) -> Path:
    files = {"main.txt": "BUG here\n"}
    files.update({f"junk{n}.txt": f"junk {n}\n" * 4 for n in range(5)})
    return _tree(root / "src", files)


def _run(argv: list[str], home: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _reduce(
    src: Path, out: Path, command: str, match: str, home: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    small = ["--baseline-runs", "2", "--final-runs", "2", "--jobs", "1", "--no-session"]
    return _run(reduce_argv(src, out, command, match, *small, *extra), home)


def _report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out.parent / f"{out.name}.repomin/report.json").read_text())
    return data


def _payload(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


# -- (a) a fake toolchain: ~/.toolrc --------------------------------------------------------


def test_a_toolchain_in_home_is_named_with_the_switch_when_the_baseline_fails(
    tmp_path: Path,
) -> None:
    home = _home(tmp_path)
    out = tmp_path / "out"
    done = _reduce(_tool_source(tmp_path), out, TOOL_COMMAND, "BUG found", home)
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("repomin: error: ")
    assert "reproduces in your own shell" in error
    assert "--home inherit" in error
    if HAS_STRACE:  # the diagnosis' traced run names what the samples looked for
        assert "~/.toolrc" in error
    assert not out.exists()  # nothing written


def test_with_home_inherit_the_toolchain_in_home_is_used_and_recorded(tmp_path: Path) -> None:
    home = _home(tmp_path)
    out = tmp_path / "out"
    done = _reduce(
        _tool_source(tmp_path), out, TOOL_COMMAND, "BUG found", home, "--home", "inherit"
    )
    assert done.returncode == 0, done.stderr
    assert _payload(out) == ["main.txt"]
    report = _report(out)
    assert report["execution"]["home"] == "inherit"
    assert not validate_file(out.parent / "out.repomin" / "report.json", payload=out)[1].problems
    assert sorted(p.name for p in home.iterdir()) == [".toolrc"]  # samples wrote nothing there


def test_the_default_is_fresh_and_recorded(tmp_path: Path) -> None:
    home = _home(tmp_path)
    out = tmp_path / "out"
    command = "grep -q BUG main.txt && { echo 'BUG found' >&2; exit 1; }; exit 0"
    done = _reduce(_tool_source(tmp_path), out, command, "BUG found", home)
    assert done.returncode == 0, done.stderr
    assert _report(out)["execution"]["home"] == "fresh"


def test_a_failure_that_does_not_reproduce_in_your_shell_either_says_so(tmp_path: Path) -> None:
    home = _home(tmp_path)
    done = _reduce(_tool_source(tmp_path), tmp_path / "out", TOOL_COMMAND, "NOT PRINTED", home)
    assert done.returncode == 2, done.stderr
    assert "in your own shell" in done.stderr and "did not reproduce either" in done.stderr
    assert "--home inherit" not in done.stderr.strip().splitlines()[-1]


def test_a_variable_only_your_shell_has_points_to_env_not_to_home(tmp_path: Path) -> None:
    home = _home(tmp_path, toolrc=False)
    command = 'test -n "$REPOMIN_TEST_TOOL" || exit 3; echo BUG found >&2; exit 1'
    argv = reduce_argv(
        _tool_source(tmp_path), tmp_path / "out", command, "BUG found",
        "--baseline-runs", "2", "--jobs", "1", "--no-session",
    )  # fmt: skip
    env = {**os.environ, "HOME": str(home), "REPOMIN_TEST_TOOL": "1"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert "reproduces in your own shell" in error and "--env NAME" in error
    if HAS_STRACE:
        assert "looked for nothing under its (fresh, empty) HOME" in error


def test_no_run_in_your_shell_with_user_shell_runs_0(tmp_path: Path) -> None:
    home = _home(tmp_path, toolrc=False)
    marker = home / "ran-in-your-shell"  # $HOME: the samples' own, or the user's in their shell
    command = f'touch "$HOME/{marker.name}"; {TOOL_COMMAND}'
    done = _reduce(
        _tool_source(tmp_path), tmp_path / "out", command, "BUG found", home,
        "--user-shell-runs", "0", "--isolation", "supervisor",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert not marker.exists()  # the samples' HOME is theirs; nothing ran in the user's shell
    assert "your own shell" not in done.stderr


def test_home_inherit_with_docker_or_env_home_is_refused(tmp_path: Path) -> None:
    home = _home(tmp_path)
    src = _tool_source(tmp_path)
    docker = _reduce(
        src, tmp_path / "o1", TOOL_COMMAND, "BUG", home, "--home", "inherit",
        "--backend", "docker", "--image", "busybox",
    )  # fmt: skip
    assert docker.returncode == 2
    assert "--home inherit" in docker.stderr and "container" in docker.stderr
    both = _reduce(
        src, tmp_path / "o2", TOOL_COMMAND, "BUG", home, "--home", "inherit", "--env", "HOME"
    )
    assert both.returncode == 2
    assert "--env HOME" in both.stderr


# -- the boundary of an inherited HOME, on the real host runner --------------------------------


def _probe(runner: HostRunner, command: str) -> str:
    tree = Tree.of({"main.txt": Entry("file", b"x\n", text=True)})
    outcome = runner.run(tree, RunRequest(command, {}, 30.0, "probe"))
    return outcome.stdout.decode()


PROBE = (
    'echo "home=$HOME"; test -f "$HOME/.toolrc" && echo toolrc-readable; '
    'test -e "$SRC_MAIN" && echo src-visible; '
    '( : > "$HOME/.written" ) 2>/dev/null && echo home-writable; '
    '( : > "$TMPDIR/t" ) 2>/dev/null && echo tmp-writable; exit 0'
)


@pytest.mark.skipif(not NAMESPACE, reason="bwrap cannot make a namespace here")
def test_namespace_inherit_binds_home_read_only_and_keeps_src_under_it_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path)
    src = _tree(home / "work" / "repo", {"main.txt": "secret\n"})  # SRC lies under HOME
    monkeypatch.setenv("HOME", str(home))
    runner = HostRunner(source=src, isolation="namespace", home="inherit")
    try:
        command = f"SRC_MAIN={shlex.quote(str(src / 'main.txt'))}; {PROBE}"
        seen = _probe(runner, command).split()
    finally:
        runner.close()
    assert f"home={home}" in seen
    assert "toolrc-readable" in seen and "tmp-writable" in seen
    assert "src-visible" not in seen  # SRC stays hidden although HOME is bound
    assert "home-writable" not in seen  # read-only: no cache reaches the next sample
    assert not (home / ".written").exists()


def test_supervisor_inherit_is_plain_inheritance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    runner = HostRunner(isolation="supervisor", home="inherit")
    try:
        seen = _probe(runner, f"SRC_MAIN=/nonexistent; {PROBE}").split()
    finally:
        runner.close()
    assert f"home={home}" in seen and "toolrc-readable" in seen
    assert "home-writable" in seen  # documented: supervisor mode cannot make it read-only
    assert runner.describe()["sample_isolation"] == "supervisor"


def test_fresh_home_is_private_and_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    runner = HostRunner(home="fresh")
    try:
        seen = _probe(runner, f"SRC_MAIN=/nonexistent; {PROBE}").split()
    finally:
        runner.close()
    assert f"home={home}" not in seen and "toolrc-readable" not in seen
    assert "home-writable" in seen  # its own scratch


@pytest.mark.skipif(not NAMESPACE, reason="bwrap cannot make a namespace here")
def test_a_temporary_directory_under_home_stays_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trace log and the carve record are written to the system temporary directory: when
    it lies under HOME, it is bound back writable over the read-only HOME."""
    home = _home(tmp_path)
    temp = home / "tmp"
    temp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    runner = HostRunner(isolation="namespace", home="inherit")
    try:
        seen = _probe(runner, f": > {shlex.quote(str(temp / 'sink'))} && echo sink-ok").split()
    finally:
        runner.close()
    assert "sink-ok" in seen


# -- replay ----------------------------------------------------------------------------------


def test_replay_of_an_inherit_report_needs_home_on_its_command_line(tmp_path: Path) -> None:
    home = _home(tmp_path)
    out = tmp_path / "out"
    done = _reduce(
        _tool_source(tmp_path), out, TOOL_COMMAND, "BUG found", home, "--home", "inherit"
    )
    assert done.returncode == 0, done.stderr
    report = str(out.parent / "out.repomin")
    base = [sys.executable, "-m", "repomin", "report", "replay", report, "--payload", str(out)]
    shown = _run(base, home)
    assert shown.returncode == 2
    assert "execution.home: inherit" in shown.stdout and "--home inherit" in shown.stdout
    silent = _run([*base, "--yes"], home)
    assert silent.returncode == 2, silent.stdout + silent.stderr
    assert "--home inherit" in silent.stderr  # never inherited silently
    inherited = _run([*base, "--yes", "--home", "inherit"], home)
    assert inherited.returncode == 0, inherited.stdout + inherited.stderr
    assert "HOME: yours (--home inherit)" in inherited.stdout
    fresh = _run([*base, "--yes", "--home", "fresh"], home)
    assert fresh.returncode == 1, fresh.stdout + fresh.stderr  # the tool needs ~/.toolrc
    assert "no default is configured" in fresh.stderr
    docker = dict(_report(out), execution={**_report(out)["execution"], "backend": "docker"})
    with pytest.raises(UsageError, match="--home inherit is for a host report"):
        rp.plan_replay(docker, home="inherit")  # a container has its own HOME


# -- (b) a user-site Python package (pip install --user) --------------------------------------


@pytest.mark.slow
def test_a_user_site_package_is_named_and_used_with_home_inherit(tmp_path: Path) -> None:
    python, version = base_python()
    home = _home(tmp_path, toolrc=False)
    site = home / ".local" / "lib" / f"python{version}" / "site-packages"
    (site / "thepkg").mkdir(parents=True)
    (site / "thepkg" / "__init__.py").write_text(
        "def boom():\n    raise RuntimeError('BOOM from the user site')\n"
    )
    files = {"main.py": "import thepkg\n\nthepkg.boom()\n"}
    files.update({f"util{n}.py": f"VALUE = {n}\n" for n in range(4)})
    src = _tree(tmp_path / "src", files)
    command = f"{shlex.quote(python)} main.py"
    out = tmp_path / "out"
    failed = _reduce(src, out, command, "BOOM from the user site", home)
    assert failed.returncode == 2, failed.stderr
    error = failed.stderr.strip().splitlines()[-1]
    assert "No module named 'thepkg'" in failed.stderr  # what the samples saw
    assert "--home inherit" in error
    if HAS_STRACE:
        assert f"~/.local/lib/python{version}/site-packages" in error
    done = _reduce(src, out, command, "BOOM from the user site", home, "--home", "inherit")
    assert done.returncode == 0, done.stderr
    assert _payload(out) == ["main.py"]


# -- (c) cargo through rustup ------------------------------------------------------------------


def _rustup_home() -> tuple[Path, Path]:
    """The real ``~/.rustup`` and ``~/.cargo`` (skip when rustup's cargo is not here)."""
    real = Path(os.path.expanduser("~"))
    rustup = Path(os.environ.get("RUSTUP_HOME", real / ".rustup"))
    cargo_home = Path(os.environ.get("CARGO_HOME", real / ".cargo"))
    cargo = shutil.which("cargo")
    if cargo is None or not rustup.is_dir() or "RUSTUP_TOOLCHAIN" in os.environ:
        pytest.skip("cargo through rustup (with toolchains in ~/.rustup) is not installed here")
    if "RUSTUP_HOME" in os.environ or "CARGO_HOME" in os.environ:
        pytest.skip("RUSTUP_HOME/CARGO_HOME are set: the toolchain is not found through HOME")
    return rustup, cargo_home


@pytest.mark.slow
def test_cargo_through_rustup_is_diagnosed_and_reduced_with_home_inherit(tmp_path: Path) -> None:
    rustup, cargo_home = _rustup_home()
    home = _home(tmp_path, toolrc=False)
    (home / ".rustup").symlink_to(rustup)  # the user's toolchains, found through HOME
    if cargo_home.is_dir():
        (home / ".cargo").symlink_to(cargo_home)
    manifest = '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n'
    main = (
        "#![deny(warnings)]\n\nmod helpers;\n\nfn main() {\n    let unused = 1;\n"
        '    println!("{}", helpers::VALUE);\n}\n'
    )
    src = _tree(
        tmp_path / "crate",
        {
            "Cargo.toml": manifest,
            "src/main.rs": main,
            "src/helpers.rs": "pub const VALUE: u32 = 3;\n",
            "README.md": "a tiny crate\n" * 5,
            "notes/todo.txt": "nothing\n",
        },
    )
    command = "cargo build --offline --quiet"
    out = tmp_path / "out"
    failed = _reduce(src, out, command, "unused variable", home)
    assert failed.returncode == 2, failed.stderr
    assert "rustup could not choose a version of cargo" in failed.stderr
    error = failed.stderr.strip().splitlines()[-1]
    assert "--home inherit" in error and "~/.rustup" in error
    done = _reduce(src, out, command, "unused variable", home, "--home", "inherit")
    assert done.returncode == 0, done.stderr
    assert "src/main.rs" in _payload(out) and "README.md" not in _payload(out)
    assert _report(out)["execution"]["home"] == "inherit"


# -- the cluster: each worker's own HOME ---------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.slow
def test_on_a_cluster_inherit_means_the_workers_home(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from tests.cluster._support import LocalCluster

    client_home = _home(tmp_path / "client", toolrc=False)  # the client has no toolchain
    worker_home = _home(tmp_path / "worker")  # only the worker has the toolchain
    cluster = LocalCluster(tmp_path / "dask", workers=0)
    try:
        cluster.add_worker(env={"HOME": str(worker_home)})
        cluster.wait_workers(1)
        out = tmp_path / "out"
        argv = reduce_argv(
            _tool_source(tmp_path), out, TOOL_COMMAND, "BUG found",
            "--baseline-runs", "2", "--final-runs", "2", "--no-session", "--no-trace",
            "--cluster", cluster.address, "--home", "inherit",
        )  # fmt: skip
        env = {**os.environ, "HOME": str(client_home)}
        env.pop("REPOMIN_CLUSTER", None)
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    finally:
        cluster.stop()
    assert done.returncode == 0, done.stderr
    assert _payload(out) == ["main.txt"]
    assert _report(out)["execution"]["home"] == "inherit"


# -- the diagnosis' run in your shell ends with ReproMin ---------------------------------------


@pytest.mark.slow
def test_sigkill_during_the_diagnosis_in_your_shell_kills_its_run_and_the_dir_is_reaped(
    tmp_path: Path,
) -> None:
    """The diagnosis runs in the user's shell with the your-shell check's machinery: a process
    it starts dies with ReproMin (SIGKILL included), and the next start removes its copy."""
    mark = tmp_path / "diagnosis-started"
    # Samples never see REPOMIN_TEST_MARK (not passed with --env): they fail without BUG.
    command = (
        '[ -n "$REPOMIN_TEST_MARK" ] || exit 3; sleep 100 & '
        'echo "$! $PWD" > "$REPOMIN_TEST_MARK.tmp"; mv "$REPOMIN_TEST_MARK.tmp" '
        '"$REPOMIN_TEST_MARK"; wait; echo BUG >&2; exit 1'
    )
    argv = reduce_argv(
        _tool_source(tmp_path), tmp_path / "out", command, "BUG",
        "--jobs", "1", "--baseline-runs", "2", "--no-session",
    )  # fmt: skip
    env = {**os.environ, "HOME": str(_home(tmp_path)), "REPOMIN_TEST_MARK": str(mark)}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sleeper: int | None = None
    payload: Path | None = None
    try:
        sleeper, payload = sigkill_at_mark(proc, mark, "the diagnosis' run in your shell")
        workdir = payload.parent
        assert workdir.name.startswith(f"repomin-{proc.pid}-your-shell-"), workdir
        assert workdir.parent == private_root() and workdir.exists()
        again = _reduce(
            _tree(tmp_path / "src2", {"main.txt": "BUG\n"}), tmp_path / "out2",
            "cat main.txt >&2; exit 1", "BUG", _home(tmp_path / "again"),
            "--user-shell-runs", "0", "--passes", "files",
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert not workdir.exists()  # the next start of ReproMin removed it
    finally:
        clean_up_after_sigkill(proc, sleeper, payload)
