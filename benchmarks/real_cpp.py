"""A real C++ case: a header-only library's own examples built by CMake with ``-Werror``.

* ``cpp-rapidjson-1.1.0``: Debian's RapidJSON 1.1.0 source (``apt-get source`` at run time;
  253 files), configured by its own ``CMakeLists.txt`` without the tests and documentation
  and built with ``make``. Its examples compile with ``-Werror -Wall``, and GCC 8 and newer
  warn about the ``memcpy`` over ``GenericValue`` members in ``document.h``
  (``-Wclass-memaccess``): the first example that instantiates it, ``filterkeydom``, fails to
  compile. No driver is added: the failure is the release's own with this compiler.
"""

from __future__ import annotations

from pathlib import Path

from cases import Case
from interesting import Contract
from real_fetch import debian_orig, extract_debian, listed_expert

RAPIDJSON = ("rapidjson", "1.1.0+dfsg2-7.1")


def build_rapidjson(root: Path, cache: Path) -> None:
    extract_debian(debian_orig(*RAPIDJSON, cache), root)


def cpp_cases(real: Path) -> list[Case]:
    return [
        Case(
            name="cpp-rapidjson-1.1.0",
            description=(
                "Debian's RapidJSON 1.1.0 source (apt-get source at run time), its examples "
                "configured by CMake and built by make with -Werror; GCC's class-memaccess "
                "warning in document.h stops the filterkeydom example"
            ),
            contract=Contract(
                command=(
                    "cmake -S . -B build -DRAPIDJSON_BUILD_TESTS=OFF -DRAPIDJSON_BUILD_DOC=OFF "
                    ">/dev/null && make -s -C build"
                ),
                match=r"document\.h:\d+:\d+: error: .*\[-Werror=class-memaccess\]",
                exit_code=2,
                timeout=300.0,
            ),
            build=lambda root: build_rapidjson(root, real),
            cap_full=600.0,
            kind="cpp",
            **RAPIDJSON_EXPERT,
        ),
    ]


# -- the hand-made minimum ---------------------------------------------------------------------

RAPIDJSON_EXPERT = listed_expert(
    "cpp-rapidjson-1.1.0",
    28,
    393103,
    "the top CMakeLists.txt cut to cmake_minimum_required, project and add_subdirectory("
    "example); example/CMakeLists.txt cut to the include directory, -Werror -Wall and the "
    "filterkeydom executable; filterkeydom.cpp and the 25 headers it includes whole (an upper "
    "bound: the templates inside the headers were not cut by hand)",
)
