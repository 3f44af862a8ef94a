"""The trace-guided cut: log parsing, the kept set, the one-candidate pass, and real traced runs
on the host runner (strace when installed, access times, the in-band stderr transport)."""

from __future__ import annotations

import re
import shutil
from typing import Any

import pytest

from repomin.analysis.trace import (
    TraceResult,
    atime_paths,
    disabled,
    strace_paths,
    trace_opened_files,
    wrapper_script,
)
from repomin.passes.trace import TraceCut, kept_by_trace
from repomin.runners.base import Outcome, RunRequest
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree
from tests.unit._pass_harness import BesideProblem, PredicateProblem, text_tree

ROOT = "/dev/shm/s/tree"

LOG = [
    b'101 execve("/bin/sh", ["/bin/sh", "-c", "sh run.sh"], 0x7ffd /* 3 vars */) = 0',
    b'101 openat(AT_FDCWD</dev/shm/s/tree>, "run.sh", O_RDONLY) = 3</dev/shm/s/tree/run.sh>',
    b'102 openat(AT_FDCWD</dev/shm/s/tree>, "lnk", O_RDONLY) = 3</dev/shm/s/tree/d/real.txt>',
    b'101 chdir("/dev/shm/s/tree/sub")        = 0',
    b'103 openat(AT_FDCWD</dev/shm/s/tree/sub>, "b.txt", O_RDONLY) = 3</dev/shm/s/tree/sub/b.txt>',
    b'103 newfstatat(4</dev/shm/s/tree/cfg>, "x\\"q.ini", {st_mode=S_IFREG}, 0) = 0',
    b'103 access("rel.txt", R_OK) = -1 ENOENT (No such file or directory)',
    b'103 openat(AT_FDCWD</dev/shm/s/tree/sub>, "/usr/lib/x.so", O_RDONLY) = -1 ENOENT',
    b'104 openat(AT_FDCWD</dev/shm/s/tree>, "caf\\303\\251.txt", O_RDONLY) = 3',
    b'104 openat(AT_FDCWD</dev/shm/s/tree>, "p <unfinished ...>',
]


def test_strace_log_parsing() -> None:
    paths = strace_paths(LOG, [ROOT])
    for expected in ("run.sh", "lnk", "d/real.txt", "sub/b.txt", 'cfg/x"q.ini', "café.txt"):
        assert expected in paths
    # a relative path without a directory descriptor resolves against every cwd seen
    assert {"rel.txt", "sub/rel.txt"} <= paths
    assert not any(p.startswith("/") or p.startswith("..") for p in paths)


def test_atime_listing() -> None:
    assert atime_paths([b"./a.txt", b"./d/b c.txt", b"junk"]) == {"a.txt", "d/b c.txt"}


def _tree() -> Tree:
    files = {f"d{i}/f{j}.txt": f"{i}{j}\n" for i in range(4) for j in range(4)}
    entries = dict(text_tree(files).entries)
    entries["lnk"] = Entry("symlink", b"d1/f1.txt")
    entries["dirlink"] = Entry("symlink", b"d2")
    entries["empty"] = Entry("dir")
    return Tree.of(entries)


def test_kept_set_follows_symlinks_and_protects() -> None:
    tree = _tree()
    trace = TraceResult("strace", frozenset({"lnk", "dirlink/f3.txt", "d0/f0.txt"}), "")
    keep = kept_by_trace(tree, trace, lambda p: p == "d3/f3.txt")
    assert keep == {"lnk", "d1/f1.txt", "dirlink", "d2/f3.txt", "d0/f0.txt", "d3/f3.txt"}
    atime = TraceResult("atime", frozenset({"d0/f0.txt"}), "")
    assert kept_by_trace(tree, atime, lambda p: False) == {"d0/f0.txt", "lnk", "dirlink", "empty"}


def test_cut_is_one_candidate_and_runs_once() -> None:
    tree = _tree()
    trace = TraceResult("strace", frozenset({"d0/f0.txt", "d1/f2.txt"}), "")
    problem = PredicateProblem(tree, lambda t: "d0/f0.txt" in t and "d1/f2.txt" in t)
    cut = TraceCut(trace)
    cut.run(problem)
    assert problem.calls == 1 and len(problem.accepted) == 1
    assert sorted(problem.current) == ["d0/f0.txt", "d1/f2.txt"]
    assert "delete the 16 files" in problem.accepted[0][1]
    cut.run(problem)
    assert problem.proposed == 1


