"""C functions and variables nothing names: the reader of top-level items, the walk from live
mentions, and the ``refs`` pass cutting a real static library compiled by real ``gcc``."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from repomin.analysis.refs.cfunctions import MAX_NESTING, MAX_PASTED, CFile, dead_items, parse
from repomin.analysis.refs.text import without_spans
from repomin.passes.refs import RefsCut
from repomin.tree import Tree, materialise
from tests.unit._pass_harness import PredicateProblem, text_tree

needs_gcc = pytest.mark.skipif(
    not (shutil.which("gcc") and shutil.which("make") and shutil.which("ar")),
    reason="gcc, make or ar not installed",
)


def items(source: str, suffix: str = ".c") -> list[tuple[str, tuple[str, ...]]]:
    return [(i.kind, i.names) for i in parse(suffix, source.encode()).items]


def dead_names(files: dict[str, str], **kwargs: object) -> dict[str, list[str]]:
    parsed = {p: parse("." + p.rpartition(".")[2], t.encode()) for p, t in files.items()}
    out: dict[str, list[str]] = {}
    for path, dead in dead_items(parsed, **kwargs).items():  # type: ignore[arg-type]
        data = files[path].encode()
        out[path] = [data[s:e].decode() for s, e in dead.members]
    return out


def test_ansi_kr_and_macro_headed_definitions_and_declarations() -> None:
    source = """\
#include <stdio.h>
#define EXPORT(t) t
typedef struct node { int v; } node;
struct tag;
static const int table[3] = {1, 2, 3}, other = 4;
extern int counter;
int ZEXPORT deflate OF((node *n, int flush));
EXPORT(node *) make(int v);
static int twice(int x) { return 2 * x; }
int ZEXPORT old(a, b)
    int a;
    char *b;
{
    return a + (b != 0);
}
EXPORT(node *) make(int v) { static node n; n.v = twice(v); return &n; }
void (*handler(int sig))(int) { return 0; }
static void __attribute__((constructor)) init(void) { counter = 0; }
int main(void) { return old(1, 0); }
"""
    assert items(source) == [
        ("variable", ("table", "other")),
        ("variable", ("counter",)),
        ("prototype", ("ZEXPORT", "deflate", "OF")),
        ("prototype", ("EXPORT", "make")),
        ("function", ("twice",)),
        ("function", ("old",)),
        ("function", ("make",)),
        ("function", ("init",)),
        ("function", ("main",)),
    ]  # the typedef, the tag and the function returning a function pointer are no items
    pinned = [i.names for i in parse(".c", source.encode()).items if i.pinned]
    assert pinned == [("init",), ("main",)]


def test_extern_c_is_transparent_and_only_the_first_branch_counts() -> None:
    header = """\
#ifdef __cplusplus
extern "C" {
#endif
int api(int x);
#ifdef __cplusplus
}
#endif
"""
    assert items(header, ".h") == [("prototype", ("api",))]
    branches = """\
