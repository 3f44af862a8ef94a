"""A real TypeScript case: an old compiler against today's Node type definitions.

``ts-types-node-20``: a small CLI pinned to TypeScript 3.9.10 (``tsc`` from npm) gets
``@types/node`` 20.11.30 (both installed with ``npm install`` at run time, 264 files in
``node_modules``). ``tsc -p .`` loads the type definitions automatically, and they use syntax
newer than 3.9 understands: the build fails inside the dependency's ``crypto.d.ts``
(``error TS1110: Type expected``), not in the project's own code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cases import Case
from interesting import Contract
from real_fetch import listed_expert, npm_project

TS_PACKAGES = ("typescript@3.9.10", "@types/node@20.11.30")
TS_BEFORE = "2026-11-01"

MANIFEST = (
    '{\n  "name": "line-count",\n  "version": "1.0.0",\n  "private": true,\n'
    '  "scripts": {\n    "build": "tsc -p ."\n  }\n}\n'
)

TSCONFIG = """\
{
  "compilerOptions": {
    "target": "es2019",
    "module": "commonjs",
    "strict": true,
    "outDir": "dist"
  },
  "include": ["src"]
}
"""

INDEX_TS = """\
import { readFileSync } from "fs";

/** The number of lines of a text file. */
export function lineCount(path: string): number {
  return readFileSync(path, "utf8").split("\\n").length;
}
"""


def build_ts(root: Path, cache: Path) -> None:
    project = npm_project(cache, TS_PACKAGES, TS_BEFORE, MANIFEST)
    shutil.copytree(project / "node_modules", root / "node_modules", symlinks=True)
    shutil.copy2(project / "package.json", root / "package.json")
    (root / "tsconfig.json").write_text(TSCONFIG, "utf-8")
    (root / "src").mkdir()
    (root / "src" / "index.ts").write_text(INDEX_TS, "utf-8")


def ts_cases(real: Path) -> list[Case]:
    return [
        Case(
            name="ts-types-node-20",
            description=(
                "TypeScript 3.9.10 + @types/node 20.11.30 (npm install at run time, 264 "
                "files); tsc -p . fails inside node_modules/@types/node/crypto.d.ts"
            ),
            contract=Contract(
                command="node node_modules/typescript/bin/tsc -p .",
                match=r"node_modules/@types/node/crypto\.d\.ts\(\d+,\d+\): error TS1110",
                timeout=120.0,
            ),
            build=lambda root: build_ts(root, real),
            cap_full=300.0,
            repomin_args=("--no-default-ignores",),
            kind="ts",
            **TS_EXPERT,
        ),
    ]


# -- the hand-made minimum -----------------------------------------------------------------------

TS_EXPERT = listed_expert(
    "ts-types-node-20",
    6,
    4803325,
    "tsc's bin and lib/tsc.js whole (no lib.*.d.ts: tsc then also reports missing global "
    "types), @types/node/index.d.ts cut to its crypto reference, crypto.d.ts cut to "
    "type UUID = `${string}`;, tsconfig.json cut to {} and an empty src/index.ts (an input)",
)
