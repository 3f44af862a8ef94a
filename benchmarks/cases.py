"""Benchmark cases: source trees, each with its command and failure contract.

A :class:`Case` writes its source tree into an empty directory (``build``) and names the
contract every tool must preserve. Generated cases are Python repositories of several shapes
(nested, flat, deep) and sizes (100 to 20,000 files) in which ``main.py`` imports three modules
from different folders and raises; the flaky variants raise only when ``random() < 0.6``, seeded
from ``os.urandom``. Every generated tree is a pure function of the case name, so two runs (and
two versions) reduce identical inputs. The ``sdist`` case is a real third-party source tree
fetched at run time with ``pip download`` whose own test fails on Python 3.11. ``single_file``
cases are one file, so the single-file peers (C-Vise, picire, Lithium) apply too.
"""

from __future__ import annotations

import hashlib
import json
import random
import shlex
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from interesting import Contract

#: The interpreter every generated command uses: absolute, so no shim runs per sample.
PYTHON = str(Path(sys.executable).resolve())

#: Probability with which a flaky case fails when everything it needs is present.
FLAKY_RATE = 0.6


class CaseUnavailable(Exception):
    """The case cannot be built here (e.g. the registry cannot be reached)."""


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    description: str
    contract: Contract
    build: Callable[[Path], None]
    flaky: bool = False
    single_file: str | None = None
    quick: bool = False
    cap_quick: float = 45.0
    cap_full: float = 120.0
    ideal_files: int | None = None
    #: Tools run on this case in ``--quick`` mode (None: every tool that applies).
    quick_tools: tuple[str, ...] | None = None
    #: Extra ``repomin reduce`` options the case needs (e.g. ``--no-default-ignores``).
    repomin_args: tuple[str, ...] = ()
    #: What kind of real case this is (``python-import``, ``npm``, ``java``, ``c``, ...).
    kind: str = "generated"
    #: The hand-made minimum: writes it into ``dest`` from the unreduced tree ``source``.
    expert: Callable[[Path, Path], None] | None = None
    #: Files and bytes of that minimum (checked against ``expert`` by ``real_cases.py``).
    expert_files: int | None = None
    expert_bytes: int | None = None
    #: What the minimum holds, in a sentence.
    expert_note: str = ""

    def cap(self, quick: bool) -> float:
        return self.cap_quick if quick else self.cap_full


# -- generated Python repositories ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shape:
    files: int
    depth: int
    branching: int
    functions: tuple[int, int] = (3, 10)
    data_fraction: float = 0.15


def _directories(shape: Shape) -> list[str]:
    """Every package directory, breadth first, under ``pkg``."""
    dirs = ["pkg"]
    level = ["pkg"]
    for depth in range(shape.depth):
        nxt = [f"{d}/{chr(ord('a') + depth)}{i}" for d in level for i in range(shape.branching)]
        dirs += nxt
        level = nxt
    return dirs


def _filler_function(rng: random.Random, name: str) -> str:
    a, b, c, d = (rng.randrange(2, 97) for _ in range(4))
    return (
        f"def {name}(x):\n"
        f'    """Helper {name}: arithmetic nobody calls."""\n'
        f"    y = x * {a} + {b}\n"
        f"    if y % {c} == 0:\n"
        f"        return y // {c}\n"
        f"    return y - {d}\n"
    )


def _module(rng: random.Random, stem: str, shape: Shape, needed: tuple[str, int] | None) -> str:
    count = rng.randint(*shape.functions)
    parts = [f'"""Module {stem}."""\n', "import math\n"]
    names = [f"{stem}_f{j}" for j in range(count)]
    slot = rng.randrange(count + 1)
    for j, name in enumerate(names):
        if needed is not None and j == slot:
            parts.append(_needed_function(*needed))
        parts.append(_filler_function(rng, name))
    if needed is not None and slot == count:
        parts.append(_needed_function(*needed))
    parts.append(f"CONSTANT_{stem.upper()} = {rng.randrange(1000)}\n")
    return "\n\n".join(parts)


def _needed_function(name: str, factor: int) -> str:
    return f"def {name}(x):\n    return x * {factor} + 1\n"


def _data_file(rng: random.Random, stem: str) -> tuple[str, str]:
    if rng.random() < 0.5:
        payload = {f"key{i}": rng.randrange(10**6) for i in range(rng.randint(5, 40))}
        return f"{stem}.json", json.dumps(payload, indent=2) + "\n"
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "lambda", "kappa"]
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(rng.randint(5, 30))]
    return f"{stem}.txt", "\n".join(lines) + "\n"


NEEDED = (("alpha", 7), ("beta", 11), ("gamma", 13))


