"""Java members nothing names: the parse of class bodies, the fixpoint over files, and the
``refs`` pass proposing the cut on real ``javac`` output (the same exception, compiled at once).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from repomin.analysis.refs.javamembers import dead_members, parse
from repomin.analysis.refs.text import without_spans
from repomin.passes.refs import RefsCut
from repomin.tree import Tree, materialise
from tests.unit._pass_harness import PredicateProblem, text_tree

needs_jdk = pytest.mark.skipif(
    not (shutil.which("javac") and shutil.which("java")), reason="javac/java not installed"
)

UTIL = """\
package org.x;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class Util {
    private static final int LIMIT = 3, OTHER = 4;
    private static final Map<String, List<Integer>> CACHE = new HashMap<>();
    private static final Runnable HOOK = new Runnable() {
        public void run() { System.out.println("hook"); }
    };

    private Util() {}

    public static int check(long value) {
        if (value < 0) {
            throw new IllegalArgumentException("negative: " + value);
        }
        return (int) value;
    }

    public static int check(String value) { return value.length(); }

    public static int unused(int x) { return helper(x) + LIMIT; }

    static int helper(int x) { return x * OTHER; }

    static int recursive(int x) { return x == 0 ? 0 : recursive(x - 1); }

    static Map<String, List<Integer>> cache() { return CACHE; }

    @Deprecated
    public static String old() { return "unusedByString"; }

    @Override
    public String toString() { return "util"; }

    public static class Token {
        int size() { return 1; }
    }

    static Token token() { return new Token(); }

    static class Ordered implements Comparable<Ordered> {
        public int compareTo(Ordered o) { return 0; }
        int weight() { return 2; }
    }

    public static class Base { public int shared() { return 1; } int only() { return 5; } }

    static class Child extends Base { public int shared() { return 2; } }

    interface Shape { int area(); default int twice() { return 2 * area(); } }

    enum Mode {
        A { int code() { return 1; } }, B { int code() { return 2; } };
        abstract int code();
        int extra() { return 7; }
    }

    public static Base base() { return new Child(); }

    public static Object[] uses() { return new Object[] {new Ordered(), (Shape) () -> 1, Mode.A}; }
}
"""

DRIVER = """\
import org.x.Util;

