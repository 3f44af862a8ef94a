"""Pictures of a reduction, drawn from its report as self-contained SVG files.

``reduction.svg`` shows the size of the tree (bytes above, files below) against the oracle runs
(wall time as a second row of labels under them), each pass and fixed-size stage a coloured
band from the run it began at (``size_history``: reports of older versions have none, so they
get no such picture). ``rates.svg``, for a flaky failure only, shows the reproduction rate of
the baseline, the final test, the runs in the user's own shell and the holdout, each with its
exact Clopper--Pearson bounds at the report's confidence (computed by
:mod:`repomin.sampling.stats.bounds`, the functions every verdict uses).

The output is deterministic (same report, same bytes), valid XML, and self-contained: no
script, no style sheet, no font or image from elsewhere, no link. Text from the report is
escaped; the command, paths and match expression never appear, so a picture can be shared
wherever the numbers can.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from repomin.sampling.stats.bounds import lower_bound, upper_bound

#: The files :func:`render_pictures` may return (a writer removes stale ones it did not get).
REDUCTION_PICTURE = "reduction.svg"
RATES_PICTURE = "rates.svg"
PICTURE_NAMES = (REDUCTION_PICTURE, RATES_PICTURE)

BYTES_COLOUR = "#1f5fa8"
FILES_COLOUR = "#c2410c"
RATE_COLOUR = "#166534"
THRESHOLD_COLOUR = "#b91c1c"
#: Passes get these band colours in the order they first appear; fixed-size stages are grey.
PASS_COLOURS = (
    "#dbeafe",
    "#fde68a",
    "#d1fae5",
    "#fbcfe8",
    "#e9d5ff",
    "#fed7aa",
    "#ccfbf1",
    "#fef9c3",
    "#e0e7ff",
    "#ffe4e6",
    "#ecfccb",
    "#f5f5f4",
)
STAGE_COLOURS = {"baseline": "#d4d4d8", "final": "#a1a1aa", "holdout": "#c7c7cf"}

#: A white outline drawn under a label's letters, so that it stays legible over a line.
HALO = {"stroke": "#ffffff", "stroke_width": "3", "paint_order": "stroke"}

WIDTH = 760
LEFT, RIGHT = 92, 668  # the panels' x extent
# Characters XML 1.0 cannot carry (surrogates: UTF-8 cannot either), C1 controls and the
# bidirectional/format controls.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff]"
)


def picture_names(report: Mapping[str, Any]) -> list[str]:
    """The pictures :func:`render_pictures` draws for ``report`` (the links REPOMIN.md makes)."""
    names = []
    if _history(report) is not None:
        names.append(REDUCTION_PICTURE)
    if is_flaky(report) and _rate_rows(report):
        names.append(RATES_PICTURE)
    return names


def render_pictures(report: Mapping[str, Any]) -> dict[str, str]:
    """File name -> SVG text, for the sidecar beside ``report.json`` and ``REPOMIN.md``."""
    out: dict[str, str] = {}
    for name in picture_names(report):
        out[name] = reduction_svg(report) if name == REDUCTION_PICTURE else rates_svg(report)
    return out


def is_flaky(report: Mapping[str, Any]) -> bool:
    """The failure showed itself flaky: some recorded rate (baseline, final test, the user's
    shell, the holdout) is below 1, or the search escalated its sampling policy (a run that
    should have reproduced did not)."""
    if any(passes < runs for _, passes, runs, _ in _rate_rows(report)):
        return True
    switches = report.get("execution", {}).get("sampling_policy_switches")
    return isinstance(switches, int) and switches > 0


# -- SVG text ---------------------------------------------------------------------------------


class _Svg:
    """An SVG document built element by element (attributes in the order given)."""

    def __init__(self, width: int, height: int, title: str, desc: str) -> None:
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="title desc" '
            'font-family="DejaVu Sans, Verdana, Arial, sans-serif" font-size="11">',
            f'<title id="title">{_esc(title)}</title>',
            f'<desc id="desc">{_esc(desc)}</desc>',
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        ]

    def add(self, tag: str, text: str | None = None, tip: str | None = None, **attrs: Any) -> None:
        """``<tag attrs>`` with ``text`` and a ``<title>`` tooltip ``tip`` (both escaped)."""
        rendered = "".join(
            f' {k.rstrip("_").replace("_", "-")}="{_attr(v)}"' for k, v in attrs.items()
        )
        inner = (f"<title>{_esc(tip)}</title>" if tip is not None else "") + (
            _esc(text) if text is not None else ""
        )
        self.parts.append(f"<{tag}{rendered}>{inner}</{tag}>" if inner else f"<{tag}{rendered}/>")

    def text(self, x: float, y: float, text: str, **attrs: Any) -> None:
        self.add("text", text, x=_n(x), y=_n(y), **attrs)

    def line(self, x1: float, y1: float, x2: float, y2: float, **attrs: Any) -> None:
        self.add("line", x1=_n(x1), y1=_n(y1), x2=_n(x2), y2=_n(y2), **attrs)

    def close(self) -> str:
        return "\n".join([*self.parts, "</svg>", ""])


def _clean(value: str) -> str:
    return _UNSAFE.sub("\ufffd", value)


def _esc(value: str) -> str:
    return escape(_clean(value))


def _attr(value: Any) -> str:
    return escape(_clean(str(value)), {'"': "&quot;"})


def _n(value: float) -> str:
    """A coordinate: two decimals, no ``-0.00``."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


