"""Reading Node's V8 coverage: offsets mapped to bytes, stale or foreign scripts left out, and
the traced run collecting it on the host (needs ``node``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from repomin.analysis.trace import trace_opened_files, wrapper_script
from repomin.analysis.v8coverage import COVERAGE_DIR, counts, never_ran, read_coverage
from repomin.runners.host import HostRunner
from tests.unit._pass_harness import text_tree


def fn(start: int, end: int, count: int, *blocks: tuple[int, int, int]) -> dict[str, Any]:
    ranges = [(start, end, count), *blocks]
    return {
        "functionName": "",
        "ranges": [{"startOffset": s, "endOffset": e, "count": c} for s, e, c in ranges],
    }


def test_ascii_offsets_are_byte_offsets() -> None:
    src = b"function a() { return 1 }\nfunction b() { if (x) { y() } }\n"
    b_start = src.index(b"function b")
    block = src.index(b"{ y")
    functions = [
        fn(0, len(src), 1),
        fn(0, 25, 0),
        fn(b_start, len(src) - 1, 1, (block, block + 7, 0)),
    ]
    assert never_ran(src, functions) == {(0, 25, True), (block, block + 7, False)}


def test_utf16_offsets_are_mapped_to_bytes() -> None:
    text = "// é😀\nfunction a() {}\n"
    data = text.encode()
    units = len(text.encode("utf-16-le")) // 2  # the emoji is two UTF-16 units
    start16 = text.index("function") + 1  # one extra unit for the surrogate pair
    functions = [fn(0, units, 1), fn(start16, start16 + 15, 0)]
    ((start, end, _),) = never_ran(data, functions) or set()
    assert data[start:end] == b"function a() {}"


def test_a_byte_order_mark_is_dropped_as_node_does() -> None:
    text = "\ufeffvar a = 1;\nfunction f() {}\n"
    data = text.encode()
    body = text[1:]
    start16 = body.index("function")
    ((start, end, _),) = (
        never_ran(data, [fn(0, len(body), 1), fn(start16, start16 + 15, 0)]) or set()
    )
    assert data[start:end] == b"function f() {}"


def test_offsets_of_another_source_are_refused() -> None:
    src = b"function a() {}\n"
    assert never_ran(src, [fn(0, len(src) + 62, 1), fn(62, 77, 0)]) is None  # a wrapper
    assert never_ran(src, [fn(0, 3, 0)]) is None  # no top-level range
    assert never_ran(b"\xff\xfe", [fn(0, 2, 1)]) is None  # not UTF-8


def write(directory: Path, name: str, scripts: list[dict[str, Any]]) -> None:
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(json.dumps({"result": scripts}))


def test_read_coverage_maps_tree_files_and_intersects_processes(tmp_path: Path) -> None:
    a = "function f() {}\nfunction g() {}\n"
    tree = text_tree({"lib/a.js": a, "b.js": "x()\n"})
    root = "/sample/root"
    url = f"file://{root}/lib/a.js"
    one = [{"url": url, "functions": [fn(0, len(a), 1), fn(0, 15, 0), fn(16, 31, 0)]}]
    two = [
        {"url": url, "functions": [fn(0, len(a), 1), fn(0, 15, 0), fn(16, 31, 2)]},
        {"url": "node:internal/x", "functions": [fn(0, 5, 1)]},
        {"url": "file:///elsewhere/b.js", "functions": [fn(0, 4, 1)]},
        {"url": f"file://{root}/b.js", "functions": [fn(0, 99, 1)]},  # stale offsets
    ]
    cov = tmp_path / "cov"
    write(cov, "coverage-1.json", one)
    write(cov, "coverage-2.json", two)
    (cov / "coverage-3.json").write_text("{not json")
    found = read_coverage(cov, [root], tree)
    assert found is not None and set(found) == {"lib/a.js"}
    assert found["lib/a.js"].never == ((0, 15, True),)  # g ran in the second process
    assert found["lib/a.js"].data == a.encode()
    assert counts(found) == (1, 1)
    assert read_coverage(tmp_path / "missing", [root], tree) is None


def test_the_wrapper_sets_coverage_only_for_a_host_log() -> None:
    host = wrapper_script("node x.js", "/tmp/log", "tok", ("strace",))
    assert f'export NODE_V8_COVERAGE="$__rm_d/{COVERAGE_DIR}"' in host
    assert "${NODE_V8_COVERAGE+x}" in host  # the user's own setting wins
    assert "NODE_V8_COVERAGE" not in wrapper_script("node x.js", None, "tok", ("strace",))


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_traced_run_collects_node_coverage_on_the_host() -> None:
    app = "const lib = require('./lib');\nlib.used();\nthrow new Error('boom');\n"
    lib = (
        "exports.used = function () { if (process.env.NEVER) { console.log('no'); } };\n"
        "exports.unused = function () { console.log('never'); };\n"
    )
    tree = text_tree({"app.js": app, "lib.js": lib})
    runner = HostRunner()
    try:
        result = trace_opened_files(runner, tree, "node app.js", {}, 30, methods=("atime",))
    finally:
        runner.close()
    assert result.coverage is not None, result.reason
    record = result.coverage["lib.js"]
    texts = {lib.encode()[s:e] for s, e, _ in record.never}
    assert b"{ console.log('no'); }" in texts
    assert b"function () { console.log('never'); }" in texts
    assert not any(b"used = function" in t for t in texts)
