"""End-to-end with ``node``: the traced run's V8 coverage empties what never ran in one
accepted ``coverage`` candidate, the JavaScript search shrinks the rest, and the report (with
its ``coverage`` phase and event) validates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e._reduce import reduce_ok

LIB = """'use strict';
function unused(a) {
  if (a > 1) { return a * 2; }
  return a;
}
var Parser = function (s) { this.s = s; };
Parser.prototype = {
  peek: function () { return this.s[0]; },
  skip: function () { if (this.s.length > 1000) { throw new Error('too long'); } },
  fail: function () { throw new Error('BUG: unbalanced ' + this.s); },
  parse: function () {
    this.skip();
    if (this.peek() === '(') { this.fail(); }
    return this.s;
  },
};
module.exports = function parse(s) { return new Parser(s).parse(); };
module.exports.unused = unused;
"""
APP = "const parse = require('./lib/parse');\nconsole.log(parse('ok'));\nparse('(x');\n"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_coverage_and_the_javascript_search_end_to_end(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    (src / "lib").mkdir(parents=True)
    (src / "lib" / "parse.js").write_text(LIB)
    (src / "app.js").write_text(APP)
    (src / "README.md").write_text("a readme\n")
    out = tmp_path / "out"
    report = reduce_ok(src, out, "node app.js", "BUG: unbalanced", "--jobs", "2", final_runs=2)
    phases = {p["name"]: p for p in report["phase_statistics"]["phases"]}
    assert phases["coverage"]["accepted"] >= 1
    info = [e for e in report["events"] if e["phase"] == "coverage" and e["decision"] == "info"]
    assert info and "never-run bodies" in info[0]["description"]
    lib = (out / "lib" / "parse.js").read_text()
    assert "BUG: unbalanced" in lib
    assert "too long" not in lib and "a * 2" not in lib
    assert len(lib) < len(LIB) // 2, lib