# -- numbers on axes --------------------------------------------------------------------------


def _bytes_text(n: float) -> str:
    """``316 B``, ``27,714 B``: exact, as the report records them."""
    return f"{int(n):,} B"


def _bytes_tick(n: float) -> str:
    """Compact tick labels: ``500 B``, ``2 kB``, ``1.5 MB``."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} B"


def _files_text(n: float) -> str:
    return f"{int(n):,} file" + ("" if int(n) == 1 else "s")


def _seconds_text(t: float) -> str:
    if t < 120:
        return f"{t:.3g} s"
    if t < 7200:
        return f"{t / 60:.3g} min"
    return f"{t / 3600:.3g} h"


def _nice_step(span: float, count: int, integer: bool) -> float:
    raw = span / max(1, count)
    magnitude = 10.0 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return max(1.0, step) if integer else step


def _linear_ticks(hi: float, count: int = 5, integer: bool = True) -> list[float]:
    """Ticks from 0 to the first nice value at or above ``hi``."""
    step = _nice_step(hi, count, integer) if hi > 0 else 1.0
    top = math.ceil(hi / step - 1e-9) * step if hi > 0 else step
    return [i * step for i in range(round(top / step) + 1)]


@dataclass(frozen=True, slots=True)
class _Scale:
    """Maps values onto the pixels from ``lo_px`` (at ``lo``) to ``hi_px`` (at ``hi``)."""

    lo: float
    hi: float
    lo_px: float
    hi_px: float
    log: bool = False

    def __call__(self, value: float) -> float:
        if self.log:
            value, lo, hi = (math.log10(max(v, 1.0)) for v in (value, self.lo, self.hi))
        else:
            lo, hi = self.lo, self.hi
        frac = 0.0 if hi == lo else (min(max(value, lo), hi) - lo) / (hi - lo)
        return self.lo_px + frac * (self.hi_px - self.lo_px)


def _value_axis(values: Sequence[int], bottom: float, top: float) -> tuple[_Scale, list[float]]:
    """A log scale when the values span a factor of 20 or more (decades as ticks), else a
    linear one from 0."""
    hi, lo = max(max(values), 1), max(min(values), 1)
    if hi / lo >= 20:
        d_lo, d_hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        every = max(1, math.ceil((d_hi - d_lo) / 6))  # at most 7 labelled decades
        d_hi = d_lo + every * max(1, math.ceil((d_hi - d_lo) / every))
        ticks = [10.0**d for d in range(d_lo, d_hi + 1, every)]
        return _Scale(ticks[0], ticks[-1], bottom, top, log=True), ticks
    ticks = _linear_ticks(hi, 4)
    return _Scale(0.0, ticks[-1], bottom, top), ticks


# -- the size of the tree ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _History:
    points: list[tuple[int, float, int, int]]  # runs, seconds, files, bytes
    stages: list[tuple[str, int, float]]  # name, runs, seconds
    runs: int  # the x axis' end: every oracle run of the report
    seconds: float


def _history(report: Mapping[str, Any]) -> _History | None:
    """The report's ``size_history`` with the exported payload as its last level (None when
    the report has none)."""
    recorded = report.get("size_history")
    if not isinstance(recorded, Mapping) or not recorded.get("points"):
        return None
    points = [(p["runs"], p["seconds"], p["files"], p["bytes"]) for p in recorded["points"]]
    stages = [(s["name"], s["runs"], s["seconds"]) for s in recorded.get("stages", [])]
    ex = report.get("execution", {})
    runs = max([int(ex.get("oracle_samples") or 0), points[-1][0], *(s[1] for s in stages), 1])
    seconds = max(
        [float(ex.get("wall_time_seconds") or 0.0), points[-1][1], *(s[2] for s in stages)]
    )
    out = report["output"]
    if (points[-1][2], points[-1][3]) != (out["files"], out["bytes"]):
        points.append((runs, seconds, out["files"], out["bytes"]))
    return _History(points, stages, runs, seconds)


def _stage_colours(stages: Sequence[tuple[str, int, float]]) -> dict[str, str]:
    colours: dict[str, str] = {}
    for name, _, _ in stages:
        if name not in colours:
            passes = sum(1 for n in colours if n not in STAGE_COLOURS)
            colours[name] = STAGE_COLOURS.get(name, PASS_COLOURS[passes % len(PASS_COLOURS)])
    return colours


def reduction_svg(report: Mapping[str, Any]) -> str:
    """The size of the tree over the runs, bytes and files, with the passes as bands."""
    h = _history(report)
    if h is None:
        raise ValueError("the report has no size_history (written before this version)")
    src, out = report["source"], report["output"]
    summary = (
        f"{_files_text(src['files'])} / {_bytes_text(src['bytes'])} \u2192 "
        f"{_files_text(out['files'])} / {_bytes_text(out['bytes'])} in "
        f"{h.runs:,} oracle runs, {_seconds_text(h.seconds)}"
    )
    colours = _stage_colours(h.stages)
    legend_rows = _legend_rows(list(colours))
    height = 440 + 18 * len(legend_rows) + (16 if report.get("execution", {}).get("resumed") else 0)
    svg = _Svg(
        WIDTH,
        height,
        "Size of the tree over the reduction",
        f"Bytes and files of the tree after each oracle run; {summary}. "
        f"Stages in order: {', '.join(s[0] for s in h.stages) or 'none recorded'}.",
    )
    svg.text(LEFT, 20, "Size of the tree over the reduction", font_size=15, font_weight="bold")
    svg.text(LEFT, 38, summary, fill="#3f3f46")
    x = _Scale(0.0, float(h.runs), LEFT, RIGHT)
    _stage_bands(svg, h, x, colours)
    _series_panel(svg, h, x, (70, 220), "bytes", BYTES_COLOUR)
    _series_panel(svg, h, x, (236, 356), "files", FILES_COLOUR)
    _run_axis(svg, h, x, 356)
    y = 432
    for row in legend_rows:
        _legend_row(svg, row, colours, y)
        y += 18
    if report.get("execution", {}).get("resumed"):
        svg.text(LEFT, y + 4, "A resumed session: only the runs of its last process are drawn.")
    return svg.close()


def _stage_bands(svg: _Svg, h: _History, x: _Scale, colours: Mapping[str, str]) -> None:
    """Each stage as a band through both panels and a labelled block in the strip above."""
    if not h.stages:
        return
    ends = [s[1] for s in h.stages[1:]] + [h.runs]
    ends_t = [s[2] for s in h.stages[1:]] + [h.seconds]
    for (name, start, began), end, ended in zip(h.stages, ends, ends_t, strict=True):
        x0, x1 = x(start), x(end)
        tip = f"{name}: runs {start:,}\u2013{end:,}, {began:.3f}\u2013{ended:.3f} s"
        colour = colours[name]
        for top, bottom in ((70, 220), (236, 356)):
            svg.add(
                "rect",
                x=_n(x0),
                y=top,
                width=_n(x1 - x0),
                height=bottom - top,
                fill=colour,
                fill_opacity="0.55",
            )
        svg.add(
            "rect",
            tip=tip,
            x=_n(x0),
            y=50,
            width=_n(max(x1 - x0, 1.0)),
            height=14,
            fill=colour,
            stroke="#ffffff",
            stroke_width="0.5",
        )
        if x1 - x0 >= 8:  # a divider where a stage begins, unless it is a sliver
            svg.line(x0, 50, x0, 356, stroke="#71717a", stroke_width="0.6")
        if x1 - x0 >= 6.2 * len(name) + 6:
            svg.text(x0 + 3, 61, name, font_size=10, fill="#27272a")


def _series_panel(
    svg: _Svg,
    h: _History,
    x: _Scale,
    extent: tuple[float, float],
    what: str,
    colour: str,
) -> None:
    """One series (``bytes`` or ``files``) as a step line over its own value axis."""
    top, bottom = extent
    values = [p[3] if what == "bytes" else p[2] for p in h.points]
    scale, ticks = _value_axis(values, bottom, top)
    tick_text = _bytes_tick if what == "bytes" else (lambda v: f"{v:,.0f}")
    svg.add(
        "rect",
        x=LEFT,
        y=_n(top),
        width=RIGHT - LEFT,
        height=_n(bottom - top),
        fill="none",
        stroke="#a1a1aa",
    )
    for tick in ticks:
        ty = scale(tick)
        svg.line(LEFT, ty, RIGHT, ty, stroke="#e4e4e7", stroke_width="0.6")
        svg.line(LEFT - 4, ty, LEFT, ty, stroke="#52525b")
        svg.text(LEFT - 6, ty + 4, tick_text(tick), text_anchor="end", fill="#52525b")
    middle = (top + bottom) / 2
    caption = what + (" (log scale)" if scale.log else "")
    svg.text(
        18,
        middle,
        caption,
        text_anchor="middle",
        fill=colour,
        font_weight="bold",
        transform=f"rotate(-90 18 {_n(middle)})",
    )
    d = [f"M{_n(x(0))} {_n(scale(values[0]))}"]
    for (runs, *_), value in zip(h.points[1:], values[1:], strict=True):
        d.append(f"H{_n(x(runs))} V{_n(scale(value))}")
    d.append(f"H{_n(x(h.runs))}")
    svg.add(
        "path",
        d=" ".join(d),
        fill="none",
        stroke=colour,
        stroke_width="2.5",
        stroke_linejoin="miter",
    )
    label = _bytes_text if what == "bytes" else _files_text
    first_y, last_y = scale(values[0]), scale(values[-1])
    svg.text(
        LEFT + 4,
        first_y + 14 if first_y < top + 20 else first_y - 5,
        label(values[0]),
        fill=colour,
        font_weight="bold",
        **HALO,
    )
    svg.text(RIGHT + 6, last_y + 4, label(values[-1]), fill=colour, font_weight="bold")


def _run_axis(svg: _Svg, h: _History, x: _Scale, y: float) -> None:
    """Runs under the panels; below them the wall time at which those runs were reached."""
    svg.text(LEFT - 16, y + 16, "runs", text_anchor="end", fill="#52525b")
    for tick in _linear_ticks(float(h.runs), 8):
        if tick <= h.runs:
            svg.line(x(tick), y, x(tick), y + 4, stroke="#52525b")
            svg.text(x(tick), y + 16, f"{tick:,.0f}", text_anchor="middle", fill="#52525b")
    svg.text(LEFT - 16, y + 32, "time", text_anchor="end", fill="#71717a")
    pairs = sorted({(r, t) for r, t, *_ in h.points} | {(r, t) for _, r, t in h.stages})
    pairs.append((h.runs, h.seconds))
    last = -1e9
    for tick in _linear_ticks(h.seconds, 6, integer=False):
        runs = _runs_at(pairs, tick)
        if runs is None or x(runs) - last < 44:
            continue
        last = x(runs)
        svg.line(last, y + 20, last, y + 23, stroke="#71717a")
        svg.text(last, y + 32, _seconds_text(tick), text_anchor="middle", fill="#71717a")
    svg.text(
        RIGHT,
        y + 50,
        "oracle runs (baseline, search, final test, holdout) and the wall time each was reached",
        text_anchor="end",
        fill="#71717a",
        font_size=10,
    )


def _runs_at(pairs: Sequence[tuple[int, float]], t: float) -> float | None:
    """The run count at wall time ``t``, interpolated between recorded (runs, seconds)."""
    before = (0, 0.0)
    for runs, seconds in pairs:
        if seconds >= t:
            if seconds == before[1]:
                return float(runs)
            frac = (t - before[1]) / (seconds - before[1])
            return before[0] + frac * (runs - before[0])
        before = (runs, max(seconds, before[1]))
    return None


def _legend_rows(names: Sequence[str]) -> list[list[str]]:
    rows: list[list[str]] = [[]]
    width = 0.0
    for name in names:
        need = 24 + 6.2 * len(name)
        if rows[-1] and width + need > RIGHT - LEFT:
            rows.append([])
            width = 0.0
        rows[-1].append(name)
        width += need
    return [r for r in rows if r]


def _legend_row(svg: _Svg, names: Sequence[str], colours: Mapping[str, str], y: float) -> None:
    x = float(LEFT)
    for name in names:
        svg.add(
            "rect",
            x=_n(x),
            y=_n(y - 9),
            width=12,
            height=12,
            fill=colours[name],
            stroke="#71717a",
            stroke_width="0.5",
        )
        svg.text(x + 16, y + 1, name, fill="#27272a")
        x += 24 + 6.2 * len(name)


# -- reproduction rates -----------------------------------------------------------------------


def _rate_rows(report: Mapping[str, Any]) -> list[tuple[str, int, int, float]]:
    """(label, passes, runs, confidence) of each sample of runs the report records."""
    ex = report.get("execution", {})
    confidence = float(ex.get("confidence", 0.95))
    rows = [
        (
            "baseline (original tree)",
            ex.get("baseline_passes"),
            ex.get("baseline_runs"),
            confidence,
        ),
        ("final test (payload)", ex.get("final_passes"), ex.get("final_runs"), confidence),
    ]
    shell = report.get("user_shell")
    if isinstance(shell, Mapping):
        rows.append(
            ("your shell (payload)", shell.get("reproduced"), shell.get("runs"), confidence)
        )
    hold = report.get("holdout_certification")
    if isinstance(hold, Mapping) and hold.get("completed_runs"):
        level = hold.get("confidence") or (1 - hold["alpha"] if "alpha" in hold else confidence)
        rows.append(("holdout (fresh runs)", hold.get("passes"), hold["completed_runs"], level))
    return [
        (label, int(k), int(n), float(c))
        for label, k, n, c in rows
        if isinstance(k, int) and isinstance(n, int) and 0 <= k <= n and n > 0 and 0 < c < 1
    ]


def rate_bounds(passes: int, runs: int, confidence: float) -> tuple[float, float]:
    """The exact one-sided Clopper--Pearson bounds the report's statistics use; together a
    two-sided interval at ``2 * confidence - 1``."""
    return lower_bound(passes, runs, confidence), upper_bound(passes, runs, confidence)


def rates_svg(report: Mapping[str, Any]) -> str:
    """Each sample's reproduction rate with its exact bounds, and the candidate threshold."""
    rows = _rate_rows(report)
    ex = report.get("execution", {})
    confidence = float(ex.get("confidence", 0.95))
    height = 150 + 44 * len(rows)
    svg = _Svg(
        WIDTH,
        height,
        "Reproduction rates with exact bounds",
        "; ".join(f"{label}: {k} of {n} runs reproduced" for label, k, n, _ in rows) + ".",
    )
    svg.text(24, 20, "Reproduction rates with exact bounds", font_size=15, font_weight="bold")
    two_sided = 2 * confidence - 1
    svg.text(
        24,
        38,
        f"Each end is an exact one-sided Clopper\u2013Pearson bound at "
        f"{_pct(confidence)}; together a two-sided {_pct(two_sided)} interval.",
        fill="#3f3f46",
    )
    left, right, top = 190, 520, 60
    bottom = top + 44 * len(rows) + 10
    x = _Scale(0.0, 1.0, left, right)
    for tick in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        svg.line(x(tick), top, x(tick), bottom, stroke="#e4e4e7")
        svg.text(x(tick), bottom + 16, _pct(tick), text_anchor="middle", fill="#52525b")
    svg.text(
        (left + right) / 2,
        bottom + 34,
        "probability that a run reproduces the failure",
        text_anchor="middle",
        fill="#52525b",
    )
    theta = ex.get("min_candidate_rate")
    if isinstance(theta, int | float) and 0 < theta < 1:
        tx = x(float(theta))
        svg.line(
            tx,
            top - 4,
            tx,
            bottom,
            stroke=THRESHOLD_COLOUR,
            stroke_dasharray="5 3",
            stroke_width="1.5",
        )
        svg.text(
            tx,
            bottom + 52,
            f"\u03b8 = {theta:.3f}: the threshold a candidate's rate must be above",
            text_anchor="middle",
            fill=THRESHOLD_COLOUR,
        )
    for i, row in enumerate(rows):
        _rate_row(svg, x, top + 26 + 44 * i, row)
    return svg.close()


