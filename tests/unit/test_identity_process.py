"""The signal and sanitizer facets on real C programs compiled and run in tmp_path: a signal
read the same whether the program died directly or through a shell's 128+N status, and the
kind of a sanitizer report."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.identity import infer_identity, observe
from tests.unit._tool_runs import facet, need, run, write

PROGRAM = """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int *volatile null_ptr;

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "uaf") == 0) {
        int *data = malloc(4 * sizeof(int));
        free(data);
        return data[1];
    }
    if (strcmp(mode, "overflow") == 0) {
        volatile int big = 2147483647, one = 1;
        printf("%d\\n", big + one);
        return 1;
    }
    if (strcmp(mode, "leak") == 0) {
        char *volatile p = malloc(16 + strlen(argv[2]));
        memset(p, 0, 16);
        p = 0;
        return 0;
    }
    if (strcmp(mode, "abort") == 0)
        abort();
    if (strcmp(mode, "exit3") == 0)
        return 3;
    *null_ptr = 42;
    return 0;
}
"""


def build(gcc: str, root: Path, name: str, *flags: str) -> Path:
    built = run(root, gcc, "-O0", "-g", *flags, "-o", name, "prog.c")
    assert built.exit_code == 0, built.output
    return root / name


@pytest.fixture(scope="session")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("proc"), {"prog.c": PROGRAM})


@pytest.fixture(scope="session")
def plain(root: Path) -> Path:
    return build(need("gcc"), root, "prog")


def sanitized(root: Path, kind: str) -> Path:
    """The program built with ``-fsanitize=kind``, skipped when this toolchain cannot."""
    gcc = need("gcc")
    name = f"prog_{kind}"
    built = run(root, gcc, "-O0", "-g", f"-fsanitize={kind}", "-o", name, "prog.c")
    if built.exit_code != 0:
        pytest.skip(f"gcc -fsanitize={kind} does not work here: {built.output.strip()[:200]}")
    probe = run(root, str(root / name), "exit3")
    if probe.exit_code != 3:
        pytest.skip(f"-fsanitize={kind} binaries do not run here: {probe.output.strip()[:200]}")
    return root / name


@pytest.fixture(scope="session")
def asan(root: Path) -> Path:
    return sanitized(root, "address")


@pytest.fixture(scope="session")
def ubsan(root: Path) -> Path:
    return sanitized(root, "undefined")


def test_direct_segfault(plain: Path) -> None:
    outcome = run(plain.parent, str(plain))
    assert outcome.exit_code == -11 and outcome.signal == 11
    assert observe(outcome) == {"signal": [{"signal": "SIGSEGV"}]}


def test_segfault_through_a_shell_is_128_plus_n(plain: Path) -> None:
    outcome = run(plain.parent, "sh", "-c", str(plain))
    assert outcome.exit_code == 139 and outcome.signal is None
    assert observe(outcome) == {"signal": [{"signal": "SIGSEGV"}]}


def test_direct_and_shell_segfaults_are_one_identity(plain: Path) -> None:
    direct = run(plain.parent, str(plain))
    shell = run(plain.parent, "sh", "-c", str(plain))
    identity = infer_identity([direct, shell])
    assert identity.notes == ()
    assert dict(identity.facets) == {"signal": ({"signal": "SIGSEGV"},)}
    assert identity.describe() == ["signal: SIGSEGV"]


def test_another_signal_does_not_match(plain: Path) -> None:
    identity = infer_identity([run(plain.parent, str(plain))])
    aborted = run(plain.parent, str(plain), "abort")
    assert observe(aborted) == {"signal": [{"signal": "SIGABRT"}]}
    assert not identity.matches(aborted)
    assert identity.mismatch(aborted) == "identity signal SIGSEGV not shown (SIGABRT)"


def test_ordinary_exit_code_is_not_a_facet(plain: Path) -> None:
    outcome = run(plain.parent, str(plain), "exit3")
    assert outcome.exit_code == 3
    assert observe(outcome) == {}
    identity = infer_identity([run(plain.parent, str(plain))])
    assert identity.mismatch(outcome) == "identity signal SIGSEGV not shown (nothing of that kind)"


def test_asan_heap_use_after_free(asan: Path) -> None:
    outcome = run(asan.parent, str(asan), "uaf")
    assert "ERROR: AddressSanitizer: heap-use-after-free" in outcome.output
    # ASan exits 1 after its report: no signal.
    assert observe(outcome) == {
        "sanitizer": [{"sanitizer": "AddressSanitizer", "error": "heap-use-after-free"}]
    }


def test_asan_segv_is_not_a_use_after_free(asan: Path) -> None:
    uaf = run(asan.parent, str(asan), "uaf")
    segv = run(asan.parent, str(asan))
    assert facet(segv, "sanitizer") == [{"sanitizer": "AddressSanitizer", "error": "SEGV"}]
    assert not infer_identity([uaf]).matches(segv)


def test_ubsan_runtime_error_head(ubsan: Path) -> None:
    outcome = run(ubsan.parent, str(ubsan), "overflow")
    assert "runtime error: signed integer overflow: 2147483647 + 1" in outcome.output
    assert facet(outcome, "sanitizer") == [
        {"sanitizer": "UndefinedBehaviorSanitizer", "error": "signed integer overflow"}
    ]


def test_leak_report_kind(asan: Path) -> None:
    outcome = run(asan.parent, str(asan), "leak", "")
    if "LeakSanitizer" not in outcome.output:
        pytest.skip(f"LeakSanitizer does not run here: {outcome.output.strip()[:200]}")
    assert "SUMMARY: AddressSanitizer: 16 byte(s) leaked" in outcome.output
    values = facet(outcome, "sanitizer")
    assert values == [{"sanitizer": "LeakSanitizer", "error": "detected"}]
