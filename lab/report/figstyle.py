"""How a figure looks on a projector: its size, the size of its text, its
colours, and the checks that hold it to that (matplotlib, Agg).

A figure is drawn for the place the deck shows it (lab.report.slides'
CSS at 1280x720): beside a slide's evidence (COLUMN) or alone across it
(WIDE), under a claim of up to three lines. The deck never enlarges an
image and shrinks one that does not fit, so every text of a figure is
drawn at MIN_SHOWN_PT divided by that shrink: at least 14 pt as the
audience sees it. `finish` lays the figure out, then measures what it
drew: its smallest text as shown, and any two texts that overlap.
"""
from __future__ import annotations

import itertools
import math
import textwrap
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend choice)
from matplotlib.text import Text  # noqa: E402

# Okabe-Ito (colour-blind safe) without its black (the latency figure
# draws the baseline black), then Paul Tol's muted scheme.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
           "#D55E00", "#F0E442", "#332288", "#88CCEE",
           "#44AA99", "#117733", "#999933", "#DDCC77", "#882255",
           "#AA4499")
UNJUDGED = "#BBBBBB"        # a change with fewer than 3 repeats a side
DARK = "#222222"            # text on white or on a light bar
DPI = 110
CSS_PX_PER_IN = 96          # an SVG's size in pt, as a browser lays it out
MIN_SHOWN_PT = 14
# (width, height) in CSS px of the box a deck slide gives a figure: the
# body (1184 x 598 under the title) less a three-line claim (84), and
# for a figure beside the evidence 1.5 of its 2.5 shares, less the gap.
COLUMN = (693, 514)
WIDE = (1184, 514)


@dataclass(frozen=True)
class Figure:
    name: str
    title: str                      # the finding
    png: Path
    svg: Path
    shown_pt: float = 0.0           # its smallest text, as the deck shows it
    overlaps: tuple[str, ...] = ()  # "a / b" for two texts that overlap


def shrink(size_in: tuple[float, float], box: tuple[int, int]) -> float:
    """How much the deck shrinks a figure of `size_in` inches into `box`
    (1: shown at its own size)."""
    w, h = (x * CSS_PX_PER_IN for x in size_in)
    return min(1.0, box[0] / w, box[1] / h)


def text_pt(size_in: tuple[float, float], box: tuple[int, int]) -> float:
    """The text size that shows at MIN_SHOWN_PT in `box`."""
    return math.ceil(MIN_SHOWN_PT / shrink(size_in, box) * 2) / 2


def new_figure(size_in: tuple[float, float], box: tuple[int, int],
               **subplots: Any) -> tuple[plt.Figure, Any, float]:
    """A figure for `box`, with its axes; returns (figure, axes, the text
    size every text of it gets, in pt). `finish` raises any smaller
    text to it."""
    fig, axes = plt.subplots(figsize=size_in, dpi=DPI, **subplots)
    fig.swaplab_box = box
    return fig, axes, text_pt(size_in, box)


def colours_of(variants: Sequence[str]) -> dict[str, str]:
    """A colour per variant, from its name: the same in every figure and,
    unless two of a run's names hash alike, in every run. Pass the run's
    full variant list (res.source.variants), never the subset a figure
    shows. Names are placed in sorted order; a name whose colour is taken
    moves to the next free one (past len(PALETTE) variants, colours
    repeat)."""
    out: dict[str, str] = {}
    taken: set[int] = set()
    for v in sorted(variants):
        i = zlib.crc32(v.encode()) % len(PALETTE)
        if len(taken) < len(PALETTE):
            while i in taken:
                i = (i + 1) % len(PALETTE)
        taken.add(i)
        out[v] = PALETTE[i]
    return out


def _texts(fig: plt.Figure) -> Iterator[Text]:
    """The texts the figure draws: tick labels only of ticks inside the
    axes' view (matplotlib keeps labels for ticks it does not draw)."""
    hidden: set[int] = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for label in (tick.label1, tick.label2):
                    inside = lo - 1e-9 * abs(lo) <= tick.get_loc() <= \
                        hi + 1e-9 * abs(hi)
                    if not (inside and tick.get_visible()):
                        hidden.add(id(label))
    for t in fig.findobj(Text):
        if isinstance(t, Text) and t.get_visible() and \
                t.get_text().strip() and id(t) not in hidden:
            yield t


def overlaps(fig: plt.Figure) -> tuple[str, ...]:
    """Pairs of drawn texts whose boxes overlap (by more than a pixel)."""
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer).expanded(
        1, 1).padded(-1)) for t in _texts(fig)]
    return tuple(f"{a} / {b}" for (a, ba), (b, bb)
                 in itertools.combinations(boxes, 2) if ba.overlaps(bb))


def finish(fig: plt.Figure, title: str, name: str, dest: Path,
           provenance: str, note: str = "") -> Figure:
    """Title (the finding), note, text sizes, layout, measurement, PNG
    and SVG. The run's provenance goes into both files' metadata: on a
    slide the footer carries it, in a report the page does."""
    box = fig.swaplab_box
    size = (fig.get_figwidth(), fig.get_figheight())
    pt = text_pt(size, box)
    for ax in fig.axes:
        ax.tick_params(which="both", labelsize=pt)
    for t in list(_texts(fig)):
        t.set_fontsize(max(t.get_fontsize(), pt))
    # Wrapped here: matplotlib's wrap=True breaks lines only when drawing,
    # after the layout has left room for one line. A bold character is
    # about 0.66 of the font size wide, a regular one 0.55.
    width_pt = size[0] * 72
    fig.suptitle(textwrap.fill(title, int(width_pt / (0.66 * pt))),
                 fontsize=pt, fontweight="bold")
    bottom = fig.text(0.01, 0.005, textwrap.fill(
        note, int(width_pt / (0.55 * pt))), fontsize=pt, color="#444444",
        ha="left", va="bottom") if note else None
    fig.canvas.draw()
    # tight_layout leaves room for the suptitle, not for the note or a
    # figure legend: they stack up from the bottom edge, the axes above.
    renderer = fig.canvas.get_renderer()
    low = 0.01 + (bottom.get_window_extent(renderer).height /
                  fig.bbox.height if bottom else 0.0)
    for legend in fig.legends:
        legend.set_bbox_to_anchor((0.5, low), transform=fig.transFigure)
        fig.canvas.draw()
        low += legend.get_window_extent(renderer).height / \
            fig.bbox.height + 0.01
    fig.tight_layout(rect=(0, low, 1, 1))
    fig.canvas.draw()
    shown = min(t.get_fontsize() for t in _texts(fig)) * shrink(size, box)
    clash = overlaps(fig)
    dest.mkdir(parents=True, exist_ok=True)
    png, svg = dest / f"{name}.png", dest / f"{name}.svg"
    # No creation date in either file: a report regenerated from the same
    # raw results is the same, byte for byte.
    fig.savefig(png, dpi=DPI, metadata={"Software": None,
                                        "Description": provenance})
    # Text as paths: the SVG looks the same without the fonts installed.
    with matplotlib.rc_context({"svg.fonttype": "path",
                                "svg.hashsalt": name}):
        fig.savefig(svg, metadata={"Date": None,
                                   "Description": provenance})
    plt.close(fig)
    return Figure(name, title, png, svg, round(shown, 2), clash)
