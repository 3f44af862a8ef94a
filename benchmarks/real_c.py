"""Real C cases: Debian source packages (``apt-get source`` at run time) built with their own
build scripts, plus a small driver linked against the static library that crashes inside it.

* ``c-cjson-1.7.15``: cJSON 1.7.15 built with its ``Makefile``; the driver passes a missing
  optional string to ``cJSON_SetValuestring``, which dereferences it (SIGSEGV inside the
  library, exit 139 through the shell).
* ``c-zlib-1.2.13``: zlib 1.2.13 (110 files) configured with its ``./configure --static`` and
  built with ``make libz.a``; a log writer's error path closes its ``gzFile`` and the caller
  closes it again: the second ``gzclose`` frees zlib's state twice and glibc aborts (SIGABRT,
  exit 134 through the shell).
"""

from __future__ import annotations

from pathlib import Path

from cases import Case
from interesting import Contract
from real_fetch import debian_orig, extract, extract_debian, listed_expert

CJSON = ("cjson", "1.7.15-1+deb12u4")
ZLIB = ("zlib", "1:1.2.13.dfsg-1")

DRIVE_C = """\
/* Renames the profile of a settings document with cJSON's setter. */
#include <stdio.h>
#include "cJSON.h"

static const char settings[] =
    "{\\"profile\\": {\\"name\\": \\"default\\", \\"theme\\": \\"dark\\"}}";

int main(void)
{
    cJSON *root = cJSON_Parse(settings);
    cJSON *profile = cJSON_GetObjectItemCaseSensitive(root, "profile");
    cJSON *name = cJSON_GetObjectItemCaseSensitive(profile, "name");
    /* the new name comes from an optional field this document does not have */
    const char *wanted =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(profile, "display_name"));
    char *out;
    printf("renaming profile %s\\n", cJSON_GetStringValue(name));
    fflush(stdout);
    cJSON_SetValuestring(name, wanted);
    out = cJSON_Print(root);
    puts(out);
    cJSON_free(out);
    cJSON_Delete(root);
    return 0;
}
"""


def build_cjson(root: Path, cache: Path) -> None:
    extract(debian_orig(*CJSON, cache), root)
    (root / "drive.c").write_text(DRIVE_C, "utf-8")


ZLIB_DRIVE_C = """\
/* Writes a compressed event log; the writer's error path closes the file, and so does main. */
#include <stdio.h>
#include "zlib.h"

static int write_log(gzFile out, const char *line)
{
    if (gzputs(out, line) < 0 || gzflush(out, Z_SYNC_FLUSH) != Z_OK) {
        gzclose(out);
        return -1;
    }
    return 0;
}

int main(void)
{
    gzFile out = gzopen("events.log.gz", "wb");
    if (out == NULL)
        return 1;
    write_log(out, "started\\n");
    printf("closing events.log.gz\\n");
    fflush(stdout);
    gzclose(out);
    gzclose(out);
    return 0;
}
"""


def build_zlib(root: Path, cache: Path) -> None:
    extract_debian(debian_orig(*ZLIB, cache), root)
    (root / "drive.c").write_text(ZLIB_DRIVE_C, "utf-8")


def c_cases(real: Path) -> list[Case]:
    return [
        Case(
            name="c-cjson-1.7.15",
            description=(
                "Debian's cJSON 1.7.15 source (apt-get source at run time) built with make; "
                "a driver crashes inside cJSON_SetValuestring (SIGSEGV)"
            ),
            contract=Contract(
                command="make -s all && gcc -o drive drive.c libcjson.a -lm && ./drive",
                match=r"renaming profile default",
                exit_code=139,
                timeout=60.0,
            ),
            build=lambda root: build_cjson(root, real),
            cap_quick=120.0,
            cap_full=420.0,
            kind="c",
            **CJSON_EXPERT,
        ),
        Case(
            name="c-zlib-1.2.13",
            description=(
                "Debian's zlib 1.2.13 source (apt-get source at run time), ./configure --static "
                "&& make libz.a; a driver's second gzclose aborts in free (SIGABRT)"
            ),
            contract=Contract(
                command=(
                    "./configure --static >/dev/null && make -s libz.a && "
                    "gcc -o drive drive.c libz.a && ./drive"
                ),
                match=r"closing events\.log\.gz",
                exit_code=134,
                timeout=120.0,
            ),
            build=lambda root: build_zlib(root, real),
            cap_full=300.0,
            kind="c",
            **ZLIB_EXPERT,
        ),
    ]


# -- the hand-made minima ------------------------------------------------------------------------

CJSON_EXPERT = listed_expert(
    "c-cjson-1.7.15",
    4,
    3362,
    "member-level, by deletion only (whole lines, parts of lines, indentation): the Makefile "
    "cut to the libcjson.a rule under `all` (make's built-in .c.o, no flags); the driver cut "
    "to parse, two lookups, the printf and the setter call, its JSON without spaces; cJSON.h "
    "cut to the struct (child, valuestring), cJSON_bool and the four prototypes the driver "
    "calls; cJSON.c cut to the string.h/stdlib.h includes, a one-member hooks struct (malloc), "
    "New_Item without memset, a parse buffer (content, offset, hooks), a parse_value that "
    "tells a string from an object, an escape-free parse_string, a one-member parse_object, "
    "a lookup that returns the first child, GetStringValue without its type check and "
    "SetValuestring cut to its `strlen(valuestring) <= strlen(...)` test, where it still "
    "crashes in strlen(NULL) (the parse functions that lost their returns rely on make's "
    "unoptimised build; numbers, arrays, escapes, printing, whitespace skipping, "
    "bounds checks, errors, Delete and all other API deleted). Until 2026-12-07 the minimum "
    "kept cJSON.c and cJSON.h whole (4 files / 94,284 B, an upper bound)",
)
ZLIB_EXPERT = listed_expert(
    "c-zlib-1.2.13",
    7,
    1127,
    "member-level, by deletion only: configure cut to its `sed < Makefile.in > Makefile` "
    "line, Makefile.in cut to gzclose.o gzlib.o gzwrite.o and the libz.a rule (make's "
    "built-in .c.o), the driver cut to gzopen, printf and the two gzclose; gzguts.h cut to "
    "the zlib.h/stdlib.h includes, GZBUFSIZE and a gz_state of size, want and out; gzlib.c "
    "to a gz_open that allocates the state (size 0, want GZBUFSIZE) and gzopen; gzwrite.c to "
    "gz_init (malloc of the out buffer, size = want), gz_comp (its `size == 0 && gz_init` "
    "test) and gzclose_w (gz_comp, free(state->out); its free(state) deleted, so the second "
    "close reads a live state); gzclose.c to gzclose calling "
    "gzclose_w. The second gzclose still frees the 8 KiB out buffer gz_init allocated a "
    "second time and glibc aborts; the deflate, inflate, crc32, adler32, trees and zutil "
    "objects, the file I/O and the read side are gone (zlib.h and zconf.h come from "
    "/usr/include: zlib1g-dev is installed here). Until 2026-12-07 the minimum kept the 12 C "
    "files and 9 headers whole (24 files / 953,833 B, an upper bound)",
)
