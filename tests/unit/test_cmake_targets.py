"""The CMake target cut (``analysis/refs/cmaketargets.py``): which targets a failing build
does not need, read from the CMake files and the build's own error lines, and the tree without
them."""

from __future__ import annotations

import time

from repomin.analysis import cmakelex
from repomin.analysis.refs import cmaketargets as ct
from repomin.tree import Entry, Tree

EXAMPLES = """\
cmake_minimum_required(VERSION 3.10)
set(EXAMPLES
    alpha
    beta  # a comment
    gamma)
list(APPEND EXAMPLES delta)
foreach (ex ${EXAMPLES})
    add_executable(${ex} ${ex}/${ex}.cpp)
endforeach()
if (CLANG)
    target_link_libraries(beta pthread)
endif()
add_custom_target(examples ALL DEPENDS ${EXAMPLES})
"""

TOP = """\
project(demo CXX)
add_library(core STATIC src/core.cpp "src/util.cpp")
add_library(extra src/extra.cpp)
add_executable(tool tool/main.cpp)
target_link_libraries(tool PRIVATE core)
set_target_properties(extra PROPERTIES OUTPUT_NAME extra2)
add_dependencies(examples extra)
install(TARGETS tool extra DESTINATION bin)
add_subdirectory(example)
#[[ add_executable(ghost ghost.cpp) ]]
message([=[ add_executable(ghost2 ghost.cpp) ]=])
"""

MAKE_ERROR = (
    "[ 23%] Building CXX object example/CMakeFiles/gamma.dir/gamma/gamma.cpp.o\n"
    "make[2]: *** [example/CMakeFiles/gamma.dir/build.make:76: "
    "example/CMakeFiles/gamma.dir/gamma/gamma.cpp.o] Error 1\n"
    "make[1]: *** [CMakeFiles/Makefile2:233: example/CMakeFiles/gamma.dir/all] Error 2\n"
)
NINJA_ERROR = "FAILED: CMakeFiles/tool.dir/tool/main.cpp.o \n/usr/bin/c++ -o ...\n"


def _tree() -> Tree:
    files = {
        "CMakeLists.txt": TOP,
        "example/CMakeLists.txt": EXAMPLES,
        "src/core.cpp": "int core;\n",
        "src/util.cpp": "int util;\n",
        "src/extra.cpp": "int extra;\n",
        "tool/main.cpp": "int main() {}\n",
        "include/shared.h": "#pragma once\n",
    }
    files |= {f"example/{n}/{n}.cpp": f"// {n}\n" for n in ("alpha", "beta", "gamma", "delta")}
    return Tree.of({p: Entry("file", d.encode(), text=True) for p, d in files.items()})


def test_targets_are_read_from_literal_commands_and_foreach_lists() -> None:
    found, unsure = ct.targets(_tree())
    assert sorted(found) == ["alpha", "beta", "core", "delta", "extra", "gamma", "tool"]
    assert not unsure  # commented and bracket-quoted ``add_executable`` are not commands
    assert found["core"].sources == {"src/core.cpp", "src/util.cpp"}
    assert found["gamma"].sources == {"example/gamma/gamma.cpp"}
    assert found["tool"].links == {"PRIVATE", "core"}
    assert found["beta"].links == {"pthread"}


def test_the_failing_target_comes_from_make_or_ninja_error_lines() -> None:
    assert ct.failing_targets(["all good\n", MAKE_ERROR]) == ["gamma"]
    assert ct.failing_targets([NINJA_ERROR]) == ["tool"]
    # progress lines name targets too, but only error lines count
    assert ct.failing_targets(["Building CXX object x/CMakeFiles/alpha.dir/a.cpp.o\n"]) == []


def test_every_target_but_the_failing_one_and_what_it_links_goes_with_its_sources() -> None:
    tree = _tree()
    assert ct.needless(tree, [NINJA_ERROR]) == ["alpha", "beta", "delta", "extra", "gamma"]
    names = ct.needless(tree, [MAKE_ERROR])
    assert names == ["alpha", "beta", "core", "delta", "extra", "tool"]
    cut = ct.without_targets(tree, names, lambda p: False)
    assert sorted(cut.paths) == [
        "CMakeLists.txt",
        "example/CMakeLists.txt",
        "example/gamma/gamma.cpp",
        "include/shared.h",
    ]
    example = cut["example/CMakeLists.txt"].data.decode()
    assert "gamma" in example and not any(n in example for n in ("alpha", "beta", "delta"))
    assert "target_link_libraries" not in example and "foreach" in example
    top = cut["CMakeLists.txt"].data.decode()
    for gone in ("add_library", "add_executable(tool", "set_target_properties", "tool extra"):
        assert gone not in top, gone
    # lists CMake refuses empty go whole once every target they name goes
    assert "install(" not in top and "add_dependencies(" not in top