#if defined(WIDE)
long pick(long a, long b) {
#else
int pick(int a, int b) {
#endif
    return a < b ? a : b;
}
int after(void) { return 1; }
"""
    assert items(branches) == [("function", ("pick",)), ("function", ("after",))]


def test_files_it_cannot_read_are_left_whole_and_their_words_count() -> None:
    for source, suffix in [
        ("namespace n { int f() { return 1; } }", ".h"),  # C++
        ("int f(void) { return 1; /* never ends", ".c"),
        ("int f(void) { return 1;", ".c"),  # an unbalanced brace
        ("int f(void) { return 1; }", ".cpp"),
        ("{" * (MAX_NESTING + 5) + "}" * (MAX_NESTING + 5), ".c"),
    ]:
        parsed = parse(suffix, source.encode())
        assert parsed.items == (), source
    files = {
        "lib.c": "int f(void) { return 1; }\nint g(void) { return 2; }\n",
        "use.cpp": 'extern "C" int f(void);\nnamespace n { int h() { return f(); } }\n',
    }
    assert dead_names(files) == {"lib.c": ["int g(void) { return 2; }"]}


def test_the_walk_from_live_mentions() -> None:
    files = {
        "lib.h": "int used(int);\nint unused(int);\n#define WRAP(x) wrapped(x)\n"
        "#ifdef unused\n#endif\n#define gone renamed_gone\n",
        "lib.c": """\
#include "lib.h"
static int ping(int n);
static int pong(int n) { return n ? ping(n - 1) : 0; }
static int ping(int n) { return n ? pong(n - 1) : 1; }
static int helper(int x) { return x + 1; }
int used(int x) { return helper(x); }
int unused(int x) { return ping(x); }
int wrapped(int x) { return x; }
int gone(void) { return 0; }
static const char *names[] = {"a", "b"};
const char *name(int i) { return names[i]; }
""",
        "main.c": '#include "lib.h"\nint main(void) { return used(1) + WRAP(2); }\n',
    }
    dead = dead_names(files)
    # two functions that only call each other go together; a #define's own name and an #ifdef
    # are no use; a macro's body is; prototypes go with their function
    assert dead == {
        "lib.h": ["int unused(int);"],
        "lib.c": [
            "static int ping(int n);",
            "static int pong(int n) { return n ? ping(n - 1) : 0; }",
            "static int ping(int n) { return n ? pong(n - 1) : 1; }",
            "int unused(int x) { return ping(x); }",
            "int gone(void) { return 0; }",
            'static const char *names[] = {"a", "b"};',
            "const char *name(int i) { return names[i]; }",
        ],
    }
    (kept,) = [
        i.start
        for i in parse(".c", files["lib.c"].encode()).items
        if i.names == ("unused",) and i.kind == "function"
    ]  # kept by a split: what it calls stays, and so does its prototype
    assert dead_names(files, keep={("lib.c", kept)}) == {
        "lib.c": ["int gone(void) { return 0; }", 'static const char *names[] = {"a", "b"};',
                  "const char *name(int i) { return names[i]; }"],
    }  # fmt: skip
    assert dead_names(files, editable={"main.c"}) == {}


def test_a_paste_pins_the_names_it_could_form() -> None:
    files = {
        "lib.c": "#define HANDLER(n) handle_##n\nint handle_open(void) { return 1; }\n"
        "int other(void) { return 2; }\n",
        "main.c": "int main(void) { return HANDLER(open)(); }\n",
    }
    assert dead_names(files) == {"lib.c": ["int other(void) { return 2; }"]}


def test_hostile_sources_stay_bounded() -> None:
    many = "".join(f"int f{i}(void) {{ return f{i}(); }}\n" for i in range(20000))
    parsed = parse(".c", many.encode())
    assert len(parsed.items) == 20000
    assert len(dead_items({"m.c": parsed})["m.c"].members) == 20000
    assert isinstance(parse(".c", b"\x00\xff" * 1000), CFile)
    assert parse(".c", b'char *s = "never ends;\n').items == ()
    # thousands of #else branches: each read once, none inside a function counted twice
    branches = "".join(
        f"#if A{i}\nint a{i}(void);\n#else\nint b{i}(void);\n#endif\n" for i in range(5000)
    )
    assert len(parse(".h", branches.encode()).items) == 10000
    # a tree pasting more names than the bound: nothing is cut
    pastes = "".join(f"#define P{i}(x) p{i}_##x\n" for i in range(MAX_PASTED + 1))
    lib = {
        "p.h": parse(".h", pastes.encode()),
        "l.c": parse(".c", b"int lone(void) { return 0; }\n"),
    }
    assert dead_items(lib) == {}


# -- the pass on a real static library ------------------------------------------------------

MAKEFILE = """\
OBJS = text.o list.o
libdemo.a: $(OBJS)
\t$(AR) rcs $@ $(OBJS)
"""
TEXT_H = """\
#ifndef TEXT_H
#define TEXT_H
char *text_copy(const char *s);
int text_length(const char *s);
char *text_upper(const char *s);
char *text_join(const char *a, const char *b);
int text_hash(const char *s);
#endif
"""
TEXT_C = """\
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "text.h"

static const unsigned primes[4] = {31u, 37u, 41u, 43u};

int text_length(const char *s)
{
    return (int)strlen(s);  /* NULL crashes here */
}

char *text_copy(const char *s)
{
    int n = text_length(s);
    char *out = malloc((size_t)n + 1);
    memcpy(out, s, (size_t)n + 1);
    return out;
}

static char *mapped(const char *s, int (*f)(int))
{
    char *out = text_copy(s);
    for (char *p = out; *p; p++)
        *p = (char)f(*p);
    return out;
}

char *text_upper(const char *s) { return mapped(s, toupper); }

char *text_join(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    char *out = malloc(n + m + 1);
    memcpy(out, a, n);
    memcpy(out + n, b, m + 1);
    return out;
}

int text_hash(const char *s)
{
    unsigned h = 0;
    for (int i = 0; s[i]; i++)
        h = h * primes[i % 4] + (unsigned char)s[i];
    return (int)h;
}
"""
LIST_C = """\
#include <stdlib.h>
#include "text.h"

struct list { char **items; int n; };

struct list *list_new(void) { return calloc(1, sizeof(struct list)); }

int list_total(struct list *l)
{
    int total = 0;
    for (int i = 0; i < l->n; i++)
        total += text_length(l->items[i]);
    return total;
}
"""
DRIVE_C = """\
#include <stdio.h>
#include "text.h"

int main(void)
{
    const char *title = (const char *)0;  /* the title this run has none of */
    printf("copying the title\\n");
    fflush(stdout);
    return text_copy(title)[0];
}
"""
COMMAND = "make -s libdemo.a && gcc -o drive drive.c libdemo.a && ./drive"


def _tree() -> Tree:
    return text_tree(
        {"Makefile": MAKEFILE, "text.h": TEXT_H, "text.c": TEXT_C, "list.c": LIST_C,
         "drive.c": DRIVE_C}
    )  # fmt: skip


def _fails(candidate: Tree) -> bool:
    """The same failure: it builds, prints the driver's line, and dies of SIGSEGV."""
    with tempfile.TemporaryDirectory() as root:
        materialise(candidate, Path(root))
        run = subprocess.run(
            COMMAND, shell=True, cwd=root, capture_output=True, timeout=120, check=False
        )
    return run.returncode in (-11, 139) and b"copying the title" in run.stdout


@needs_gcc
def test_the_refs_pass_cuts_the_functions_in_one_build_and_keeps_the_crash() -> None:
    tree = _tree()
    assert _fails(tree)
    problem = PredicateProblem(tree, _fails)
    cut = RefsCut(COMMAND)
    cut.run(problem)
    assert problem.calls == 1  # the whole cut built and crashed the same way
    text = problem.current["text.c"].data
    assert b"text_copy" in text and b"text_length" in text
    for gone in (b"text_upper", b"mapped", b"text_join", b"text_hash", b"primes"):
        assert gone not in text and gone not in problem.current["text.h"].data, gone
    assert b"list_new" not in problem.current["list.c"].data
    assert b"list_total" not in problem.current["list.c"].data
    assert _fails(problem.current)
    calls = problem.calls
    cut.run(problem)  # the same files: nothing to propose again
    assert problem.calls == calls


@needs_gcc
def test_a_rejected_cut_splits_and_every_candidate_builds() -> None:
    # the oracle wants text_hash (as if a script called it by name): the split keeps it and
    # every candidate keeps `primes`, which it reads, so every candidate builds
    built: list[bool] = []

    def fails(candidate: Tree) -> bool:
        data = candidate["text.c"].data
        built.append(b"primes[i % 4]" not in data or b"primes[4]" in data)
        return b"int text_hash" in data and _fails(candidate)

    problem = PredicateProblem(_tree(), fails)
    RefsCut(COMMAND).run(problem)
    data = problem.current["text.c"].data
    assert b"int text_hash" in data and b"primes[4]" in data
    assert b"text_upper" not in data and b"text_join" not in data
    assert all(built) and _fails(problem.current)


def test_without_spans_leaves_no_blank_lines() -> None:
    data = b"int a;\nint b(void) { return 0; }\nint c;\n"
    (item,) = [i for i in parse(".c", data).items if i.names == ("b",)]
    assert without_spans(data, [(item.start, item.end)]) == b"int a;\nint c;\n"


@needs_gcc
def test_a_static_function_is_not_kept_by_its_namesake_in_another_file(tmp_path: Path) -> None:
    # both files have a static `helper`; only a.c's is called. b.c's caller is dead, and so is
    # b.c's helper: kept, it would be an unused static function, an error under -Werror
    files = {
        "a.c": "static int helper(int x) { return x + 1; }\n"
        "int a_api(int x) { return helper(x); }\n",
        "b.c": "#define local static\n"
        "local int helper(int x) { return x * 2; }\n"
        "int b_api(int x) { return helper(x); }\n",
        "main.c": "int a_api(int);\nint main(void) { return a_api(1) - 2; }\n",
    }
    assert dead_names(files) == {
        "b.c": ["local int helper(int x) { return x * 2; }",
                "int b_api(int x) { return helper(x); }"],
    }  # fmt: skip
    parsed = {p: parse("." + p.rpartition(".")[2], t.encode()) for p, t in files.items()}
    for path, dead in dead_items(parsed).items():
        files[path] = without_spans(files[path].encode(), dead.spans).decode()
    for path, text in files.items():
        (tmp_path / path).write_text(text)
    build = subprocess.run(
        "gcc -Wall -Werror -o prog a.c b.c main.c && ./prog",
        shell=True, cwd=tmp_path, capture_output=True, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr


def test_a_macro_body_is_a_use_once_the_macro_is_used_and_else_branches_hold_items() -> None:
    files = {
        "api.h": """\
#define getc_fast(g) ((g)->have ? (g)->next : getc_slow(g))
#define put_fast(g) put_slow(g)
#if defined(WANT64)
#  define seek seek64
#else
int seek(int where);
int other_seek(int where);
#endif
#pragma map(tell, "TELL")
""",
        "lib.c": """\
#include "api.h"
int getc_slow(int g) { return g; }
int put_slow(int g) { return g; }
int seek(int where) { return where; }
int seek64(int where) { return where; }
int tell(void) { return 0; }
int other_seek(int where) {
#if defined(FAST)
    return where;
#else
    int unused_inside;
    return where + 1;
#endif
}
""",
        "main.c": '#include "api.h"\nint main(void) { return put_fast(1); }\n',
    }
    dead = dead_names(files)
    # put_fast is used, so its body's put_slow is; getc_fast is not, nor getc_slow; the
    # prototypes of the #else branch go with their functions; a #pragma names nothing
    assert dead == {
        "api.h": ["int seek(int where);", "int other_seek(int where);"],
        "lib.c": [
            "int getc_slow(int g) { return g; }",
            "int seek(int where) { return where; }",
            "int seek64(int where) { return where; }",
            "int tell(void) { return 0; }",
            files["lib.c"][files["lib.c"].index("int other_seek") : files["lib.c"].rindex("}") + 1],
        ],
    }
    files["main.c"] = '#include "api.h"\nint main(void) { return seek(1); }\n'
    dead = dead_names(files)
    # seek is used: the macro that may rename it to seek64 makes seek64 used too
    assert "int seek64(int where) { return where; }" not in dead["lib.c"]
    assert "int seek(int where);" not in dead["api.h"]


def test_names_a_loader_or_another_language_uses_stay() -> None:
    files = {
        "ext.c": """\
static int helper(void) { return 1; }
int PyInit_fast(void) { return helper(); }
int Java_org_x_Native_call(void) { return 2; }
int looked_up(void) { return 3; }
int from_assembly(void) { return 4; }
int printed(void) { return 5; }
int unused(void) { return 6; }
""",
        "main.c": "#include <dlfcn.h>\n#include <stdio.h>\n"
        'int main(void) { puts("printed twice"); return dlsym(0, "looked_up") != 0; }\n',
        "start.s": "    call from_assembly\n",
    }
    # a literal that is one identifier names it; a sentence in a literal does not
    assert dead_names(files) == {
        "ext.c": ["int printed(void) { return 5; }", "int unused(void) { return 6; }"]
    }
