"""Real benchmark cases, built at run time from the package registries this machine reaches.

Each case is a real third-party tree fetched with the ordinary client (``npm install``,
``pip download``, ``apt-get source``), cached under ``CACHE/real`` (outside the repository),
plus, where the failure needs one, a small driver that triggers it deep inside the tree. When a
registry cannot be reached the case raises :class:`~cases.CaseUnavailable` and the runners skip
it with that message. Versions are pinned (npm: top-level versions and ``--before`` for the
transitive ones), so every run reduces the same tree.

The cases live in one module per kind: :mod:`real_python` (old sdists failing on Python 3.11
at import, in their own tests, and one flaky through hash randomisation), :mod:`real_pytest`
(old sdists failing under pytest: a project's own suite failing at call time, and a check made
flaky by the hash seed), :mod:`real_npm`
(projects with their whole ``node_modules``), :mod:`real_java` (Debian's Java sources compiled
whole by ``javac``), :mod:`real_c` (Debian's C sources built with their own make/configure),
:mod:`real_cpp` (a header-only C++ library's examples built by CMake with ``-Werror``),
:mod:`real_ts` (``tsc`` from npm) and :mod:`real_rust` (a crate of Debian's packaged Rust crates,
built offline by ``cargo``). :func:`real_cases` collects them; ``sdist-tornado-4.5.3``
stays in :mod:`cases`, and :func:`suite` is every real case, tornado included.

Every case records its hand-made minimum (``expert``, ``expert_files``, ``expert_bytes``,
``expert_note``): the smallest tree found by hand that deleting files and text from the
unreduced tree can reach and in which the contract still holds. ``python real_cases.py``
builds every case, checks that the unreduced tree and the minimum reproduce, and that the
minimum's size is the recorded one.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from cases import Case, CaseUnavailable, sdist_case
from real_c import CJSON, DRIVE_C, ZLIB, build_cjson, c_cases
from real_cpp import cpp_cases
from real_fetch import apt_env, debian_orig, extract, run_client
from real_java import CODEC, COMMONS_IO, DRIVER_JAVA, LANG3, java_cases
from real_npm import APP_JS, NPM_BEFORE, NPM_PACKAGES, build_npm, npm_cases, npm_tree
from real_pytest import pytest_cases
from real_python import URLLIB3, python_cases
from real_rust import rust_cases
from real_ts import ts_cases

__all__ = [
    "APP_JS",
    "CJSON",
    "CODEC",
    "COMMONS_IO",
    "DRIVER_JAVA",
    "DRIVE_C",
    "LANG3",
    "NPM_BEFORE",
    "NPM_PACKAGES",
    "URLLIB3",
    "ZLIB",
    "apt_env",
    "build_cjson",
    "build_npm",
    "debian_orig",
    "extract",
    "npm_tree",
    "real_cases",
    "run_client",
    "suite",
]

#: The first four real cases, in the order they always ran (their results stay comparable).
FIRST = ("npm-pug-express", "sdist-urllib3-1.10.4", "c-cjson-1.7.15", "java-commons-codec-1.15")


def real_cases(cache: Path) -> list[Case]:
    """Every real case of this module's kinds (not tornado, which :mod:`cases` adds itself)."""
    real = cache / "real"
    cases = [
        *npm_cases(real),
        *python_cases(real),
        *pytest_cases(real),
        *c_cases(real),
        *cpp_cases(real),
        *java_cases(real),
        *ts_cases(real),
        *rust_cases(real),
    ]
    first = [c for name in FIRST for c in cases if c.name == name]
    return first + [c for c in cases if c.name not in FIRST]


def suite(cache: Path) -> list[Case]:
    """The real suite: tornado's sdist case, then :func:`real_cases`."""
    tornado = sdist_case(cache)
    from real_python import TORNADO_EXPERT

    return [Case(**{**_fields(tornado), **TORNADO_EXPERT}), *real_cases(cache)]


def _fields(case: Case) -> dict[str, object]:
    return {name: getattr(case, name) for name in Case.__dataclass_fields__}


def tree_size(root: Path) -> tuple[int, int]:
    """Regular files (symlinks not counted) and their bytes under ``root``."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return len(files), sum(p.stat().st_size for p in files)


def check(case: Case, root: Path, tries: int) -> bool:
    """Does ``root`` show the failure (at least once in ``tries`` for a flaky case)?"""
    from interesting import run_once

    return any(run_once(case.contract, root) for _ in range(tries if case.flaky else 1))


def _main() -> int:
    """Build every case into a temporary directory; check the unreduced tree and the minimum."""
    import argparse

    parser = argparse.ArgumentParser(description=_main.__doc__)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "repomin-bench")
    parser.add_argument("--cases", default=None, help="comma-separated names")
    parser.add_argument("--no-expert", action="store_true", help="skip the minimum's check")
    args = parser.parse_args()
    wanted = set(args.cases.split(",")) if args.cases else None
    status = 0
    for case in suite(args.cache):
        if wanted and case.name not in wanted:
            continue
        with tempfile.TemporaryDirectory(prefix="real-case-") as tmp:
            root = Path(tmp) / "src"
            root.mkdir()
            try:
                case.build(root)
            except CaseUnavailable as exc:
                print(f"{case.name}: skipped: {exc}", flush=True)
                continue
            files, _ = tree_size(root)
            ok = check(case, root, 10)
            status |= 0 if ok else 1
            line = f"{case.name}: {files} files; unreduced tree reproduces: {ok}"
            if case.expert is not None and not args.no_expert:
                mini = Path(tmp) / "expert"
                mini.mkdir()
                case.expert(root, mini)
                size = tree_size(mini)
                same = size == (case.expert_files, case.expert_bytes)
                good = check(case, mini, 10)
                status |= 0 if good and same else 1
                line += (
                    f"; minimum {size[0]} files / {size[1]} B (recorded "
                    f"{case.expert_files} / {case.expert_bytes}) reproduces: {good}"
                )
            print(line, flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(_main())