def _rate_row(svg: _Svg, x: _Scale, y: float, row: tuple[str, int, int, float]) -> None:
    label, k, n, confidence = row
    lo, hi = rate_bounds(k, n, confidence)
    tip = (
        f"{label}: {k} of {n} runs reproduced (rate {k / n!r}); exact one-sided "
        f"Clopper\u2013Pearson bounds at confidence {confidence!r}: lower {lo!r}, upper {hi!r}"
    )
    svg.text(24, y + 4, label, fill="#27272a")
    svg.add(
        "line",
        tip=tip,
        x1=_n(x(lo)),
        y1=_n(y),
        x2=_n(x(hi)),
        y2=_n(y),
        stroke=RATE_COLOUR,
        stroke_width="4",
        stroke_linecap="butt",
    )
    for end in (lo, hi):
        svg.line(x(end), y - 7, x(end), y + 7, stroke=RATE_COLOUR, stroke_width="2")
    svg.add(
        "circle",
        cx=_n(x(k / n)),
        cy=_n(y),
        r=5,
        fill="#ffffff",
        stroke=RATE_COLOUR,
        stroke_width="2.5",
    )
    svg.text(532, y + 4, f"{k}/{n} = {_pct(k / n)}   [{lo:.3f}, {hi:.3f}]", fill="#27272a")


def _pct(p: float) -> str:
    text = f"{100 * p:.1f}".rstrip("0").rstrip(".")
    return f"{text} %"
