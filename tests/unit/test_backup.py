"""Backup slides laid out from measured text widths (lab.report.backup),
on the fixture run (one backend) and on the today-reread reference run
(three backends beside long variant names, whose tables wrapped in half
a slide before)."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from lab.report import analysis, backup
from lab.report.tables import pivots
from lab.results.store import Store, open_results_dir

DATA = Path(__file__).resolve().parent.parent / "data"
REPORTS = Path(__file__).resolve().parents[2] / "reports"
WIDE_RUN = "20261206-232123-today-reread"


def tables(run) -> list:
    res = analysis.Results.of(run)
    return pivots(res.rows, res.source)


@pytest.fixture(scope="module")
def narrow():
    return tables(Store(DATA).open("fixture-run"))


@pytest.fixture(scope="module")
def wide():
    return tables(open_results_dir(REPORTS / WIDE_RUN / "raw"))


def test_text_width_is_the_fonts():
    # DejaVu Sans at 12 px: Chromium drew this cell 152 px wide.
    assert 150 <= backup.text_px("upstream-6.12 (baseline)") <= 158
    assert backup.text_px("nvme", bold=True) > backup.text_px("nvme")
    assert backup.text_px("WWW") > backup.text_px("iii")


def cells(body: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r"<td>([^<]*)</td>", body)]


def check_layout(tabs, cols):
    """Every row shown once, in order, and no column over its height."""
    shown = [c for col in cols for part in col.parts for c in cells(part)]
    assert shown == [c for _, _, _, t in tabs for r in t[1:] for c in r]
    assert all(col.used <= backup.COLUMN_PX for col in cols)


def test_narrow_tables_share_a_slide_two_columns(narrow):
    cols = backup.columns([backup.Pivot(f"{w}: {m}", s, t)
                           for w, m, s, t in narrow])
    check_layout(narrow, cols)
    assert not any(c.wide for c in cols)
    deck = backup.backup_slides(narrow)
    assert [s.key for s in deck] == [f"backup-{n}" for n in
                                     range(1, len(deck) + 1)]
    assert all(s.body.count("<div class='col backup'>") == 2
               for s in deck[:-1])


def test_tables_too_wide_for_half_a_slide_get_all_of_it(wide):
    pivs = [backup.Pivot(f"{w}: {m}", s, t) for w, m, s, t in wide]
    # Three backends beside "upstream-6.12 (baseline)": wider than half.
    assert max(p.width for p in pivs) > backup.HALF_PX
    cols = backup.columns(pivs)
    check_layout(wide, cols)
    assert cols[0].wide
    for s in backup.backup_slides(wide):
        if "<div class='col backup'>" * 2 not in s.body:
            assert s.body.count("<div class='col backup'>") == 1


def test_a_table_taller_than_a_column_goes_on_under_its_heading(narrow):
    w, m, s, t = narrow[0]
    tall = [t[0]] + [[f"v{i}", *r[1:]] for i in range(60)
                     for r in t[1:2]]
    cols = backup.columns([backup.Pivot(f"{w}: {m}", s, tall)])
    assert len(cols) >= 3
    check_layout([(w, m, s, tall)], cols)
    for col in cols[1:]:
        assert f"<b>{w}: {m} (continued)</b>" in col.parts[0]
        header = "".join(f"<th>{c}</th>" for c in t[0])
        assert header in col.parts[0]