def test_wrong_trace_is_rejected_and_changes_nothing() -> None:
    tree = _tree()
    trace = TraceResult("strace", frozenset({"d0/f0.txt"}), "")
    problem = PredicateProblem(tree, lambda t: "d3/f3.txt" in t)
    TraceCut(trace).run(problem)
    assert problem.calls == 1 and problem.accepted == []
    assert problem.current.digest == tree.digest


@pytest.mark.parametrize("trace", [None, disabled(), TraceResult("unavailable", None, "no tracer")])
def test_no_usable_trace_no_proposal(trace: TraceResult | None) -> None:
    problem = PredicateProblem(_tree(), lambda t: True)
    TraceCut(trace).run(problem)
    assert problem.proposed == 0


# -- traced runs on the host runner ----------------------------------------------------------

SCRIPT = (
    "cat d1/f1.txt >/dev/null\n"
    "cat lnk >/dev/null\n"
    "(cd d2 && cat f2.txt >/dev/null)\n"
    "echo boom >&2\n"
    "exit 3\n"
)


@pytest.fixture
def runner() -> Any:
    r = HostRunner()
    yield r
    r.close()


def _run_tree() -> Tree:
    entries = dict(_tree().entries)
    entries["run.sh"] = Entry("file", SCRIPT.encode(), 0o644, True)
    return Tree.of(entries)


