"""A figure's projector rules: the shrink into the deck's boxes, the
text size that survives it, colours by name, overlap detection."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from lab.report import figstyle


def test_a_figure_larger_than_its_box_gets_larger_text() -> None:
    fits = (figstyle.COLUMN[0] / 96, figstyle.COLUMN[1] / 96)
    assert figstyle.shrink(fits, figstyle.COLUMN) == pytest.approx(1.0)
    assert figstyle.text_pt(fits, figstyle.COLUMN) == 14
    # Twice as wide as the box: shown at half size, drawn at 28 pt.
    wide = (2 * fits[0], fits[1])
    assert figstyle.shrink(wide, figstyle.COLUMN) == pytest.approx(0.5)
    assert figstyle.text_pt(wide, figstyle.COLUMN) == 28


def test_finish_raises_small_text_and_reports_overlaps(tmp_path) -> None:
    fig, ax, pt = figstyle.new_figure((7.0, 5.0), figstyle.COLUMN)
    ax.plot([0, 1], [0, 1])
    ax.text(0.5, 0.5, "one", fontsize=6)
    ax.text(0.5, 0.5, "two", fontsize=6)
    out = figstyle.finish(fig, "a finding", "t", tmp_path, "run x")
    assert out.shown_pt >= figstyle.MIN_SHOWN_PT == pt
    assert out.overlaps == ("one / two",)
    assert b"run x" in out.png.read_bytes()
    assert "run x" in out.svg.read_text()
    assert not plt.get_fignums()


def test_a_variant_keeps_its_colour_across_runs() -> None:
    """By name, not by place: a run with other variants, or in another
    order, gives the shared ones the same colours, all distinct."""
    a = figstyle.colours_of(["base", "readahead", "thp-stage1",
                             "thp-stage2"])
    b = figstyle.colours_of(["thp-swapin", "thp-stage2", "base-again",
                             "base", "readahead"])
    assert {v: a[v] for v in ("base", "readahead", "thp-stage2")} == \
        {v: b[v] for v in ("base", "readahead", "thp-stage2")}
    many = [f"v{i}" for i in range(len(figstyle.PALETTE))]
    assert len(set(figstyle.colours_of(many).values())) == len(many)
    assert "#000000" not in figstyle.PALETTE
