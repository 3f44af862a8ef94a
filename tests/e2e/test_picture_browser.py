"""End-to-end: the pictures of a real reduction, rendered by a real headless Chromium.

A real ``repomin reduce`` writes a report with its size history; the size picture drawn from it
(and the rates picture of a flaky copy of it) is opened by Chromium from a file and
screenshotted. The PNG is decoded here with zlib alone and must not be blank: enough non-white
pixels, and pixels of each series' own colour (an SVG the browser cannot parse shows an error
page, which has neither). Without a Chromium on PATH the test is skipped, saying which Debian
package brings one.
"""

from __future__ import annotations

import copy
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from repomin.report.picture import (
    BYTES_COLOUR,
    FILES_COLOUR,
    RATE_COLOUR,
    RATES_PICTURE,
    REDUCTION_PICTURE,
    render_pictures,
)
from tests.e2e._reduce import reduce_ok, write_tree

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found is not None:
            return found
    pytest.skip(
        "no headless Chromium on PATH (apt-get install chromium-headless-shell): the pictures "
        "are not checked in a browser"
    )


def screenshot(svg: Path, out: Path, width: int, height: int) -> Path:
    """``svg`` opened from its file by headless Chromium, as a PNG of ``width`` x ``height``."""
    args = [
        _browser(),
        "--headless",
        "--no-sandbox",  # root in CI; the page is our own file
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={out.parent / 'chromium-profile'}",
        f"--window-size={width},{height}",
        f"--screenshot={out}",
        svg.as_uri(),
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and out.is_file(), done.stderr[-2000:]
    return out


def decode_png(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    channels = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            line[i] = (line[i] + _predict(kind, a, b, c)) & 0xFF
        rows.append(bytes(v for i, v in enumerate(line) if i % channels < 3))
        previous = line
    return width, height, rows


def _predict(kind: int, a: int, b: int, c: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return a
    if kind == 2:
        return b
    if kind == 3:
        return (a + b) // 2
    p = a + b - c  # 4: Paeth
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def pixels(rows: list[bytes]) -> list[tuple[int, int, int]]:
    return [(r[i], r[i + 1], r[i + 2]) for r in rows for i in range(0, len(r), 3)]


def near(colour: str, tolerance: int = 24) -> Any:
    want = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return lambda px: all(abs(p - w) <= tolerance for p, w in zip(px, want, strict=True))


def assert_drawn(png: Path, colours: dict[str, str]) -> None:
    width, height, rows = decode_png(png)
    everything = pixels(rows)
    assert len(everything) == width * height
    ink = sum(1 for px in everything if min(px) < 235)
    assert ink > 0.03 * width * height, f"{ink} non-white pixels of {width * height}: blank"
    for what, colour in colours.items():
        count = sum(1 for px in everything if near(colour)(px))
        assert count > 300, f"{count} pixels of the {what} colour {colour}: not drawn"


@pytest.mark.slow
def test_the_pictures_of_a_real_reduction_render_in_chromium(tmp_path: Path) -> None:
    _browser()  # skip before reducing anything when no browser is there
    src = write_tree(
        tmp_path / "src",
        {
            "run.sh": '. ./lib/config.sh\necho "FATAL: $MODE" >&2\nexit 3\n',
            "lib/config.sh": "MODE=broken\nNAME=demo\nLEVEL=3\n",
            **{f"docs/page{i}.md": f"# page {i}\n\n" + "text\n" * 40 for i in range(8)},
        },
    )
    report = reduce_ok(src, tmp_path / "out", "sh run.sh", "FATAL: broken")
    history = report["size_history"]
    assert history["points"][0]["bytes"] == report["source"]["bytes"]
    assert history["points"][-1]["bytes"] == report["output"]["bytes"]
    assert history["stages"][0]["name"] == "baseline"

    pictures = render_pictures(report)
    assert REDUCTION_PICTURE in pictures
    flaky: dict[str, Any] = copy.deepcopy(report)
    flaky["execution"].update(baseline_passes=1, final_passes=2, final_runs=5)
    pictures[RATES_PICTURE] = render_pictures(flaky)[RATES_PICTURE]
    for name, svg in pictures.items():
        (tmp_path / name).write_text(svg, "utf-8")

    size = screenshot(tmp_path / REDUCTION_PICTURE, tmp_path / "size.png", 760, 480)
    assert_drawn(size, {"bytes": BYTES_COLOUR, "files": FILES_COLOUR})
    rates = screenshot(tmp_path / RATES_PICTURE, tmp_path / "rates.png", 760, 330)
    assert_drawn(rates, {"rate": RATE_COLOUR})


def test_a_blank_page_fails_the_pixel_check(tmp_path: Path) -> None:
    """The check can fail: a page without the series (here an empty SVG) is refused."""
    empty = tmp_path / "empty.svg"
    empty.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"/>')
    png = screenshot(empty, tmp_path / "empty.png", 200, 100)
    with pytest.raises(AssertionError, match="blank"):
        assert_drawn(png, {"bytes": BYTES_COLOUR})
