"""Real Java cases: Debian's ``lib*-java`` sources (``apt-get source`` at run time), compiled
whole by ``javac`` with a small driver that hits a real exception inside the library.

* ``java-commons-codec-1.15``: the driver's ``URLCodec.decode`` call fails three calls deep
  (``DecoderException`` from ``Utils.digit16``).
* ``java-commons-lang3-3.12``: commons-lang3 3.12.0 (216 sources under ``src/main/java``); a
  job timer formats a negative duration (two log timestamps in the wrong order) and
  ``DurationFormatUtils`` rejects it through ``Validate.inclusiveBetween``.
* ``java-commons-io-2.11``: commons-io 2.11.0 (180 sources); a log tail opens a UTF-16 file
  with ``ReversedLinesFileReader``, whose constructor refuses a charset without byte order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cases import Case
from interesting import Contract
from real_fetch import debian_orig, extract, listed_expert

CODEC = ("libcommons-codec-java", "1.15-1")
LANG3 = ("libcommons-lang3-java", "3.12.0-2+deb12u1")
COMMONS_IO = ("commons-io", "2.11.0-2")

#: Compile every library source plus the driver, then run it (the same for every Java case).
JAVAC_COMMAND = (
    'c=$(mktemp -d) && javac -nowarn -encoding UTF-8 -d "$c" '
    "$(find src/main/java -name '*.java') Driver.java && "
    'java -cp "$c" Driver'
)

DRIVER_JAVA = """\
import org.apache.commons.codec.net.URLCodec;

/** Decodes a query string taken from a log line. */
public class Driver {
    public static void main(String[] args) throws Exception {
        String logged = "q=caf%zz&lang=fr";
        System.out.println(new URLCodec().decode(logged));
    }
}
"""


LANG3_DRIVER = """\
import org.apache.commons.lang3.time.DurationFormatUtils;

/** Prints how long a job ran, from two timestamps read back from a log (clock skew). */
public class Driver {
    public static void main(String[] args) {
        long started = 1_700_000_005_000L;
        long finished = 1_700_000_000_000L;
        System.out.println("job took " + DurationFormatUtils.formatDurationHMS(finished - started));
    }
}
"""

IO_DRIVER = """\
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.apache.commons.io.input.ReversedLinesFileReader;

/** Prints the last line of a log written by a Windows service (UTF-16 with a BOM). */
public class Driver {
    public static void main(String[] args) throws Exception {
        File log = File.createTempFile("service", ".log");
        log.deleteOnExit();
        Files.write(log.toPath(), "started\\nstopped\\n".getBytes(StandardCharsets.UTF_16));
        try (ReversedLinesFileReader reader =
                new ReversedLinesFileReader(log, StandardCharsets.UTF_16)) {
            System.out.println("last line: " + reader.readLine());
        }
    }
}
"""


def _debian_java(spec: tuple[str, str], driver: str, cache: Path) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        extract(debian_orig(*spec, cache), root)
        (root / "Driver.java").write_text(driver, "utf-8")

    return build


def java_cases(real: Path) -> list[Case]:
    return [
        Case(
            name="java-commons-codec-1.15",
            description=(
                "Debian's commons-codec 1.15 source (apt-get source at run time); javac over "
                "all of src/main/java plus a driver failing 3 calls deep in URLCodec"
            ),
            contract=Contract(
                command=JAVAC_COMMAND,
                match=r"DecoderException: Invalid URL encoding: not a valid digit",
                timeout=60.0,
            ),
            build=_debian_java(CODEC, DRIVER_JAVA, real),
            cap_quick=120.0,
            cap_full=480.0,
            ideal_files=14,
            kind="java",
            **CODEC_EXPERT,
        ),
        Case(
            name="java-commons-lang3-3.12",
            description=(
                "Debian's commons-lang3 3.12.0 source (216 sources, apt-get source at run "
                "time); javac over all of them plus a driver formatting a negative duration"
            ),
            contract=Contract(
                command=JAVAC_COMMAND,
                match=r"IllegalArgumentException: durationMillis must not be negative",
                timeout=120.0,
            ),
            build=_debian_java(LANG3, LANG3_DRIVER, real),
            cap_full=300.0,
            kind="java",
            **LANG3_EXPERT,
        ),
        Case(
            name="java-commons-io-2.11",
            description=(
                "Debian's commons-io 2.11.0 source (180 sources, apt-get source at run time); "
                "javac over all of them plus a driver opening UTF-16 with ReversedLinesFileReader"
            ),
            contract=Contract(
                command=JAVAC_COMMAND,
                match=r"UnsupportedEncodingException: For UTF-16, you need to specify the byte",
                timeout=120.0,
            ),
            build=_debian_java(COMMONS_IO, IO_DRIVER, real),
            cap_full=300.0,
            kind="java",
            **IO_EXPERT,
        ),
    ]


# -- the hand-made minima ------------------------------------------------------------------------

# The minima are made at member level by hand (not only whole files).
CODEC_EXPERT = listed_expert(
    "java-commons-codec-1.15",
    4,
    1135,
    "member-level, lines and parts of lines deleted by hand: Driver's decode call alone; "
    "URLCodec with decodeUrl (its loop calling Utils.digit16 after a '%') and decode(String) "
    "calling it; Utils with digit16's throw alone; DecoderException with its message "
    "constructor. The same exception with the same innermost frames (digit16, decodeUrl, "
    "decode). Until 2026-12-07 the minimum kept whole files (14 / 58,277 B: the 13 sources "
    "javac needs), an upper bound",
)
LANG3_EXPERT = listed_expert(
    "java-commons-lang3-3.12",
    3,
    960,
    "member-level, lines and parts of lines deleted by hand: Driver's call without the println "
    "(formatDurationHMS(- started)); DurationFormatUtils with formatDurationHMS and the "
    "three-argument formatDuration cut to two arguments, its Validate call and `return format;`; "
    "Validate with inclusiveBetween's throw alone. Until 2026-12-06 the minimum kept whole files "
    "(59 / 1,894,174 B: the 58 sources javac needs), an upper bound",
)
IO_EXPERT = listed_expert(
    "java-commons-io-2.11",
    2,
    1059,
    "member-level, lines and parts of lines deleted by hand: Driver constructing the reader "
    "alone; ReversedLinesFileReader with its three chained constructors, the last throwing "
    "the UTF-16 refusal alone. The same exception from the same three constructor frames. "
    "Until 2026-12-07 the minimum kept whole files (18 / 241,419 B: Driver and the 17 "
    "sources javac needs), an upper bound",
)