public class Driver {
    public static void main(String[] args) throws Exception {
        System.out.println(Class.forName("org.x.Util").getName() + " unusedByString");
        System.out.println(Util.base().shared() + Util.uses().length);
        Util.check(-args.length - 1L);
    }
}
"""

COMMAND = 'c=$(mktemp -d) && javac -nowarn -d "$c" $(find . -name "*.java") && java -cp "$c" Driver'


def _dead(files: dict[str, str]) -> dict[str, bytes]:
    parsed = {p: parse(t.encode()) for p, t in files.items()}
    assert all(v is not None for v in parsed.values())
    dead = dead_members({p: v for p, v in parsed.items() if v is not None})
    return {p: without_spans(files[p].encode(), d.spans) for p, d in dead.items()}


def test_the_fixpoint_keeps_what_code_left_names() -> None:
    after = _dead({"src/org/x/Util.java": UTIL, "Driver.java": DRIVER})["src/org/x/Util.java"]
    text = after.decode()
    # named by the driver, or by what stays: kept with every overload
    for kept in ("check(long value)", "check(String value)", "shared()", "base()"):
        assert kept in text, kept
    # pinned: constructors, toString, @Override, a library interface's method, abstract ones,
    # enum constants, what a default method calls
    for kept in ("private Util()", "toString()", "compareTo(Ordered o)", "abstract int code()"):
        assert kept in text, kept
    assert "A { int code()" in text and "int area();" in text
    assert "weight()" in text  # in a class implementing a library interface: may implement it
    # nothing names them, or only dead members do (helper, LIMIT, OTHER via unused; CACHE via
    # cache; Token via token); a string does not count; the Base.only method too
    for gone in (
        "unused(",
        "helper(",
        "LIMIT",
        "OTHER",
        "CACHE",
        "cache()",
        "recursive(",
        "old()",
        "class Token",
        "token()",
        "only()",
        "HOOK",
        "extra()",
        "twice()",
    ):
        assert gone not in text, gone
    # the imports only the dead members used go with them
    assert "import java.util" not in text
    assert "    \n" not in text  # whole lines go


def test_a_file_that_does_not_parse_counts_but_is_not_cut() -> None:
    from repomin.analysis.refs.javamembers import mentions_only

    assert parse(b"class A { void f() { }") is None
    assert parse(b'class A { String s = "open; }') is None
    broken = b"class B { void g() { U.helper(1); } "  # names helper, does not parse
    assert parse(broken) is None
    alone = parse(b"class U { static int helper(int x) { return x; } }")
    assert alone is not None
    assert dead_members({"U.java": alone})  # alone, helper is dead
    assert dead_members({"U.java": alone, "B.java": mentions_only(broken)}) == {}
    # a subclass of a type the tree does not declare keeps its methods
    ext = parse(b"class E extends java.util.AbstractList<Y> { public int size() { return 0; } }")
    assert ext is not None and not dead_members({"E.java": ext})


def test_keep_and_editable_narrow_the_cut() -> None:
    parsed = parse(UTIL.encode())
    assert parsed is not None
    full = dead_members({"U.java": parsed})["U.java"]
    unused = next(m for m in parsed.members if m.names == ("unused",))
    kept = dead_members({"U.java": parsed}, keep={("U.java", unused.start)})["U.java"]
    # keeping `unused` keeps what it names (helper, LIMIT, OTHER) and nothing else changes
    gone = {m.names for m in parsed.members if (m.start, m.end) in kept.members}
    assert ("unused",) not in gone and ("helper",) not in gone
    assert len(kept.members) < len(full.members) and ("recursive",) in gone
    assert dead_members({"U.java": parsed}, editable=set()) == {}


def _fails(candidate: Tree) -> bool:
    with tempfile.TemporaryDirectory() as root:
        materialise(candidate, Path(root))
        run = subprocess.run(
            COMMAND, shell=True, cwd=root, capture_output=True, timeout=120, check=False
        )
    return (
        b"IllegalArgumentException: negative: -1" in run.stderr
        and b"error:" not in run.stderr
        and b"org.x.Util unusedByString\n5\n" in run.stdout
    )


@needs_jdk
def test_the_refs_pass_cuts_the_members_in_one_compile_and_keeps_the_failure() -> None:
    tree = text_tree({"src/org/x/Util.java": UTIL, "Driver.java": DRIVER})
    assert _fails(tree)
    problem = PredicateProblem(tree, _fails)
    cut = RefsCut(COMMAND)
    cut.run(problem)
    assert problem.calls == 1  # the whole cut compiled and failed the same way
    data = problem.current["src/org/x/Util.java"].data
    assert b"helper" not in data and b"Token" not in data and b"import java.util" not in data
    assert problem.current.byte_count < tree.byte_count * 0.6
    assert _fails(problem.current)
    calls = problem.calls
    cut.run(problem)  # nothing left to propose
    assert problem.calls == calls


@needs_jdk
def test_a_rejected_cut_splits_and_never_proposes_a_member_without_what_it_names() -> None:
    # the oracle needs `unused` (a reflective call javac cannot see): the split keeps it, and
    # every candidate it tries keeps helper/LIMIT/OTHER with it, so every one compiles
    tree = text_tree({"src/org/x/Util.java": UTIL, "Driver.java": DRIVER})
    compiled: list[bool] = []

    def fails(candidate: Tree) -> bool:
        data = candidate["src/org/x/Util.java"].data
        compiled.append(b"helper(x) + LIMIT" not in data or b"static int helper" in data)
        return b"unused(" in data and _fails(candidate)

    problem = PredicateProblem(tree, fails)
    RefsCut(COMMAND).run(problem)
    data = problem.current["src/org/x/Util.java"].data
    assert b"unused(" in data and b"static int helper" in data and b"OTHER" in data
    assert b"recursive" not in data and b"class Token" not in data
    assert all(compiled)
    assert _fails(problem.current)


# -- the failing stack ------------------------------------------------------------------------

FORMAT = """\
package org.x;

import org.x.help.Helper;

public class Format {
    public static String hms(long millis) {
        return format(millis, "HH:mm");
    }

    public static String format(long millis, String pattern) {
        Util.check(millis);
        String[] parts = Helper.split(pattern);
        StringBuilder out = new StringBuilder();
        for (String part : parts) {
            out.append(Helper.render(part, millis));
        }
        return out.toString();
    }

    static int guarded(long millis) {
        if (millis < 0) {
            Util.check(millis);
            return 1;
        }
        return 0;
    }
}
"""

HELPER = """\
package org.x.help;

public class Helper {
    public static String[] split(String pattern) { return pattern.split(":"); }
    public static String render(String part, long millis) { return part + millis; }
}
"""

STACK_DRIVER = """\
import org.x.Format;