def _check(result: TraceResult, tree: Tree, expected: set[str]) -> None:
    assert result.usable, result.reason
    assert result.exit_code == 3 and result.reproduced is True
    touched = {p for p in result.opened or () if p in tree}
    assert expected <= touched
    assert not touched & {"d0/f0.txt", "d3/f3.txt", "d2/f1.txt"}


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("in_band", [False, True])
def test_strace_on_host(runner: HostRunner, in_band: bool) -> None:
    tree = _run_tree()
    result = trace_opened_files(
        runner,
        tree,
        "sh run.sh",
        {},
        20,
        in_band=in_band,
        reproduces=lambda o: o.exit_code == 3 and b"boom" in o.stderr and b"@@" not in o.stderr,
    )
    assert result.method == "strace"
    _check(result, tree, {"run.sh", "d1/f1.txt", "lnk", "d2/f2.txt"})


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_seccomp_filter_traces_the_same_and_is_optional(
    runner: HostRunner, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--seccomp-bpf`` (stops only at the traced calls) gives the same paths in the same
    order as stopping at every call; an ``strace`` without the option is still used."""
    tree = _run_tree()

    def trace(env: dict[str, str]) -> TraceResult:
        return trace_opened_files(
            runner, tree, "sh run.sh", env, 20, in_band=False, reproduces=lambda o: o.exit_code == 3
        )

    filtered = trace({})
    real = shutil.which("strace")
    shim = tmp_path / "strace"
    shim.write_text(
        f'#!/bin/sh\necho "$*" >> {tmp_path}/calls\n'
        f'case " $* " in *" --seccomp-bpf "*) exit 1;; esac\nexec {real} "$@"\n'
    )
    shim.chmod(0o755)
    old = trace({"PATH": f"{tmp_path}:/usr/bin:/bin"})
    calls = (tmp_path / "calls").read_text().splitlines()
    assert any("--seccomp-bpf" in c for c in calls)  # probed, refused: traced without it
    assert "sh run.sh" in calls[-1] and "--seccomp-bpf" not in calls[-1]
    assert filtered.method == old.method == "strace"
    assert filtered.opened == old.opened and filtered.order == old.order
    _check(old, tree, {"run.sh", "d1/f1.txt", "lnk", "d2/f2.txt"})
    script = wrapper_script("sh run.sh", "/tmp/x", "tok", ("strace",))
    assert "--seccomp-bpf -e trace=%file -o /dev/null true" in script
    assert "strace -f -qq $__rm_s -y" in script


@pytest.mark.parametrize("in_band", [False, True])
def test_atime_fallback_on_host(runner: HostRunner, in_band: bool) -> None:
    tree = _run_tree()
    result = trace_opened_files(
        runner,
        tree,
        "sh run.sh",
        {},
        20,
        methods=("atime",),
        in_band=in_band,
        reproduces=lambda o: o.exit_code == 3 and b"@@" not in o.stderr,
    )
    if result.method == "unavailable":
        pytest.skip(f"this filesystem does not record access times: {result.reason}")
    assert result.method == "atime"
    _check(result, tree, {"run.sh", "d1/f1.txt", "d2/f2.txt"})


def test_no_method_is_unavailable_but_still_runs(runner: HostRunner) -> None:
    result = trace_opened_files(runner, _run_tree(), "sh run.sh", {}, 20, methods=())
    assert result.method == "unavailable" and not result.usable
    assert result.exit_code == 3
    assert "neither strace nor access times" in result.reason


class _CannedRunner:
    backend = "docker"

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.requests: list[RunRequest] = []

    def run(self, tree: Tree, request: RunRequest) -> Outcome:
        self.requests.append(request)
        return self.outcome

    def describe(self) -> dict[str, Any]:
        return {"backend": "docker"}

    def close(self) -> None:
        pass


def test_truncated_or_missing_in_band_log_is_discarded() -> None:
    class Truncating(_CannedRunner):
        def run(self, tree: Tree, request: RunRequest) -> Outcome:
            self.requests.append(request)
            token = re.search(r"@@repomin-trace-begin-([0-9a-f]+)@@", request.command)
            assert token is not None
            begin = f"\n@@repomin-trace-begin-{token.group(1)}@@\nstrace\n/t\n".encode()
            return Outcome(1, stderr=b"out" + begin + b"[... repomin: output truncated ...]\n")

    canned = Truncating(Outcome(0))
    result = trace_opened_files(canned, _tree(), "true", {}, 5)
    assert result.method == "unavailable" and "truncated" in result.reason
    # non-host backends use the in-band transport and a longer timeout
    assert canned.requests[0].timeout > 5
    # no section at all: an image without a shell or the tools
    missing = trace_opened_files(_CannedRunner(Outcome(127)), _tree(), "true", {}, 5)
    assert missing.method == "unavailable" and "no trace log came back" in missing.reason


def test_timeouts_and_runner_errors_are_not_fatal() -> None:
    timed_out = trace_opened_files(
        _CannedRunner(Outcome(None, timed_out=True)), _tree(), "x", {}, 1
    )
    assert timed_out.method == "unavailable" and "timed out" in timed_out.reason

    class Broken(_CannedRunner):
        def run(self, tree: Tree, request: RunRequest) -> Outcome:
            raise OSError("engine gone")

    broken = trace_opened_files(Broken(Outcome(0)), _tree(), "x", {}, 1)
    assert broken.method == "unavailable" and "engine gone" in broken.reason


def test_wrapper_quotes_the_command() -> None:
    script = wrapper_script("echo 'a b' \"$HOME\"; exit 4", None, "tok", ("strace", "atime"))
    assert "'echo '\"'\"'a b'\"'\"' \"$HOME\"; exit 4'" in script
    assert script.rstrip().endswith('exit "$__rm_rc"')


def _loads(tree: Tree) -> frozenset[str]:
    """What a traced run of ``main.txt`` touches: itself and every ``load X`` it names."""
    main = tree.entries["main.txt"].data.decode() if "main.txt" in tree.entries else ""
    named = {line.split()[1] for line in main.splitlines() if line.startswith("load ")}
    return frozenset({"main.txt"} | {n for n in named if n in tree.entries})


def test_retrace_after_a_content_edit_cuts_what_is_no_longer_loaded() -> None:
    from repomin.passes.hints import SearchHints

    main = "load x.txt\nload y.txt\nBUG\n"
    tree = text_tree({"main.txt": main, "x.txt": "", "y.txt": "", "z": ""})

    def fails(t: Tree) -> bool:  # the failure needs BUG, and every named file must exist
        main = t.entries["main.txt"].data.decode() if "main.txt" in t.entries else ""
        named = {line.split()[1] for line in main.splitlines() if line.startswith("load ")}
        return "BUG" in main and named <= set(t.entries)

    traced: list[str] = []

    def retrace(t: Tree) -> TraceResult:
        traced.append(t.digest)
        return TraceResult("strace", _loads(t), "ok", reproduced=fails(t))

    cut = TraceCut(TraceResult("strace", _loads(tree), "ok"))
    cut.hints = SearchHints(retrace=retrace)
    problem = PredicateProblem(tree, fails)
    cut.run(problem)
    assert set(problem.current.entries) == {"main.txt", "x.txt", "y.txt"} and not traced
    cut.run(problem)  # nothing changed in content: no traced run
    assert not traced
    # a content pass drops the line that loads y.txt
    problem._current = problem.current.replace("main.txt", b"load x.txt\nBUG\n")
    cut.run(problem)
    assert len(traced) == 1
    assert set(problem.current.entries) == {"main.txt", "x.txt"}
    assert cut.hints.trace is not None and cut.hints.trace.opened == {"main.txt", "x.txt"}
    cut.run(problem)  # the tree it traced: no second traced run
    assert len(traced) == 1


def test_retrace_that_does_not_reproduce_proposes_its_cut_but_keeps_the_hints() -> None:
    """A flaky failure's traced run misses like its samples: its cut is still a candidate,
    decided by the oracle; its trace does not replace the hints (order, priors, coverage)."""
    from repomin.passes.hints import SearchHints

    tree = text_tree({"main.txt": "load a\n", "a": "", "b": ""})
    first = TraceResult("strace", frozenset({"main.txt", "a", "b"}), "ok")
    cut = TraceCut(first)
    cut.hints = SearchHints(
        retrace=lambda t: TraceResult("strace", frozenset({"main.txt"}), "ok", reproduced=False),
        trace=first,
    )
    problem = PredicateProblem(tree, lambda t: True)
    cut.run(problem)
    problem._current = problem.current.replace("main.txt", b"load\n")
    cut.run(problem)
    assert problem.calls == 1 and set(problem.current.entries) == {"main.txt"}
    assert cut.hints.trace is first


def test_a_rejected_cut_of_a_non_reproducing_retrace_changes_nothing() -> None:
    from repomin.passes.hints import SearchHints

    tree = text_tree({"main.txt": "load a\n", "a": "", "b": ""})
    cut = TraceCut(TraceResult("strace", frozenset({"main.txt", "a", "b"}), "ok"))
    cut.hints = SearchHints(
        retrace=lambda t: TraceResult("strace", frozenset({"main.txt"}), "ok", reproduced=False)
    )
    problem = PredicateProblem(tree, lambda t: "a" in t.entries)
    cut.run(problem)
    problem._current = problem.current.replace("main.txt", b"load\n")
    cut.run(problem)
    assert problem.calls == 1 and set(problem.current.entries) == {"main.txt", "a", "b"}


class _TwoSlots(BesideProblem):
    """Background work in a thread, as the reducer does with --jobs 2 and a deterministic
    command."""


def test_with_two_slots_a_round_start_retrace_runs_in_the_background_until_settled() -> None:
    import threading

    from repomin.passes.hints import SearchHints

    tree = text_tree({"main.txt": "load x.txt\nload y.txt\nBUG\n", "x.txt": "", "y.txt": ""})
    release = threading.Event()
    threads: list[bool] = []

    def retrace(t: Tree) -> TraceResult:
        threads.append(threading.current_thread() is threading.main_thread())
        release.wait(10)
        return TraceResult("strace", _loads(t), "ok", reproduced=True)

    cut = TraceCut(TraceResult("strace", _loads(tree), "ok"))
    cut.hints = SearchHints(retrace=retrace)
    problem = _TwoSlots(tree, lambda t: "main.txt" in t.entries)
    cut.run(problem)  # the first cut uses the first trace: nothing to wait for
    assert not problem.background.waiting("trace") and not threads
    problem._current = problem.current.replace("main.txt", b"load x.txt\nBUG\n")
    cut.run(problem)  # returns while the traced run is still going
    assert problem.background.waiting("trace") and problem.calls == 0
    assert set(problem.current.entries) == {"main.txt", "x.txt", "y.txt"}
    release.set()
    problem.settle("trace")
    assert threads == [False]  # it ran beside the caller, not on its thread
    assert not problem.background.waiting("trace")
    assert set(problem.current.entries) == {"main.txt", "x.txt"}
    problem.settle("trace")  # nothing pending: nothing happens
    assert problem.calls == 1


def test_a_dropped_background_retrace_proposes_nothing() -> None:
    from repomin.passes.hints import SearchHints

    tree = text_tree({"main.txt": "load a\n", "a": "", "b": ""})
    traced: list[Tree] = []

    def retrace(t: Tree) -> TraceResult:
        traced.append(t)
        return TraceResult("strace", frozenset({"main.txt"}), "ok", reproduced=True)

    cut = TraceCut(TraceResult("strace", frozenset({"main.txt", "a", "b"}), "ok"))
    cut.hints = SearchHints(retrace=retrace)
    problem = _TwoSlots(tree, lambda t: True)
    cut.run(problem)
    problem._current = problem.current.replace("main.txt", b"load\n")
    cut.run(problem)
    problem.background.drop()
    assert len(traced) == 1 and not problem.background.waiting("trace")
    assert problem.calls == 0 and set(problem.current.entries) == {"main.txt", "a", "b"}
