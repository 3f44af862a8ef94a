"""The node facet on real ``node`` runs in tmp_path: error class (with Node's ``[ERR_CODE]``),
message, the innermost frame inside the tree; Node's code frame is echoed source."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.echo import counted_text
from repomin.failure.identity import infer_identity, observe
from repomin.runners.base import Outcome
from tests.unit._tool_runs import Runs, facet, need, run, write

MATCH = "invoice total mismatch"

PROJECT = {
    "lib/format.js": """\
        'use strict';

        function label(order) {
          return order.customer.name.toUpperCase() + " invoice total mismatch";
        }

        module.exports = { label };
        """,
    "lib/config.js": """\
        'use strict';
        const fs = require('fs');

        function readConfig() {
          return fs.readFileSync({ path: 'config.json' });
        }

        module.exports = { readConfig };
        """,
    "main.js": """\
        'use strict';
        const { label } = require('./lib/format');
        const { readConfig } = require('./lib/config');

        class InvoiceError extends Error {
          constructor(message) {
            super(message);
            this.name = 'InvoiceError';
          }
        }

        const mode = process.argv[2];
        if (mode === 'type') {
          console.log(label({}));
        } else if (mode === 'other-type') {
          console.log(label({ customer: {} }));
        } else if (mode === 'code') {
          readConfig();
        } else if (mode === 'custom') {
          throw new InvoiceError('total 1.25 != 1.26');
        } else if (mode === 'caught') {
          try {
            label(null);
          } catch (err) {
            console.error(err);
          }
          process.exit(1);
        } else if (mode === 'assert') {
          require('assert').strictEqual(1.25, 1.26, 'invoice total mismatch');
        }
        """,
    "esm/total.mjs": """\
        export function total(items) {
          return items.reduce((sum, item) => sum + item.price, 0);
        }
        """,
    "esm/main.mjs": """\
        import { total } from './total.mjs';
        console.log(total([{ price: 1 }, null]));
        """,
}


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    return need("node"), write(tmp_path_factory.mktemp("node"), PROJECT)


@pytest.fixture(scope="session")
def runs(node: tuple[str, Path]) -> Runs:
    exe, root = node
    return Runs(
        lambda mode: (
            run(root, exe, "esm/main.mjs") if mode == "esm" else run(root, exe, "main.js", mode)
        )
    )


def only(outcome: Outcome) -> dict[str, str]:
    values = facet(outcome, "node")
    assert len(values) == 1, outcome.output
    return values[0]


def test_uncaught_type_error_in_a_required_module(runs: Runs) -> None:
    outcome = runs["type"]
    assert outcome.exit_code == 1
    assert observe(outcome) == {
        "node": [
            {
                "error_class": "TypeError",
                "message": "Cannot read properties of undefined (reading 'name')",
                # Innermost frame first in Node's stack: the module, not main.js.
                "file": "lib/format.js",
            }
        ]
    }


def test_error_code_is_part_of_the_class(runs: Runs) -> None:
    outcome = runs["code"]
    assert "TypeError [ERR_INVALID_ARG_TYPE]:" in outcome.output
    value = only(outcome)
    assert value["error_class"] == "TypeError [ERR_INVALID_ARG_TYPE]"
    assert value["message"].startswith('The "path" argument must be of type string')
    # The innermost frames are node:fs's (outside the tree).
    assert value["file"] == "lib/config.js"


def test_custom_error_class(runs: Runs) -> None:
    assert only(runs["custom"]) == {
        "error_class": "InvoiceError",
        "message": "total 1.25 != 1.26",
        "file": "main.js",
    }


def test_caught_error_printed_with_console_error(runs: Runs) -> None:
    value = only(runs["caught"])
    assert value["error_class"] == "TypeError"
    assert value["message"] == "Cannot read properties of null (reading 'customer')"
    assert value["file"] == "lib/format.js"


def test_es_module_file_urls(runs: Runs) -> None:
    outcome = runs["esm"]
    assert "file://" in outcome.output
    value = only(outcome)
    assert value["error_class"] == "TypeError"
    assert value["file"] == "esm/total.mjs"


def test_identity_tells_errors_apart(tmp_path: Path, node: tuple[str, Path]) -> None:
    exe, root = node
    baseline = run(root, exe, "main.js", "type")
    elsewhere = run(write(tmp_path, PROJECT), exe, "main.js", "type")
    identity = infer_identity([baseline])
    assert identity.matches(elsewhere)
    other = run(root, exe, "main.js", "other-type")
    assert only(other)["message"] == "Cannot read properties of undefined (reading 'toUpperCase')"
    assert not identity.matches(other)
    assert not identity.matches(run(root, exe, "main.js", "custom"))


def test_code_frame_is_echoed(runs: Runs) -> None:
    outcome = runs["type"]
    # Node prints the throwing line (which holds the text) above a caret.
    assert MATCH in outcome.output
    counted = counted_text(outcome.output)
    assert MATCH not in counted
    assert "TypeError: Cannot read properties of undefined (reading 'name')" in counted
    assert "lib/format.js:4" in counted


def test_uncaught_assertion_with_a_multiline_message(runs: Runs) -> None:
    outcome = runs["assert"]
    assert "AssertionError [ERR_ASSERTION]: invoice total mismatch" in outcome.output
    value = only(outcome)
    assert value["error_class"] == "AssertionError [ERR_ASSERTION]"
    assert value["file"] == "main.js"