def expected_value() -> int:
    """What ``main.py`` computes from the three needed functions (part of the contract)."""
    return sum(factor * arg + 1 for (_, factor), arg in zip(NEEDED, (3, 4, 5), strict=True))


def _calls() -> str:
    return " + ".join(f"{func}({arg})" for (func, _), arg in zip(NEEDED, (3, 4, 5), strict=True))


def _main_body(rng: random.Random, flaky: bool) -> list[str]:
    """Filler helpers, then ``main()`` computing the value and raising (or sometimes not)."""
    lines = [_filler_function(rng, f"main_helper{j}") for j in range(12)]
    lines += [
        "def main():",
        '    settings = {"verbose": False, "retries": 3}',
        f"    value = {_calls()}",
        "    if settings['verbose']:",
        "        print('computed', value)",
    ]
    if flaky:
        lines += [
            "    rng = random.Random(os.urandom(16))",
            f"    if rng.random() < {FLAKY_RATE}:",
            '        raise RuntimeError(f"BOOM {value}")',
            "    print('passed this time')",
        ]
    else:
        lines.append('    raise RuntimeError(f"BOOM {value}")')
    lines += ["", "", 'if __name__ == "__main__":', "    main()", ""]
    return lines


def _main_py(rng: random.Random, imports: list[tuple[str, str]], flaky: bool) -> str:
    lines = ['"""Entry point of the generated project."""', "import os", "import random", ""]
    lines += [f"from {module} import {name}" for module, name in imports]
    lines.append("")
    return "\n".join(lines + _main_body(rng, flaky))


