"""When a run was measured: its pieces.

A long study runs in pieces (at most two hours each, a session's
share), resumed by the store. Each cell's provenance records when it
started and ended; cells more than GAP_S apart belong to different
pieces. A report says which pieces ran when, so a reader can set host
drift between pieces beside the answers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from lab.results.record import CellRecord
from lab.results.store import seconds

# A pause this long between two cells is another piece: longer than any
# cell, its build or an adaptive round's planning.
GAP_S = 30 * 60


@dataclass(frozen=True)
class Piece:
    started: str            # ISO 8601 UTC of its first cell's start
    ended: str              # ... and of its last cell's end
    cells: int

    @property
    def minutes(self) -> float:
        return (seconds(self.ended) - seconds(self.started)) / 60

    def text(self) -> str:
        day, start = self.started[:10], self.started[11:16]
        end_day, end = self.ended[:10], self.ended[11:16]
        span = f"{day} {start} to {end}" if end_day == day else \
            f"{day} {start} to {end_day} {end}"
        return f"{span} UTC ({self.cells} cells)"


def pieces(records: Iterable[CellRecord], gap_s: float = GAP_S
           ) -> list[Piece]:
    """The run's pieces, oldest first, from its cells' time stamps
    (cells without them are left out)."""
    spans = sorted((p["started"], p["ended"]) for p in
                   (rec.provenance for rec in records)
                   if p.get("started") and p.get("ended"))
    out: list[Piece] = []
    first = last = ""
    n = 0
    for start, end in spans:
        if n and seconds(start) - seconds(last) > gap_s:
            out.append(Piece(first, last, n))
            n = 0
        if not n:
            first, last = start, end
        last = max(last, end)
        n += 1
    if n:
        out.append(Piece(first, last, n))
    return out


def pieces_text(found: list[Piece]) -> str:
    """A sentence for a report of a run measured in several pieces ("" for
    one: its time span is the run's)."""
    if len(found) < 2:
        return ""
    return (f"Measured in {len(found)} pieces: "
            + "; ".join(p.text() for p in found) + ".")
