"""What a run decides, as matrix.yaml declares it: a question (two
variants compared on one metric) and the published claim a question may
set its answer beside. lab/spec/questions.py parses them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    name: str
    candidate: str
    reference: str
    series: tuple[str, ...]     # () for an A/A pair
    workload: str
    backends: tuple[str, ...]
    metric: str
    better: str                 # higher | lower
    delta_pct: float            # the smallest effect that matters
    where: str                  # file:line, for messages
    claim: "Claim | None" = None    # a published figure to set beside

    @property
    def is_aa(self) -> bool:
        return not self.series


@dataclass(frozen=True)
class Figure:
    """One more figure the source gives for the same pair (a percentile
    beside the average): the reference's and the candidate's values."""
    metric: str
    reference: float
    candidate: float
    where: str                  # file:line

    @property
    def change_pct(self) -> float | None:
        if self.reference == 0:
            return None
        return (self.candidate / self.reference - 1) * 100


@dataclass(frozen=True)
class Claim:
    """What a source (a seed, a paper) reported for this comparison: the
    answers set the lab's result beside it."""
    source: str                 # which document, which figure
    # its %change, candidate against reference; None for a question the
    # source asked and left open (no figure to set beside)
    change_pct: float | None
    note: str = ""              # why the lab's setting differs, if known
    figures: tuple[Figure, ...] = ()    # reported beside, never tested
    # metrics that show why the lab may differ (a readahead hit ratio,
    # the length of the steady swap-out): each arm's median is shown
    explain: tuple[str, ...] = ()
    # what this testbed cannot measure of the difference, and why (the
    # report says "not measurable here: ...")
    unmeasurable: str = ""
