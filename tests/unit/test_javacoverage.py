"""Which Java methods the traced run called: HotSpot's touched-method list on a real JVM, the
source scanner, the records read as hostile input, and the ``coverage`` pass emptying the
methods that never ran while ``javac`` still compiles and the same exception is thrown."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from repomin.analysis.javacoverage import (
    FILL,
    JCOV_DIR,
    descriptor_arity,
    java_methods,
    jvm_options,
    read_javacoverage,
    touched_methods,
)
from repomin.analysis.trace import TraceResult, trace_opened_files, wrapper_script
from repomin.passes.coverage import CoverageCut
from repomin.passes.hints import SearchHints
from repomin.runners.host import HostRunner
from repomin.tree import Tree, materialise
from tests.unit._pass_harness import PredicateProblem, text_tree


def _touched_methods_supported() -> bool:
    if not (shutil.which("javac") and shutil.which("java")):
        return False
    flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+LogTouchedMethods", "-version"]
    probe = subprocess.run(["java", *flags], capture_output=True, timeout=60, check=False)
    return probe.returncode == 0


needs_jdk = pytest.mark.skipif(
    not _touched_methods_supported(),
    reason="javac/java not installed, or this JVM has no -XX:+LogTouchedMethods",
)

LIB = """\
package org.x;

import java.util.List;
import java.util.Map;

public class Lib {
    private static final String S = "a { b";
    private final Runnable r = new Runnable() { public void run() { System.out.println("anon"); } };

    public Lib() { System.out.println("made"); }

    public int used(int x) { return helper(x) + 1; }

    int helper(int x) { return x * 2; }

    int helper(String s) { return s.length(); }

    public <K> Map<K, List<String>> unused(Map<K, String> m, int... xs) {
        throw new IllegalStateException("never");
    }

    static String never() {
        class Local { String f() { return "x"; } }
        return new Local().f();
    }

    public static class Nested {
        public int touched() { return 1; }
        public int untouched() { return 2; }
    }

    enum Mode { A, B; int value() { return 3; } }
}
"""

DRIVER = """\
import org.x.Lib;

