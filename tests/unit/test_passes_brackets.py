"""The ``brackets`` pass: lexer, elements of C-like blocks and JSON containers, parentheses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repomin.passes.brackets import DeleteBrackets, elements, lex
from repomin.tree import Tree
from tests.unit._pass_harness import reduce_in_process, reduce_with_reduction, text_tree

C_SOURCE = """#include <stdio.h>
#include <stdlib.h>

/* helper */
static int add(int a, int b) {
    return a + b;
}

struct point {
    int x;
    int y;
};

int main(void) {
    int v = add(1, 2);
    if (v > 2) {
        printf("x { not a block");
        abort();
    } else {
        puts("fine");
    }
    return 0;
}
"""


def balanced_with_abort(tree: Tree) -> bool:
    data = tree["m.c"].data
    return b"abort();" in data and b"int main" in data and lex(data, "m.c") is not None


def test_lexer_skips_strings_comments_and_char_literals() -> None:
    data = b"a('{', \"}\" /* ( */) // [\n{ b[1]; }"
    lexed = lex(data, "x.c")
    assert lexed is not None
    assert sorted((data[o : o + 1], data[c : c + 1]) for o, c in lexed.pairs.items()) == [
        (b"(", b")"),
        (b"[", b"]"),
        (b"{", b"}"),
    ]
    assert lex(b"{ ( }", "x.c") is None
    assert lex(b"/* open", "x.c") is None


def test_rust_lifetimes_are_not_strings() -> None:
    assert lex(b"fn f<'a>(x: &'a str) -> &'a str { x }", "x.rs") is not None


def test_c_elements_take_headers_and_directives() -> None:
    data = C_SOURCE.encode()
    lexed = lex(data, "m.c")
    assert lexed is not None
    units = elements(data, lexed, 0, len(data), ";", True)
    texts = [data[u.start : u.end].strip().split(b"\n")[-1] for u in units]
    assert texts[:2] == [b"#include <stdio.h>", b"#include <stdlib.h>"]
    assert [u.line for u in units] == [1, 2, 4, 9, 14]


def test_reduces_c_to_the_failing_branch() -> None:
    problem = reduce_in_process(DeleteBrackets(), text_tree({"m.c": C_SOURCE}), balanced_with_abort)
    out = problem.current["m.c"].data.decode()
    assert "struct point" not in out and "add(" not in out and "puts" not in out
    assert "abort();" in out and "int main" in out
    assert len(out) < len(C_SOURCE) // 3


def test_parentheses_are_emptied_but_not_conditions() -> None:
    source = "int f(int a, int b) { if (a) { g(a, b); } }\n"

    def predicate(tree: Tree) -> bool:
        return b"g(" in tree["m.c"].data and b"if (" in tree["m.c"].data

    problem = reduce_in_process(DeleteBrackets(), text_tree({"m.c": source}), predicate)
    out = problem.current["m.c"].data
    assert b"if (a)" in out and b"f()" in out and b"g()" in out


JSON_DOC = json.dumps(
    {
        "a": [1, 2, {"deep": {"bug": True, "x": [1, 2, 3]}}],
        "b": {"c": 1, "d": [4, 5]},
        "e": "s",
    },
    indent=2,
)


def has_bug(tree: Tree) -> bool:
    try:
        value = json.loads(tree["x.json"].data)
    except ValueError:
        return False
    return '"bug"' in json.dumps(value)


def test_json_reduced_and_always_valid() -> None:
    seen: list[bytes] = []

    def predicate(tree: Tree) -> bool:
        seen.append(tree["x.json"].data)
        return has_bug(tree)

    problem = reduce_in_process(DeleteBrackets(), text_tree({"x.json": JSON_DOC}), predicate)
    assert json.loads(problem.current["x.json"].data) == {"a": [{"deep": {"bug": True}}]}
    for data in seen:
        json.loads(data)  # the guard never lets an invalid document through


def test_compact_json_commas() -> None:
    problem = reduce_in_process(
        DeleteBrackets(),
        text_tree({"x.json": '{"a": 1, "bug": [1, 2], "c": {"d": 4}}'}),
        has_bug,
    )
    assert json.loads(problem.current["x.json"].data) == {"bug": []}


def test_unbalanced_and_unknown_files_untouched() -> None:
    tree = text_tree({"a.c": "int x = (1;\n", "notes.txt": "{ a; b; }\n"})
    problem = reduce_in_process(DeleteBrackets(), tree, lambda t: True)
    assert problem.proposed == 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_real_reduction_jobs(jobs: int) -> None:
    tree = text_tree({"m.c": C_SOURCE, "x.json": JSON_DOC})

    def predicate(t: Tree) -> bool:
        return balanced_with_abort(t) and has_bug(t)

    result, _ = reduce_with_reduction({"brackets": DeleteBrackets()}, tree, predicate, jobs=jobs)
    reference, _ = reduce_with_reduction({"brackets": DeleteBrackets()}, tree, predicate)
    assert result.digest == reference.digest
    assert predicate(result) and result.byte_count < tree.byte_count // 2


json_values: st.SearchStrategy[Any] = st.recursive(
    st.integers(0, 9) | st.sampled_from(["s", "bug", True, None]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["k", "bug", "v", "w"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=json_values, indent=st.sampled_from([None, 2]))
def test_property_json(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    count = text.count('"bug"')

    def predicate(tree: Tree) -> bool:
        try:
            return json.dumps(json.loads(tree["x.json"].data)).count('"bug"') == count
        except ValueError:
            return False

    tree = text_tree({"x.json": text})
    first = reduce_in_process(DeleteBrackets(), tree, predicate)
    assert predicate(first.current)
    assert first.current.byte_count <= tree.byte_count
    second = reduce_in_process(DeleteBrackets(), first.current, predicate)
    assert second.accepted == []
