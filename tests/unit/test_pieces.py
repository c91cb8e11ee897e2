"""A run's pieces, from the time stamps of a real run's cells."""
from __future__ import annotations

import dataclasses

from lab.paths import REPO
from lab.results.pieces import Piece, pieces, pieces_text
from lab.results.store import open_results_dir

# 153 cells in 40 min: the first pass and its adaptive rounds.
QUICK = REPO / "reports" / "20261206-023500-quick" / "raw"


def records():
    return list(open_results_dir(QUICK).records().values())


def shifted(rec, hours: float):
    """The record as if measured `hours` later."""
    prov = dict(rec.provenance)
    for key in ("started", "ended"):
        h, rest = int(prov[key][11:13]), prov[key][13:]
        prov[key] = f"{prov[key][:11]}{h + int(hours):02d}{rest}"
    return dataclasses.replace(rec, provenance=prov)


def test_one_session_is_one_piece() -> None:
    recs = records()
    [one] = pieces(recs)
    assert one.cells == len(recs) == 153
    assert one.started == min(r.provenance["started"] for r in recs)
    assert one.ended == max(r.provenance["ended"] for r in recs)
    assert 39 < one.minutes < 41
    assert pieces_text([one]) == ""


def test_a_resumed_run_is_several_pieces() -> None:
    recs = records()
    early = recs[:60]
    # The other cells resumed five hours later (a later session).
    late = [shifted(r, 5) for r in recs[60:]]
    first, second = pieces(early + late)
    assert first.cells + second.cells == 153
    assert second.started[11:13] >= "07"
    text = pieces_text([first, second])
    assert text.startswith("Measured in 2 pieces: 2026-12-06 ")
    assert f"UTC ({first.cells} cells); 2026-12-06 " in text


def test_a_piece_across_midnight_names_both_days() -> None:
    p = Piece("2026-12-06T23:10:00Z", "2026-12-07T00:40:00Z", 12)
    assert p.text() == "2026-12-06 23:10 to 2026-12-07 00:40 UTC (12 cells)"
    assert p.minutes == 90