def test_a_mention_in_another_file_goes_and_a_partial_list_keeps_the_rest() -> None:
    top = TOP + "install(TARGETS alpha gamma RUNTIME DESTINATION bin)\n"
    tree = _tree().replace("CMakeLists.txt", top.encode())
    cut = ct.without_targets(tree, ["alpha"], lambda p: False).entries["CMakeLists.txt"].data
    assert b"install(TARGETS gamma RUNTIME DESTINATION bin)" in cut  # defined in example/
    both = ct.without_targets(tree, ["alpha", "gamma"], lambda p: False)
    assert b"RUNTIME DESTINATION" not in both.entries["CMakeLists.txt"].data


def test_a_source_another_target_lists_stays_and_protected_paths_are_not_touched() -> None:
    tree = _tree().replace(
        "CMakeLists.txt", (TOP + "add_executable(twin tool/main.cpp)\n").encode()
    )
    cut = ct.without_targets(tree, ["tool"], lambda p: False)
    assert "tool/main.cpp" in cut.paths  # twin still lists it
    kept = ct.without_targets(_tree(), ["tool"], lambda p: p == "tool/main.cpp")
    assert "tool/main.cpp" in kept.paths
    frozen = ct.without_targets(_tree(), ["alpha"], lambda p: p == "example/CMakeLists.txt")
    assert frozen["example/CMakeLists.txt"].data == EXAMPLES.encode()
    assert "example/alpha/alpha.cpp" in frozen.paths  # its target stays whole


def test_unresolved_names_keep_their_targets_and_nothing_is_proposed_without_an_error() -> None:
    tree = _tree().replace("CMakeLists.txt", (TOP + "add_executable(${NAME} other.cpp)\n").encode())
    _, unsure = ct.targets(tree)
    assert unsure == {"${NAME}"}
    assert ct.needless(tree, ["no build error here\n"]) == []
    assert ct.needless(tree, ["make: *** [CMakeFiles/ghost.dir/all] Error 2\n"]) == []


def test_hostile_cmake_files_are_refused_or_bounded() -> None:
    for bad in (b'add_executable("open', b"add_executable(a b", b"not a command", b"x(#[[ )"):
        assert cmakelex.commands(bad) is None, bad
    many = b"set(A 1)\n" * (cmakelex.MAX_COMMANDS + 5)
    assert cmakelex.commands(many) is None
    big = Tree.of(
        {"CMakeLists.txt": Entry("file", b"add_executable(a a.c)\n" + b"#" * ct.MAX_BYTES)}
    )
    assert ct.targets(big) == ({}, set())
    deep = b"if(" + b"(" * 50_000 + b")" * 50_000 + b")\n"
    started = time.monotonic()
    assert cmakelex.commands(deep) is not None
    assert time.monotonic() - started < 5


def test_well_formed_reads_blocks_closing_in_order_and_guards_cmake_candidates() -> None:
    from repomin.passes.textedit import syntax_guard

    assert cmakelex.well_formed(EXAMPLES.encode()) and cmakelex.well_formed(TOP.encode())
    broken = EXAMPLES.replace("endforeach()\n", "").encode()
    crossed = b"if(A)\nforeach(x a)\nendif()\nendforeach()\n"
    split = EXAMPLES.replace("    gamma)\n", "").encode()  # set( without its )
    for bad in (broken, crossed, split):
        assert not cmakelex.well_formed(bad)
    guard = syntax_guard("example/CMakeLists.txt", EXAMPLES.encode())
    assert guard(EXAMPLES.replace("    beta  # a comment\n", "").encode())
    assert not guard(broken) and not guard(split)
    assert syntax_guard("notes.txt", EXAMPLES.encode())(broken)  # not a CMake file: no check
    unread = b"if(A)\n"  # a file that does not read gets no check (its failure may be that)
    assert syntax_guard("CMakeLists.txt", unread)(broken)
    assert cmakelex.is_cmake("cmake/Find.cmake") and not cmakelex.is_cmake("CMakeLists.txt.in")
