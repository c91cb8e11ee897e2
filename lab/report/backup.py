"""The deck's backup slides: every pivot table (lab.report.tables.pivots),
placed from the width its text takes in the deck's font.

A slide is static (no script may measure it), so the layout is decided
here. Each table's natural width is measured with DejaVu Sans, the font
Chromium draws the deck in on these machines; matplotlib ships the font
file, so every machine measures alike and a report regenerates byte for
byte. A table that fits half a slide goes in one of two columns; a wider
one (three backends beside long variant names) gets the slide's whole
width; a table taller than a column goes on in the next one under its
heading and header row again.
"""
from __future__ import annotations

import functools
import html
from dataclasses import dataclass
from typing import Any, Sequence

from lab.report.slide import Slide
from lab.report.tables import LEGEND

e = html.escape

# Geometry of lab.report.slides.CSS at 1280x720, measured in Chromium on
# the today-reread deck: the body is 1184 px wide (48 px padding a side),
# two columns 28 px apart; 538 px of it under the two-line legend. Text
# there is 12 px on 16 px lines. A table row of one line is 21 px, each
# further line of a wrapped cell 16 px; a table's heading, its edges and
# the gap after it take 26 px for a heading of one line. A cell pads 8 px
# a side.
BODY_PX = 1184
GAP_PX = 28
HALF_PX = (BODY_PX - GAP_PX) // 2
COLUMN_PX = 538
ROW_PX = 21
LINE_PX = 16
HEADING_PX = 26
CELL_PAD_PX = 16
FONT_PX = 12
# FreeType here and Chromium's shaper agreed within 0.5 % on the natural
# widths of the today-reread deck's 37 tables (455 to 822 px); a table
# within 2 % of its column counts as too wide.
SLACK = 1.02


@functools.lru_cache(maxsize=2)
def _font(bold: bool) -> Any:
    import matplotlib.font_manager as fm
    from matplotlib.ft2font import FT2Font
    weight = "bold" if bold else "normal"
    path = fm.findfont(fm.FontProperties(family="DejaVu Sans",
                                         weight=weight),
                       fallback_to_default=False)
    font = FT2Font(path)
    font.set_size(FONT_PX, 72)          # 12 pt at 72 dpi: 12 px
    return font


def text_px(text: str, bold: bool = False) -> float:
    """The width of `text` at the backup tables' 12 px, in px."""
    font = _font(bold)
    font.set_text(text, 0.0)
    return font.get_width_height()[0] / 64 * SLACK


@dataclass(frozen=True)
class Pivot:
    """One backup table: its heading's parts and its rows, header first."""
    title: str          # "workload: metric"
    sub: str            # unit and direction
    table: list[list[str]]

    @functools.cached_property
    def width(self) -> float:
        """Natural width: each column as wide as its widest cell (the
        layout asks for it at every row it places: measured once)."""
        cols = zip(*self.table)
        return sum(max(text_px(c, bold=(i == 0)) for i, c in enumerate(col))
                   + CELL_PAD_PX for col in cols)

    def heading(self, more: bool) -> str:
        return self.title + (" (continued)" if more else "")

    def heading_px(self, column: float, more: bool) -> int:
        """The heading wraps between words, as Chromium wraps it."""
        words = [(w, True) for w in self.heading(more).split()] + \
            [(w, False) for w in f"({self.sub})".split()]
        lines, x = 1, 0.0
        space = text_px(" ")
        for word, bold in words:
            px = text_px(word, bold)
            if x and x + space + px > column:
                lines, x = lines + 1, px
            else:
                x += (space if x else 0) + px
        return HEADING_PX + LINE_PX * (lines - 1)

    def row_px(self, column: float) -> int:
        """A row's height in a column `column` px wide: rows wrap alike
        when the table is wider than its column."""
        return ROW_PX + LINE_PX * (_lines(self.width, column) - 1)

    def html(self, rows: Sequence[list[str]], more: bool) -> str:
        head = "".join(f"<th>{e(c)}</th>" for c in self.table[0])
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r)
                       + "</tr>" for r in rows)
        return (f"<div class='pivot'><b>{e(self.heading(more))}</b> "
                f"({e(self.sub)})"
                f"<table><tr>{head}</tr>{body}</table></div>")


def _lines(px: float, column: float) -> int:
    return max(1, -(-int(px) // int(column)))


@dataclass
class Column:
    wide: bool
    parts: list[str]
    used: int = 0


def columns(pivots: Sequence[Pivot]) -> list[Column]:
    """The tables in columns of COLUMN_PX: half a slide wide, or the whole
    slide once a table is too wide for half (narrower tables after it
    share that column while they fit). A table starts a new column rather
    than break, unless it is taller than a column."""
    out: list[Column] = []
    for p in pivots:
        wide = p.width > HALF_PX
        rows = p.table[1:]
        more = False
        while rows:
            col = out[-1] if out else None
            whole = _need(p, wide, more, len(rows)) <= COLUMN_PX
            if col is None or (wide and not col.wide) or col.used + _need(
                    p, col.wide, more, len(rows) if whole else 1) > COLUMN_PX:
                col = Column(wide, [])
                out.append(col)
            fit = 1
            while fit < len(rows) and col.used + _need(
                    p, col.wide, more, fit + 1) <= COLUMN_PX:
                fit += 1
            col.parts.append(p.html(rows[:fit], more))
            col.used += _need(p, col.wide, more, fit)
            rows, more = rows[fit:], True
    return out


def _need(p: Pivot, wide: bool, more: bool, rows: int) -> int:
    """The px `rows` rows of `p` take in a column, with its heading and
    header row."""
    width = BODY_PX if wide else HALF_PX
    return p.heading_px(width, more) + p.row_px(width) * (1 + rows)


def backup_slides(tables: Sequence[tuple[str, str, str, list[list[str]]]]
                  ) -> list[Slide]:
    """`tables` (lab.report.tables.pivots) as slides: two half columns a
    slide, or one whole-width column."""
    cols = columns([Pivot(f"{wl}: {metric}", sub, table)
                    for wl, metric, sub, table in tables])
    grouped: list[list[Column]] = []
    for col in cols:
        if grouped and not col.wide and not grouped[-1][0].wide \
                and len(grouped[-1]) == 1:
            grouped[-1].append(col)
        else:
            grouped.append([col])
    return [Slide(f"backup-{n}", f"Backup: full table ({n})",
                  "".join(f"<div class='col backup'>{''.join(c.parts)}</div>"
                          for c in group), LEGEND)
            for n, group in enumerate(grouped, 1)]