public class Driver {
    public static void main(String[] args) {
        Lib lib = new Lib();
        System.out.println(lib.used(2) + new Lib.Nested().touched());
        throw new IllegalArgumentException("the failure " + args.length);
    }
}
"""

COMMAND = 'c=$(mktemp -d) && javac -nowarn -d "$c" $(find . -name "*.java") && java -cp "$c" Driver'


def test_descriptors_and_the_source_scanner() -> None:
    assert descriptor_arity("I[JLjava/a/B;[[Ljava/lang/String;Z") == 5
    assert descriptor_arity("") == 0 and descriptor_arity("Lbroken") is None
    found = {(m.classes, m.name, m.arity) for m in java_methods(LIB.encode()) or []}
    assert found == {
        (("Lib",), "used", 1),
        (("Lib",), "helper", 1),
        (("Lib",), "unused", 2),
        (("Lib",), "never", 0),
        (("Lib", "Nested"), "touched", 0),
        (("Lib", "Nested"), "untouched", 0),
        (("Lib", "Mode"), "value", 0),
    }  # no constructor, anonymous or local class; both helpers (same name and arity)
    assert java_methods(b"class A { void f() { }") is None
    assert java_methods(b'class A { String s = "open; }') is None


def test_records_are_hostile_input(tmp_path: Path) -> None:
    directory = tmp_path / JCOV_DIR
    directory.mkdir()
    assert touched_methods(directory) is None
    (directory / "a.log").write_text(
        "<tty>\n# Method::print_touched_methods version 1\n"
        "org/x/Lib.used:(I)I\nbad line\norg/x/Lib.&lt;init&gt;:()V\n"
        "org/x/Lib.weird:(Q)V\n</tty>\n"
    )
    (directory / "b.log").write_bytes(b"\xff\xfe no header")
    os.symlink("/etc/hostname", directory / "c.log")
    os.mkfifo(directory / "d.log")
    assert touched_methods(directory) == {("org/x/Lib", "used", 1), ("org/x/Lib", "<init>", 0)}
    tree = text_tree({"src/org/x/Lib.java": LIB, "README": "x"})
    coverage = read_javacoverage(directory, tree)
    assert coverage is not None and set(coverage) == {"src/org/x/Lib.java"}
    texts = [LIB.encode()[s:e] for s, e, _ in coverage["src/org/x/Lib.java"].never]
    assert not any(b"helper(x) + 1" in t for t in texts)
    assert any(b'"never"' in t for t in texts)
    other = text_tree({"src/org/y/Other.java": "package org.y; class Other { void f() {} }"})
    assert read_javacoverage(directory, other) is None  # no method of that tree ran


def test_the_trace_exports_the_jvm_options_only_with_a_plain_host_log() -> None:
    script = wrapper_script("java Driver", "/tmp/repomin-trace-1-abc", "tok", ("strace",))
    assert f'JDK_JAVA_OPTIONS="{jvm_options("/tmp/repomin-trace-1-abc/" + JCOV_DIR)}' in script
    assert "JDK_JAVA_OPTIONS" not in wrapper_script("java Driver", "/tmp/a b", "t", ("strace",))
    assert "JDK_JAVA_OPTIONS" not in wrapper_script("java Driver", None, "tok", ("strace",))


def _tree() -> Tree:
    return text_tree({"src/org/x/Lib.java": LIB, "Driver.java": DRIVER})


def _trace(tree: Tree) -> TraceResult:
    runner = HostRunner()
    try:
        return trace_opened_files(runner, tree, COMMAND, {}, 120, methods=("atime",))
    finally:
        runner.close()


def _fails(candidate: Tree) -> bool:
    with tempfile.TemporaryDirectory() as root:
        materialise(candidate, Path(root))
        run = subprocess.run(
            COMMAND, shell=True, cwd=root, capture_output=True, timeout=120, check=False
        )
    return b"IllegalArgumentException: the failure 0" in run.stderr and b"error:" not in run.stderr


@needs_jdk
def test_the_pass_empties_never_run_java_methods_and_keeps_the_same_failure() -> None:
    tree = _tree()
    trace = _trace(tree)
    coverage = trace.coverage
    assert coverage is not None and "src/org/x/Lib.java" in coverage, trace.reason
    assert _fails(tree)
    problem = PredicateProblem(tree, _fails)
    CoverageCut(SearchHints(trace=trace)).run(problem)  # type: ignore[arg-type]
    assert problem.calls == 1
    data = problem.current["src/org/x/Lib.java"].data
    for gone in (b'"never"', b'return "x"', b"return 2;", b"return 3;"):
        assert gone not in data, gone
    # helper(String) shares its name and arity with the helper that ran: kept
    for kept in (b"helper(x) + 1", b"x * 2;", b"s.length()", b"return 1;", b'"made"', b'"anon"'):
        assert kept in data, kept
    assert data.count(FILL) == 4
    assert _fails(problem.current)


@needs_jdk
def test_a_java_file_edited_since_the_trace_is_emptied_by_method() -> None:
    # a Python or JavaScript record is stale once its file changes (offsets of another text);
    # a Java record is the set of touched methods, found again in the edited file by name
    tree = _tree()
    trace = _trace(tree)
    assert trace.coverage is not None and "src/org/x/Lib.java" in trace.coverage
    lib = tree["src/org/x/Lib.java"].data
    edited = tree.replace(
        "src/org/x/Lib.java",
        b"// moved by another pass\n"
        + lib.replace(b"    static String never()", b"static String never()"),
    )
    problem = PredicateProblem(edited, _fails)
    CoverageCut(SearchHints(trace=trace)).run(problem)  # type: ignore[arg-type]
    data = problem.current["src/org/x/Lib.java"].data
    assert data.startswith(b"// moved by another pass\n")
    for gone in (b'"never"', b'return "x"', b"return 2;", b"return 3;"):
        assert gone not in data, gone
    assert data.count(FILL) == 4 and b"x * 2;" in data
    assert _fails(problem.current)
