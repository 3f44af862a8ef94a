"""C/C++ references: includes with include directories, Makefile source lists."""

from __future__ import annotations

from repomin.analysis.refs import RefGraph
from tests.unit._pass_harness import text_tree


def graph(files: dict[str, str], command: str = "make && ./prog") -> RefGraph:
    return RefGraph(text_tree(files), command=command)


def test_includes_through_include_directories_and_object_lists() -> None:
    files = {
        "Makefile": "CFLAGS = -Iinclude -I ./third\nOBJS = main.o src/util.o\n"
        "prog: $(OBJS)\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $<\n",
        "main.c": '#include "util.h"\n#include <lib/api.h>\nint main(void) { return 0; }\n',
        "include/util.h": '#include "detail.h"\n',
        "include/detail.h": "",
        "third/lib/api.h": "",
        "src/util.c": '#include "util.h"\n',
        "src/dead.c": "",
        "include/dead.h": "",
    }
    g = graph(files)
    assert g.edges("main.c") == {"include/util.h", "third/lib/api.h"}
    assert "src/util.c" in g.edges("Makefile")
    assert g.unreachable() == ["include/dead.h", "src/dead.c"]


def test_quote_include_prefers_the_including_directory() -> None:
    files = {
        "a/x.c": '#include "conf.h"\nint main() {}\n',
        "a/conf.h": "",
        "b/conf.h": "",
    }
    assert graph(files, "gcc a/x.c").unreachable() == ["b/conf.h"]


def test_unknown_include_directory_falls_back_to_path_suffix() -> None:
    files = {
        "main.c": "#include <deep/h.h>\nint main() {}\n",
        "vendor/x/deep/h.h": "",
        "vendor/x/deep/other.h": "",
    }
    assert graph(files, "sh build.sh").unreachable() == ["vendor/x/deep/other.h"]


def test_computed_include_is_conservative() -> None:
    files = {
        "main.c": '#define H "a.h"\n#include H\nint main() {}\n',
        "a.h": "",
        "z.h": "",
    }
    assert graph(files).unreachable() == []


def test_cycles_missing_headers_and_header_sources() -> None:
    files = {
        "main.c": '#include "a.h"\n#include "missing.h"\nint main() {}\n',
        "a.h": '#include "b.h"\n',
        "b.h": '#include "a.h"\n',
        "b.c": "",
        "orphan.c": "",
        "orphan2.h": '#include "orphan3.h"\n',
        "orphan3.h": '#include "orphan2.h"\n',
    }
    assert graph(files, "gcc main.c b.c").unreachable() == ["orphan.c", "orphan2.h", "orphan3.h"]
    # without the command naming b.c, the header b.h still reaches its source b.c
    assert "b.c" not in graph(files, "gcc *.c").unreachable()


def test_globs_name_no_file_but_mains_are_roots() -> None:
    files = {
        "Makefile": "SRC = $(wildcard *.c)\nprog: $(SRC)\n\tcc -o prog $(SRC)\n",
        "main.c": "int main(int argc, char **argv) { return 0; }\n",
        "lib.c": "int f(void) { return 1; }\n",
    }
    assert graph(files).unreachable() == ["lib.c"]


def test_unknown_kinds_are_never_cut_and_their_mentions_count() -> None:
    files = {
        "run.sh": "gcc tools/gen.c -o gen\n",
        "tools/gen.c": "",
        "data.bin": "",
        "README.md": "see tools/doc.c",
        "tools/doc.c": "",
    }
    g = graph(files, "sh run.sh")
    assert g.unreachable() == ["tools/doc.c"]


def test_mains_are_not_roots_when_the_build_lists_its_sources() -> None:
    files = {
        "Makefile": "prog: main.c\n\tcc -o prog main.c\n",
        "main.c": "int main(void) { return 0; }\n",
        "tests/t1.c": "int main(void) { return 1; }\n",
    }
    assert graph(files).unreachable() == ["tests/t1.c"]