def build_python_repo(root: Path, name: str, shape: Shape, flaky: bool) -> None:
    """Write a generated repository of exactly ``shape.files`` files into ``root``."""
    rng = random.Random(hashlib.sha256(name.encode()).digest())
    dirs = _directories(shape)
    deepest = [d for d in dirs if d.count("/") == shape.depth]
    # Needed modules sit in three different top-level branches (or the one flat folder).
    if shape.depth == 0:
        homes = ["pkg", "pkg", "pkg"]
    else:
        step = max(1, len(deepest) // 3)
        homes = [deepest[i * step + rng.randrange(step)] for i in range(3)]
    files: dict[str, str] = {}
    for d in dirs:
        files[f"{d}/__init__.py"] = f'"""Package {d.replace("/", ".")}."""\n'
    files["README.md"] = "# Generated project\n\nRun `python main.py`.\n"
    imports: list[tuple[str, str]] = []
    for (func, factor), home in zip(NEEDED, homes, strict=True):
        stem = f"needed_{func}"
        files[f"{home}/{stem}.py"] = _module(rng, stem, shape, (func, factor))
        imports.append((f"{home.replace('/', '.')}.{stem}", func))
    files["main.py"] = _main_py(rng, imports, flaky)
    remaining = shape.files - len(files)
    if remaining < 0:
        raise ValueError(f"shape {shape} has more directories than files")
    for i in range(remaining):
        d = rng.choice(dirs)
        stem = f"mod{i:05d}"
        if rng.random() < shape.data_fraction:
            fname, text = _data_file(rng, stem)
            files[f"{d}/{fname}"] = text
        else:
            files[f"{d}/{stem}.py"] = _module(rng, stem, shape, None)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _single_file_program(root: Path, name: str, functions: int, flaky: bool) -> None:
    """One Python file: many functions, ``main`` needs three of them."""
    rng = random.Random(hashlib.sha256(name.encode()).digest())
    parts = ['"""A single-file program."""', "import os", "import random", ""]
    needed_slots = iter(sorted(rng.sample(range(functions), 3)))
    slot = next(needed_slots)
    needed = iter(NEEDED)
    for j in range(functions):
        if j == slot:
            parts.append(_needed_function(*next(needed)))
            slot = next(needed_slots, -1)
        parts.append(_filler_function(rng, f"helper{j}"))
    (root / "prog.py").write_text("\n".join(parts + _main_body(rng, flaky)), encoding="utf-8")


def _python_contract(entry: str, timeout: float = 20.0) -> Contract:
    return Contract(
        command=f"{shlex.quote(PYTHON)} {entry}",
        match=rf"RuntimeError: BOOM {expected_value()}\b",
        timeout=timeout,
    )


def _generated(
    name: str,
    shape: Shape,
    *,
    flaky: bool = False,
    quick: bool = False,
    cap_quick: float = 45.0,
    cap_full: float = 120.0,
) -> Case:
    kind = "flaky (fails in ~60% of runs)" if flaky else "deterministic"
    return Case(
        name=name,
        description=(
            f"{shape.files} files, depth {shape.depth}, branching {shape.branching}; "
            f"main.py imports 3 modules and raises; {kind}"
        ),
        contract=_python_contract("main.py"),
        build=lambda root: build_python_repo(root, name, shape, flaky),
        flaky=flaky,
        quick=quick,
        cap_quick=cap_quick,
        cap_full=cap_full,
        ideal_files=4,
    )


# -- a real third-party source tree ---------------------------------------------------------

#: An old release whose own HTTP utilities test fails on Python >= 3.10: ``httputil`` subclasses
#: ``collections.MutableMapping``, an alias removed from ``collections``.
SDIST_PACKAGE = ("tornado", "4.5.3")
SDIST_TEST = "tornado.test.httputil_test"


def fetch_sdist(package: str, version: str, cache: Path) -> Path:
    """The sdist archive of ``package==version``, ``.tar.gz`` or ``.zip`` (downloaded once into
    ``cache``; names compared without case, as old sdists spell them either way)."""
    cache.mkdir(parents=True, exist_ok=True)
    for pattern in (f"{package}-{version}.tar.gz", f"{package}-{version}.zip"):
        found = sorted(p for p in cache.iterdir() if p.name.lower() == pattern.lower())
        if found:
            return found[0]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--disable-pip-version-check",
                "-d",
                tmp,
                f"{package}=={version}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        archives = [p for p in Path(tmp).iterdir() if p.name.endswith((".tar.gz", ".zip"))]
        if proc.returncode != 0 or not archives:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise CaseUnavailable(f"pip download {package}=={version} failed: {tail[0]}")
        target = cache / archives[0].name
        archives[0].replace(target)
        return target


def build_sdist(root: Path, cache: Path) -> None:
    archive = fetch_sdist(*SDIST_PACKAGE, cache)
    with tarfile.open(archive) as tar:
        top = f"{SDIST_PACKAGE[0]}-{SDIST_PACKAGE[1]}/"
        members = [m for m in tar.getmembers() if m.name.startswith(top) and m.isfile()]
        for member in members:
            rel = member.name[len(top) :]
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                continue
            target.write_bytes(source.read())


def sdist_case(cache: Path) -> Case:
    package, version = SDIST_PACKAGE
    return Case(
        name=f"sdist-{package}-{version}",
        description=(
            f"{package} {version} sdist (pip download at run time); its own "
            f"{SDIST_TEST} fails on Python 3.11 with an AttributeError"
        ),
        contract=Contract(
            command=f"{shlex.quote(PYTHON)} -m unittest {SDIST_TEST}",
            match=r"AttributeError: module 'collections' has no attribute 'MutableMapping'",
            timeout=30.0,
        ),
        build=lambda root: build_sdist(root, cache),
        cap_quick=45.0,
        cap_full=45.0,
    )


# -- the suite -------------------------------------------------------------------------------


def generated_cases(cache: Path) -> list[Case]:
    """The generated cases and the tornado sdist, in run order (quick cases first); with the
    real cases they make the suite (:func:`suite.all_cases`).

    Caps keep the full suite under 30 minutes on 2 cores: every tool that does not finish
    runs until its cap, and shrinkray runs twice (default and ``--no-restart``).
    """
    return [
        _generated(
            "nested-500-det",
            Shape(files=500, depth=3, branching=4),
            quick=True,
            cap_quick=45.0,
            cap_full=60.0,
        ),
        Case(
            name="single-file-det",
            description="one 1,500-line Python file; main needs 3 of 250 functions; deterministic",
            contract=_python_contract("prog.py"),
            build=lambda root: _single_file_program(root, "single-file-det", 250, False),
            single_file="prog.py",
            quick=True,
            cap_quick=20.0,
            cap_full=30.0,
            ideal_files=1,
            quick_tools=("repomin", "cvise", "picire"),
        ),
        _generated("nested-100-det", Shape(files=100, depth=2, branching=3), cap_full=30.0),
        _generated(
            "nested-500-flaky",
            Shape(files=500, depth=3, branching=4),
            flaky=True,
            cap_full=75.0,
        ),
        _generated("flat-2000-det", Shape(files=2000, depth=0, branching=1), cap_full=60.0),
        _generated(
            "deep-5000-det",
            Shape(files=5000, depth=9, branching=2, functions=(2, 6)),
            cap_full=60.0,
        ),
        _generated(
            "nested-20000-det",
            Shape(files=20000, depth=4, branching=6, functions=(1, 4)),
            cap_full=75.0,
        ),
        sdist_case(cache),
    ]


def select(cases: list[Case], names: list[str] | None, quick: bool) -> list[Case]:
    if names:
        by_name = {c.name: c for c in cases}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise SystemExit(f"unknown case {unknown[0]!r}; available: {', '.join(by_name)}")
        return [by_name[n] for n in names]
    return [c for c in cases if c.quick] if quick else cases
