"""A change between two variants in words and numbers: the effect of a
series on one measured key (the upstream-first ranking's unit), a
change read as a gain, a metric's name as a reader says it. A leaf of
the report stage: no run, no plotting.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lab.results.metricinfo import LOWER
from lab.results.stats import Change


class Compared(Protocol):
    """A metric's change against a baseline: a table row, or a series'
    effect in the upstream-first ranking."""
    @property
    def metric(self) -> str: ...
    @property
    def better(self) -> str: ...
    @property
    def change(self) -> Change | None: ...


def gain(row: Compared) -> tuple[float, float, float] | None:
    """The change of a row as an improvement (positive = better): value
    and CI; None without a judged change. Lower-is-better metrics flip."""
    c = row.change
    if c is None or c.pct is None or c.low is None or c.high is None:
        return None
    if row.better == LOWER:
        return -c.pct, -c.high, -c.low
    return c.pct, c.low, c.high


def pct_text(value: float) -> str:
    return f"{value:+.1f} %"


def what(row: Compared) -> str:
    """A metric in words, for titles: 'p99 swap-in latency'."""
    parts = row.metric.split(".")
    if parts[-1] == "later_pass_s":
        return "time per later pass"
    if parts[-1] == "steady_pages_per_s":
        return "steady swap-out rate"
    if parts[-1] == "bytes_per_s":
        return "swap-out throughput" if parts[1] == "fill" else "throughput"
    if "latency" in parts:
        return f"{parts[-1][:-3].replace('p999', 'p99.9')} fault latency"
    return row.metric


@dataclass(frozen=True)
class Effect:
    """The change from `without` to `with_` on one measured key."""
    with_: str
    without: str
    workload: str
    backend: str
    metric: str
    better: str
    n: tuple[int, int]                  # repeats: without, with
    change: Change
    # Benjamini-Hochberg q-value, when the effect is one of a family of
    # tests (the upstream-first ranking's primary comparisons)
    q: float | None = None

    def text(self) -> str:
        c = self.change
        where = f"{what(self)} on {self.workload}/{self.backend}"
        if c.pct is None:
            return f"{where}: no comparison (baseline mean 0)"
        ci = f" [{c.low:+.1f}, {c.high:+.1f}]" if c.low is not None else ""
        q = f", q={self.q:.3f}" if self.q is not None else ""
        return (f"{where}: {pct_text(c.pct)}{ci} "
                f"{VERDICT_TEXT.get(c.verdict, c.verdict)} "
                f"({self.with_} vs {self.without}, n={self.n[1]} vs "
                f"{self.n[0]}{q})")


# Verdicts as prose: a bare "ns" after a latency reads as nanoseconds.
VERDICT_TEXT = {"ns": "not significant", "n<3": "not judged (n<3)"}