public class Driver {
    public static void main(String[] args) {
        System.out.println(Format.hms(-1L));
    }
}
"""

TRACE = """\
Exception in thread "main" java.lang.IllegalArgumentException: negative: -1
\tat org.x.Util.check(Util.java:18)
\tat app//org.x.Format.format(Format.java:11)
\tat org.x.Format.hms(Format.java:7)
\tat Driver.main(Driver.java:5)
"""


def test_frames_are_read_from_the_uncaught_trace() -> None:
    from repomin.analysis.javastack import failing_frames

    frames = failing_frames([TRACE, "\tat " + "a." * 400 + "b(X.java:1)\nat c.D.e(D.java:x)\n"])
    assert frames == [
        ("org/x/Util.java", "check", 18),
        ("org/x/Format.java", "format", 11),
        ("org/x/Format.java", "hms", 7),
        ("Driver.java", "main", 5),
    ]


def test_the_rest_after_the_frame_statement_is_cut_only_at_the_top_level() -> None:
    from repomin.analysis.javastack import stack_cut

    files = {"src/org/x/Format.java": FORMAT.encode(), "lib/other/Format.java": b"class F {}"}
    # two files end with org/x/Format.java? no: only one path ends with the frame's suffix
    edited = stack_cut([("org/x/Format.java", "format", 11)], files)
    text = edited["src/org/x/Format.java"].decode()
    assert "Util.check(millis); throw null;\n    }" in text
    assert "Helper" not in text.split("static int guarded")[0].split("format(long")[1]
    # the frame's line inside an if block, a wrong method name, a return statement: no cut
    assert stack_cut([("org/x/Format.java", "guarded", 22)], files) == {}
    assert stack_cut([("org/x/Format.java", "hms", 11)], files) == {}
    assert stack_cut([("org/x/Format.java", "hms", 7)], files) == {}  # nothing after return
    assert stack_cut([("org/x/Format.java", "format", 9999)], files) == {}
    # ambiguous suffixes are left alone
    twice = {"a/org/x/Format.java": FORMAT.encode(), "b/org/x/Format.java": FORMAT.encode()}
    assert stack_cut([("org/x/Format.java", "format", 11)], twice) == {}


@needs_jdk
def test_the_refs_pass_cuts_the_stack_then_the_members_and_files_it_freed() -> None:
    tree = text_tree(
        {
            "src/org/x/Util.java": UTIL,
            "src/org/x/Format.java": FORMAT,
            "src/org/x/help/Helper.java": HELPER,
            "Driver.java": STACK_DRIVER,
        }
    )

    def fails(candidate: Tree) -> bool:
        with tempfile.TemporaryDirectory() as root:
            materialise(candidate, Path(root))
            run = subprocess.run(
                COMMAND, shell=True, cwd=root, capture_output=True, timeout=120, check=False
            )
        return b"IllegalArgumentException: negative: -1" in run.stderr and b"error:" not in (
            run.stderr
        )

    assert fails(tree)
    with tempfile.TemporaryDirectory() as root:
        materialise(tree, Path(root))
        output = subprocess.run(
            COMMAND, shell=True, cwd=root, capture_output=True, text=True, timeout=120
        ).stderr
    problem = PredicateProblem(tree, fails)
    RefsCut(COMMAND, failures=[(output, "")]).run(problem)
    final = problem.current
    assert "src/org/x/help/Helper.java" not in final  # only the cut rest named it
    data = final["src/org/x/Format.java"].data
    assert b"Util.check(millis); throw null;" in data and b"guarded" not in data
    assert b"unused(" not in final["src/org/x/Util.java"].data
    assert problem.calls <= 4 and fails(final)


def test_hostile_sources_stay_bounded() -> None:
    from repomin.analysis.refs.javamembers import MAX_NESTING

    nested = "class A { " * (MAX_NESTING + 5) + "}" * (MAX_NESTING + 5)
    assert parse(nested.encode()) is None  # too deep: left whole, no recursion error
    # many members sharing one name, each mentioning it: the name counts as mentioned
    same = "class S {\n" + "".join(f"int a(int x{i}) {{ return a(x{i}); }}\n" for i in range(6000))
    many = "class M {\n" + "".join(f"void m{i}() {{ m{i}(); }}\n" for i in range(20000))
    same_parsed, many_parsed = parse((same + "}").encode()), parse((many + "}").encode())
    assert same_parsed is not None and many_parsed is not None
    assert dead_members({"S.java": same_parsed}) == {}
    assert len(dead_members({"M.java": many_parsed})["M.java"].members) == 20000


def test_an_overload_no_call_can_reach_goes() -> None:
    lib = """\
class V {
    static void between(long a, long b, long v) { throw null; }
    static void between(long a, long b, long v, String m) { throw new RuntimeException(m); }
    static void between(double a, double b, double v) { throw null; }
    static <T> void between(T a, T b, Comparable<T> v, String m, Object... values) { throw null; }
    static int many(int... xs) { return 0; }
    static int many(int a, int b, int c, int d, int e) { return 1; }
    static int ref(String s) { return 2; }
}
"""
    use = """\
