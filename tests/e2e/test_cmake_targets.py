"""A real CMake project built by real ``cmake``, ``make`` and ``gcc``: one of four programs
fails to compile under ``-Werror``. CMake names every program's source at configure time, so
no file can go alone; through the CLI, with only ``refs`` scheduled, the target cut deletes the
three programs the failing build does not need (list elements and sources) in one build, and
the payload fails with the same diagnostic."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e._reduce import accepted_descriptions, reduce_ok, write_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("cmake") and shutil.which("make") and shutil.which("gcc")),
        reason="cmake, make or gcc not installed",
    ),
]

CMAKE = """\
cmake_minimum_required(VERSION 3.10)
project(tools C)
set(CMAKE_C_FLAGS "${CMAKE_C_FLAGS} -Wall -Werror")
set(TOOLS
    one
    two
    three
    four)
foreach(tool ${TOOLS})
    add_executable(${tool} ${tool}.c)
endforeach()
add_custom_target(everything ALL DEPENDS ${TOOLS})
"""
GOOD = '#include <stdio.h>\nint main(void) { puts("{name}"); return 0; }\n'
BAD = "int main(void) {\n    int unused_total = 3;\n    return 0;\n}\n"
COMMAND = "cmake -S . -B build >/dev/null && make -C build"
#: The same build through Ninja: its error line is ``FAILED: CMakeFiles/three.dir/...``.
NINJA = "cmake -S . -B build -G Ninja >/dev/null && cmake --build build"
MATCH = r"error: unused variable .unused_total. \[-Werror=unused-variable\]"


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(COMMAND, id="make"),
        pytest.param(
            NINJA,
            id="ninja",
            marks=pytest.mark.skipif(not shutil.which("ninja"), reason="ninja not installed"),
        ),
    ],
)
def test_the_target_cut_runs_in_a_real_cmake_reduction(tmp_path: Path, command: str) -> None:
    files = {"CMakeLists.txt": CMAKE, "three.c": BAD}
    files |= {f"{n}.c": GOOD.replace("{name}", n) for n in ("one", "two", "four")}
    src = write_tree(tmp_path / "tools", files)
    # without the cut, deleting any program's source breaks the configure step
    copy = tmp_path / "copy"
    shutil.copytree(src, copy)
    (copy / "four.c").unlink()
    broken = subprocess.run(command, shell=True, cwd=copy, capture_output=True, text=True)
    assert "unused_total" not in broken.stdout + broken.stderr
    out = tmp_path / "out"
    report = reduce_ok(
        src, out, command, MATCH, "--passes", "refs", "--no-trace", "--jobs", "1", final_runs=2
    )
    payload = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert payload == ["CMakeLists.txt", "three.c"], json.dumps(report["events"], indent=1)
    accepted = accepted_descriptions(report, "refs")
    assert any("3 CMake targets the failing build does not need" in d for d in accepted)
    cmake = (out / "CMakeLists.txt").read_text()
    assert "three" in cmake and not any(n in cmake for n in ("one", "two", "four"))
    again = subprocess.run(command, shell=True, cwd=out, capture_output=True, text=True)
    assert again.returncode != 0 and "unused_total" in again.stdout + again.stderr
