"""C++ function definitions nothing names: the reader of definitions in namespaces and class
bodies, the walk shared with the C cut, and the ``refs`` pass cutting a real program compiled
by real ``g++``."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from repomin.analysis.refs.cfunctions import MAX_NESTING, MAX_PARSE_BYTES, CFile, dead_items, lex
from repomin.analysis.refs.cppfunctions import is_cxx, parse
from repomin.passes.refs import RefsCut
from repomin.tree import Tree, materialise
from tests.unit._pass_harness import PredicateProblem, text_tree

needs_gxx = pytest.mark.skipif(not shutil.which("g++"), reason="g++ not installed")


def definitions(source: str) -> list[tuple[str, bool, str]]:
    """(name, pinned, the definition's first line) of each definition read."""
    data = source.encode()
    return [
        (i.names[0], i.pinned, data[i.start : i.end].decode().splitlines()[0].strip())
        for i in parse(data).items
    ]


def dead_names(files: dict[str, str]) -> dict[str, list[str]]:
    parsed = {p: parse(t.encode()) for p, t in files.items()}
    out: dict[str, list[str]] = {}
    for path, dead in dead_items(parsed).items():
        data = files[path].encode()
        out[path] = [data[s:e].decode().split("(")[0].split()[-1] for s, e in dead.members]
    return out


SOURCE = """\
#include <vector>
#define API_BEGIN namespace api {
#define DIAG_OFF(x)
namespace outer { namespace inner {
template <typename T, int N = sizeof(T)>
class Box : public Base<T> {
public:
    explicit Box(T v) : value_(v), extra_{1, 2}, base_(Base<T>(v)) { init(); }
    ~Box() { clear(); }
    Box& operator=(const Box& o) { value_ = o.value_; return *this; }
    bool operator<(const Box& o) const { return value_ < o.value_; }
    T operator()(int k) const { return value_ + k; }
    operator bool() const noexcept { return true; }
    T get() const & noexcept(true) { return value_; }
    auto size() const -> std::size_t { return N; }
    virtual void hook() = 0;
    void declared();
    Box(const Box&) = default;
    struct Node { int f() { return 1; } } node_;
    enum class Kind : int { A = 1, B = (2) };
    int bits : 3;
private:
    void init() {}
    void clear() try { value_ = T(); } catch (...) {}
    T value_;
    std::vector<int> extra_;
    static constexpr int table[] = {1, 2, 3};
};
template <typename T> void Box<T>::declared() { helper(); }
}}  // namespace
extern "C" { int c_entry(int x) { return x; } }
DIAG_OFF(effc++)
static auto lambda = [](int x) { return x + 1; };
inline int helper() { return 0; }
int main(int argc, char** argv) { return helper(); }
"""


def test_definitions_in_namespaces_classes_and_extern_c() -> None:
    assert definitions(SOURCE) == [
        ("Box", True, "explicit Box(T v) : value_(v), extra_{1, 2}, base_(Base<T>(v)) { init(); }"),
        ("Box", True, "~Box() { clear(); }"),
        ("operator", True, "Box& operator=(const Box& o) { value_ = o.value_; return *this; }"),
        ("operator", True, "bool operator<(const Box& o) const { return value_ < o.value_; }"),
        ("operator", True, "T operator()(int k) const { return value_ + k; }"),
        ("bool", True, "operator bool() const noexcept { return true; }"),
        ("get", False, "T get() const & noexcept(true) { return value_; }"),
        ("size", False, "auto size() const -> std::size_t { return N; }"),
        ("f", False, "int f() { return 1; }"),
        ("init", False, "void init() {}"),
        ("clear", False, "void clear() try { value_ = T(); } catch (...) {}"),
        ("declared", False, "template <typename T> void Box<T>::declared() { helper(); }"),
        ("c_entry", False, "int c_entry(int x) { return x; }"),
        ("helper", False, "inline int helper() { return 0; }"),
        ("main", True, "int main(int argc, char** argv) { return helper(); }"),
    ]


def test_a_macro_alone_on_its_line_is_not_part_of_the_definition_after_it() -> None:
    source = "NS_BEGIN\nDIAG_OFF(padded)\ninline int f() { return 1; }\nNS_END\n"
    assert definitions(source) == [("f", False, "inline int f() { return 1; }")]


def test_what_the_reader_cannot_follow_is_mentions_only() -> None:
    for source in (
        'const char* s = R"(unbalanced { here)";\nint f() { return 1; }\n',
        "int f() { return 1;\n",  # brackets do not balance
        'int f() { return "unterminated; }\n',
    ):
        parsed = parse(source.encode())
        assert parsed.items == ()
        assert "f" in {w for _, w in parsed.words}


def test_header_kinds() -> None:
    assert is_cxx("a.hpp", b"int x;")
    assert is_cxx("a.h", b"namespace n { int x; }")
    assert not is_cxx("a.h", b"int f(void);\n/* a class, in a comment */\n")
    assert not is_cxx("a.c", b"namespace")


def test_unnamed_definitions_go_and_what_a_live_one_names_stays() -> None:
    files = {
        "lib.hpp": """\
namespace lib {
class Parser {
public:
    Parser() { reset(); }
    int parse(const char* s) { return number(s) + sign(s); }
    int unused_entry() { return deep(); }
    int overload(int) { return 1; }
    int overload(double) { return 2; }
private:
    void reset() {}
    int number(const char*) { return 1; }
    int sign(const char*) { return 0; }
    int deep() { return twin(); }
    int twin() { return deep(); }
};
}
""",
        "main.cpp": '#include "lib.hpp"\nint main() { lib::Parser p; return p.parse("1"); }\n',
    }
    assert dead_names(files) == {
        "lib.hpp": ["unused_entry", "overload", "overload", "deep", "twin"]
    }


_PROGRAM = {
    "shapes.hpp": """\
#pragma once
#include <cstring>
namespace shapes {
struct Point { int x, y; };
class Polygon {
public:
    Polygon() : n_(0) {}
    void add(Point p) { pts_[n_++] = p; }
    int area() const {
        int a = 0;
        for (int i = 0; i < n_; ++i) a += pts_[i].x * pts_[(i + 1) % n_].y;
        return a;
    }
    int perimeter() const { int p = 0; for (int i = 0; i < n_; ++i) p += pts_[i].x; return p; }
    void scale(int k) { for (int i = 0; i < n_; ++i) { pts_[i].x *= k; pts_[i].y *= k; } }
    void mirror() { for (int i = 0; i < n_; ++i) pts_[i].x = -pts_[i].x; }
    void clear() { std::memset(pts_, 0, sizeof pts_); n_ = 0; }
private:
    Point pts_[16];
    int n_;
};
inline int unused_free_function(int v) { return v * 3; }
}
""",
    "main.cpp": """\
#include "shapes.hpp"
int main() {
    shapes::Polygon p;
    p.add({0, 0});
    p.add({4, 0});
    p.add({4, 3});
    int unused_local;
    return p.area() > 0 ? 0 : 1;
}
""",
}


def _compiles_with_the_warning(tree: Tree) -> bool:
    """g++ -Wall -Werror refuses the program for its unused variable, and only for that."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        materialise(tree, root)
        if not (root / "main.cpp").exists():
            return False
        run = subprocess.run(
            ["g++", "-Wall", "-Werror", "-c", "main.cpp", "-o", "/dev/null"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        errors = [line for line in run.stderr.splitlines() if ": error:" in line]
        return run.returncode != 0 and len(errors) == 1 and "unused-variable" in errors[0]


@needs_gxx
def test_the_refs_pass_cuts_unnamed_member_functions_of_a_real_gxx_build() -> None:
    tree = text_tree(_PROGRAM)
    assert _compiles_with_the_warning(tree)
    problem = PredicateProblem(tree, _compiles_with_the_warning)
    RefsCut().run(problem)
    header = problem.current["shapes.hpp"].data.decode()
    for gone in ("perimeter", "scale", "mirror", "clear", "unused_free_function"):
        assert gone not in header, gone
    for kept in ("Polygon()", "void add", "int area"):
        assert kept in header, kept
    assert _compiles_with_the_warning(problem.current)
    assert any("C and C++ functions" in d for _, d in problem.accepted)


def test_hostile_sources_stay_bounded() -> None:
    # classes nested as deep as the bracket bound: read (one frame set per level), then refused
    deep = "".join(f"struct S{i} {{ " for i in range(MAX_NESTING - 1))
    deep += "int f() { return 1; } " + "}; " * (MAX_NESTING - 1)
    assert [i.names for i in parse(deep.encode()).items] == [("f",)]
    deeper = (
        "namespace n { " * (MAX_NESTING + 1) + "int f() { return 1; }" + " }" * (MAX_NESTING + 1)
    )
    assert parse(deeper.encode()).items == ()
    many = "class C {\n" + "".join(f"int f{i}() {{ return {i}; }}\n" for i in range(20000)) + "};\n"
    parsed = parse(many.encode())
    assert len(parsed.items) == 20000
    assert len(dead_items({"m.hpp": parsed})["m.hpp"].members) == 20000
    assert isinstance(parse(b"\x00\xff{" * 1000), CFile)
    assert parse(b"{}" * 500_000).items == ()
    assert parse(b"x" * (MAX_PARSE_BYTES + 1)).items == ()


def test_macros_in_the_tail_and_a_head_the_reader_does_not_follow() -> None:
    source = """\
struct S {
    void a() _GLIBCXX_NOEXCEPT { }
    void b() const RAPIDJSON_NOEXCEPT __attribute__((pure)) [[nodiscard]] { }
    void c() strange words { }
    void d() { }
};
"""
    # c's head is not followed: its body is skipped, and d is not merged into it
    assert [name for name, _, _ in definitions(source)] == ["a", "b", "d"]


STDCXX = Path("/usr/include/c++")


@pytest.mark.slow
@pytest.mark.skipif(not STDCXX.is_dir(), reason="no C++ standard library headers installed")
def test_every_definition_read_from_the_standard_library_headers_is_one_definition() -> None:
    """Real C++ at its most varied (libstdc++'s headers: macros in tails, function-try-blocks,
    brace initializers, requires clauses): each item the reader finds is one definition -- it
    ends with its body's ``}`` and holds no top-level ``;`` (two declarations merged)."""
    found = 0
    for path in sorted(STDCXX.rglob("*")):
        if not path.is_file() or path.stat().st_size > MAX_PARSE_BYTES:
            continue
        data = path.read_bytes()
        for item in parse(data).items:
            found += 1
            lexed = lex(data[item.start : item.end])
            assert lexed is not None, (path, item)
            tokens = [text for _, text in lexed.code]
            assert tokens and tokens[-1] == b"}", (path, item)
            depth = 0
            for text in tokens:
                if text in (b"(", b"[", b"{"):
                    depth += 1
                elif text in (b")", b"]", b"}"):
                    depth -= 1
                else:
                    assert not (text == b";" and depth == 0), (path, data[item.start : item.end])
    assert found > 1000
