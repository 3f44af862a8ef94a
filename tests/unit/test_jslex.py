"""The JavaScript lexer: bracket pairs outside strings, comments, regex and template literals."""

from __future__ import annotations

import pytest

from repomin.passes.brackets import lex as bracket_lex
from repomin.passes.jslex import lex
from repomin.passes.textedit import syntax_guard


def pairs(src: str) -> list[str]:
    data = src.encode()
    lexed = lex(data)
    assert lexed is not None
    return [src[o : c + 1] for o, c in sorted(lexed.pairs.items())]


def test_regex_literals_hide_their_brackets_and_quotes() -> None:
    src = "if (/^\\{/.test(s)) { x = s.replace(/[)}\"']/g, ''); }\n"
    assert pairs(src) == [
        "(/^\\{/.test(s))",
        "(s)",
        "{ x = s.replace(/[)}\"']/g, ''); }",
        "(/[)}\"']/g, '')",
    ]
    # C-like lexing sees the regex's brackets and gives up on the file
    assert bracket_lex(src.encode(), "a.c") is None
    assert bracket_lex(src.encode(), "a.js") is not None


def test_division_is_not_a_regex() -> None:
    src = "var a = (b) / 2 / (c[1]) / d;\nvar e = f++ / 3;\n"
    assert pairs(src) == ["(b)", "(c[1])", "[1]"]


def test_regex_after_keywords_and_operators() -> None:
    src = "function f(s) { return /}/.test(s) && typeof /{/ === 'object'; }\n"
    assert pairs(src) == ["(s)", "{ return /}/.test(s) && typeof /{/ === 'object'; }", "(s)"]


def test_template_literals_with_nested_substitutions_are_opaque() -> None:
    src = "const t = `a ${ {b: `}${ '}' }`}.b } {`;\nfoo({});\n"
    lexed = lex(src.encode())
    assert lexed is not None
    start = src.index("`")
    assert lexed.opaque[start] == src.index(";")
    assert pairs(src) == ["({})", "{}"]


def test_comments_hide_brackets() -> None:
    src = "#!/usr/bin/env node\n// {\n/* ( */ f(); /* ] */\n"
    lexed = lex(src.encode())
    assert lexed is not None and len(lexed.comments) == 3
    assert pairs(src) == ["()"]


@pytest.mark.parametrize(
    "src",
    ["f(;", "a = {]", "}", "x = 'open\n", "/* open", "t = `open ${ a }", "t = `${ ( }`", "f())"],
)
def test_what_does_not_lex(src: str) -> None:
    assert lex(src.encode()) is None


def test_the_syntax_guard_for_javascript() -> None:
    guard = syntax_guard("a.js", b"function f() { return 1; }\n")
    assert guard(b"function f() {}\n")
    assert not guard(b"function f() { return 1;\n")
    # a file that does not lex is not guarded (a failure that is a syntax error stays reducible)
    assert syntax_guard("a.js", b"f(\n")(b"f(((\n")