class U {
    public static void main(String[] args) {
        V.between(0, 1, 2, "m");
        V.many(1, 2);
        java.util.function.Function<String, Integer> g = V::ref;
    }
}
"""
    after = _dead({"V.java": lib, "U.java": use})["V.java"].decode()
    # the 4-argument call reaches the 4-parameter overloads and the variable one (4 >= 5 - 1)
    assert "long v, String m)" in after and "Object... values" in after
    assert "long v) {" not in after and "double v)" not in after
    # a 2-argument call reaches only the variable-arity `many`; a method reference keeps `ref`
    assert "int... xs" in after and "int e)" not in after and "ref(String s)" in after


CODEC = {
    "src/org/c/Decoder.java": "package org.c;\npublic interface Decoder {\n"
    "    Object decode(Object o) throws Exception;\n}\n",
    "src/org/c/Encoder.java": "package org.c;\npublic interface Encoder {\n"
    "    Object encode(Object o);\n}\n",
    "src/org/c/Codec.java": """\
package org.c;

public class Codec implements Encoder, Decoder {
    @Override
    public Object encode(Object o) { return o; }

    @Override
    public Object decode(Object o) throws Exception { return decode((String) o); }

    public String decode(String s) throws Exception {
        throw new Exception("not a valid digit: " + s);
    }
}
""",
    "Driver.java": """\
import org.c.Codec;

public class Driver {
    public static void main(String[] args) throws Exception {
        new Codec().decode("%zz");
    }
}
""",
}


def _fails_with(message: bytes) -> Callable[[Tree], bool]:
    def fails(candidate: Tree) -> bool:
        with tempfile.TemporaryDirectory() as root:
            materialise(candidate, Path(root))
            run = subprocess.run(
                COMMAND, shell=True, cwd=root, capture_output=True, timeout=120, check=False
            )
        return message in run.stderr and b"error:" not in run.stderr

    return fails


@needs_jdk
def test_implements_lists_of_the_tree_go_with_what_only_they_kept() -> None:
    fails = _fails_with(b"java.lang.Exception: not a valid digit: %zz")
    tree = text_tree(CODEC)
    assert fails(tree)
    problem = PredicateProblem(tree, fails)
    RefsCut(COMMAND).run(problem)
    final = problem.current
    assert sorted(final.entries) == ["Driver.java", "src/org/c/Codec.java"]
    data = final["src/org/c/Codec.java"].data
    assert b"implements" not in data and b"encode" not in data and b"decode(String s)" in data
    assert b"@Override" not in data  # javac refuses it once the class implements nothing
    assert fails(final)
    assert any("drop the implements lists of 1 classes" in d for _, d in problem.accepted)


@needs_jdk
def test_a_class_used_through_its_interface_keeps_it_and_is_not_asked_twice() -> None:
    files = dict(CODEC)
    files["Driver.java"] = files["Driver.java"].replace(
        'new Codec().decode("%zz");', 'org.c.Decoder d = new Codec(); d.decode("%zz");'
    )
    fails = _fails_with(b"java.lang.Exception: not a valid digit: %zz")
    tree = text_tree(files)
    problem = PredicateProblem(tree, fails)
    cut = RefsCut(COMMAND)
    cut.run(problem)
    assert b"implements Encoder, Decoder" in problem.current["src/org/c/Codec.java"].data or (
        b"implements Decoder" in problem.current["src/org/c/Codec.java"].data
    )
    assert "src/org/c/Decoder.java" in problem.current and fails(problem.current)
    calls = problem.calls
    cut.run(problem)
    assert problem.calls == calls


def test_the_member_cut_is_computed_again_only_when_a_java_file_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import repomin.passes.refs as refs

    calls: list[int] = []

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return dead_members(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(refs, "dead_members", counting)
    tree = text_tree({"src/org/x/Util.java": UTIL, "Driver.java": DRIVER, "notes.txt": "a"})
    problem = PredicateProblem(tree, lambda t: b"helper" in t["src/org/x/Util.java"].data)
    cut = RefsCut(COMMAND)
    cut.run(problem)
    assert calls
    cut.run(problem)  # the Java files its own acceptances left: computed once more
    first = len(calls)
    problem._current = problem.current.replace("notes.txt", b"b")  # no Java file changed
    cut.run(problem)
    assert len(calls) == first
    util = problem.current["src/org/x/Util.java"].data
    problem._current = problem.current.replace("src/org/x/Util.java", util + b"\n")
    cut.run(problem)
    assert len(calls) > first
