"""What could go wrong with sending a series upstream, from a run: the
risks the upstream-first ranking lists beside a series' wins. They are
listed, never netted against the wins, and a risk to data (a mismatched
page, a damaged file beside a swap file) or a new kernel complaint
blocks a recommendation.

A risk is charged to every variant of the run that carries the series
(all of it), and set beside the variants of the same tree that carry
none of it: a failure in `beyond` may come from any of its series, so
each of them names it.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from lab.report.effect import Effect
from lab.results import faults
from lab.results.record import complaints
from lab.results.stats import compare
from lab.spec.model import Matrix

if TYPE_CHECKING:       # a type only: the risks never analyse a run
    from lab.report.analysis import Results

# The tail of the fault latency: a series that speeds the mean up may
# still stall a few faults for long.
TAIL_FIELDS = ("p999_us", "max_us")


@dataclass
class Risks:
    carriers: tuple[str, ...]           # the run's variants with the series
    others: tuple[str, ...]             # same tree, none of the series
    tails: list[Effect] = field(default_factory=list)   # significant worse
    complaints: dict[str, int] = field(default_factory=dict)
    complaints_without: dict[str, int] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)    # cell -> why
    mismatches: int = 0
    filler_damaged: int = 0
    lost_pages: int = 0                 # unreadable, lost loudly (SIGBUS)
    lost_pages_without: int = 0

    @property
    def new_complaints(self) -> dict[str, int]:
        return {k: v for k, v in self.complaints.items()
                if not self.complaints_without.get(k)}

    @property
    def blocking(self) -> bool:
        """Data corrupted, or the kernel complains where it did not."""
        return bool(self.mismatches or self.filler_damaged or
                    self.new_complaints)

    @property
    def count(self) -> int:
        """How many kinds of risk the run shows."""
        return sum(map(bool, (self.tails, self.new_complaints, self.failed,
                              self.mismatches, self.filler_damaged,
                              self.lost_pages > self.lost_pages_without)))

    def lines(self) -> list[str]:
        """Each risk in words; one line saying none when there is none."""
        out = [f"tail regression: {e.text()}" for e in self.tails]
        if self.new_complaints:
            out.append(f"new kernel complaints: {flags(self.new_complaints)}"
                       f" (without it: {flags(self.complaints_without)})")
        if self.failed:
            out.append(f"{len(self.failed)} failed cells: " + ", ".join(
                f"{c} ({why})" for c, why in sorted(self.failed.items())))
        if self.mismatches:
            out.append(f"{self.mismatches} pages read back wrong")
        if self.filler_damaged:
            out.append(f"{self.filler_damaged} files beside a swap file "
                       "damaged")
        if self.lost_pages > self.lost_pages_without:
            out.append(f"{self.lost_pages} pages lost loudly under injected "
                       f"faults (without it: {self.lost_pages_without})")
        if out:
            return out
        return [f"none found in the cells of {', '.join(self.carriers)} "
                "(tails at p99.9 and max, kernel complaints, failed cells, "
                "page checks)"]


def flags(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in counts.items()) or "none"


def carriers(res: Results, matrix: Matrix, tree: str,
             series: Sequence[str]) -> tuple[tuple[str, ...],
                                              tuple[str, ...]]:
    """The run's variants of `tree` with all of `series`, and those with
    none of it."""
    have, lack = [], []
    for name in res.source.variants:
        v = matrix.variants.get(name)
        if v is None or v.tree != tree:
            continue
        if all(s in v.series for s in series):
            have.append(name)
        elif not any(s in v.series for s in series):
            lack.append(name)
    return tuple(have), tuple(lack)


def _complaints(res: Results, variants: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rec in res.records.values():
        if rec.cell.variant in variants:
            for name, count in complaints(rec.result).items():
                out[name] = out.get(name, 0) + count
    return out


def pair_effects(res: Results, with_: str, without: str,
                 metrics: Callable[[str], Iterable[str | None]]
                 ) -> list[Effect]:
    """The change from `without` to `with_` on every (workload, backend)
    both measured, for the metrics `metrics(workload)` names."""
    out = []
    for wl in res.source.workloads:
        for name in filter(None, metrics(wl)):
            info = res.samples.info[name]
            for be in res.source.backends:
                a = res.samples.values.get((wl, be, name, without))
                b = res.samples.values.get((wl, be, name, with_))
                if not a or not b:
                    continue
                seed = zlib.crc32(f"{wl}/{be}/{name}/{with_}/{without}"
                                  .encode())
                out.append(Effect(with_, without, wl, be, name, info.better,
                                  (len(a), len(b)),
                                  compare(a, b, info.better, seed)))
    return out


def tail_regressions(res: Results, with_: str,
                     without: str) -> list[Effect]:
    """Fault-latency tails that the pair's test calls worse, unadjusted."""
    return [e for e in pair_effects(
        res, with_, without,
        lambda wl: [res.latency(wl, f) for f in TAIL_FIELDS])
        if e.change.verdict == "worse"]


def risks(res: Results, matrix: Matrix, tree: str, series: Sequence[str],
          pairs: Sequence[tuple[str, str]]) -> Risks:
    have, lack = carriers(res, matrix, tree, series)
    out = Risks(have, lack)
    for with_, without in pairs:
        out.tails += tail_regressions(res, with_, without)
    out.complaints = _complaints(res, have)
    out.complaints_without = _complaints(res, lack)
    for rec in res.records.values():
        if rec.cell.variant in have and rec.finished and \
                rec.outcome != "ok":
            out.failed[rec.cell.id] = rec.result.get("reason") or "failed"
    rows = {r.variant: r for r in faults.summarize(res.records.values(),
                                                   have + lack)}
    for name in have:
        row = rows.get(name)
        if row:
            out.mismatches += row.mismatches
            out.filler_damaged += row.filler_damaged
            out.lost_pages += row.lost_pages
    out.lost_pages_without = sum(rows[n].lost_pages for n in lack
                                 if n in rows)
    return out
