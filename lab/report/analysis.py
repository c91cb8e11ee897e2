"""A run, analysed once, and its findings in words: what the figures,
the recommendation, the slides and the tables read a run from. No
plotting here (lab.report.figures draws), so the report's text needs
neither matplotlib nor a display.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from lab.report.effect import gain, pct_text, what
from lab.results.metrics import Samples, gather
from lab.results.stats import Row, analyze
from lab.results.record import CellRecord
from lab.results.store import Run, Source

# swapbench's group names: the measured group of each mode (combined mode's
# background group only makes the pressure, "total" mixes the two).
PRIMARY_GROUPS = ("main", "fg", "fill")


@dataclass
class Results:
    """A run, analysed once: statistics rows plus the facts the guests
    reported (kernel releases, swap devices, kernel log flags)."""
    source: Source
    rows: list[Row]
    samples: Samples
    records: dict[str, CellRecord]
    manifest: dict[str, Any]
    index: dict[tuple[str, str, str, str], Row] = field(init=False,
                                                        repr=False)

    def __post_init__(self) -> None:
        self.index = {(r.workload, r.backend, r.metric, r.variant): r
                      for r in self.rows}

    @classmethod
    def of(cls, run: Run) -> "Results":
        records = run.records()
        samples = gather(records.values())
        source = Source.of(run)
        rows = analyze(samples.values, samples.info, source.baseline)
        return cls(source, rows, samples, records, run.manifest)

    def row(self, workload: str, backend: str, metric: str,
            variant: str) -> Row | None:
        return self.index.get((workload, backend, metric, variant))

    def others(self) -> list[str]:
        """The variants compared with the baseline: none when the run
        does not have the baseline (no change figures then)."""
        if not self.source.compared:
            return []
        return [v for v in self.source.variants if v != self.source.baseline]

    def headline(self, rows: Sequence[Row]) -> str:
        if not self.source.compared:
            return (f"absolute values (no baseline '{self.source.baseline}'"
                    " in this run)")
        return headline(rows, self.source.baseline)

    def group(self, workload: str) -> str | None:
        """The swapbench group that measures the workload."""
        names = {r.metric.split(".")[1] for r in self.rows
                 if r.workload == workload and r.metric.startswith("swapbench.")}
        return next((g for g in PRIMARY_GROUPS if g in names), None)

    def throughput(self, workload: str) -> str | None:
        g = self.group(workload)
        return f"swapbench.{g}.bytes_per_s" if g else None

    def latency(self, workload: str, field: str = "p99_us") -> str | None:
        g = self.group(workload)
        name = f"swapbench.{g}.latency.{field}"
        return name if any(r.metric == name for r in self.rows) else None

    def kind(self, workload: str) -> str | None:
        """seq | random | combined | fill, from what swapbench reported
        (names in the matrix are the user's choice, the mode is not)."""
        for rec in self.records.values():
            if rec.cell.workload != workload:
                continue
            doc = ((rec.result.get("workload") or {}).get("result") or {})
            mode = doc.get("mode")
            if mode in ("combined", "fill"):
                return mode
            groups = doc.get("groups") or []
            if groups:
                return groups[0].get("pattern")
        return None

    def releases(self) -> dict[str, list[str]]:
        """variant -> the kernel releases its guests reported."""
        out: dict[str, list[str]] = {}
        for rec in self.records.values():
            rel = rec.provenance.get("kernel_release")
            if rel and rel not in out.setdefault(rec.cell.variant, []):
                out[rec.cell.variant].append(rel)
        return out

    def devices(self) -> dict[str, dict[str, Any]]:
        """backend -> the swap device its first successful guest saw."""
        out: dict[str, dict[str, Any]] = {}
        for rec in sorted(self.records.values(), key=lambda r: r.cell):
            dev = rec.provenance.get("guest_device")
            if dev and rec.cell.backend not in out:
                out[rec.cell.backend] = dev
        return out

    def measured(self) -> tuple[int, int]:
        """(fewest, most) repeats any measured key has."""
        ns = [len(v) for v in self.samples.values.values()] or [0]
        return min(ns), max(ns)

    def provenance(self) -> str:
        s = self.source
        lo, hi = self.measured()
        n = f"{lo}" if lo == hi else f"{lo}-{hi}"
        rel = ", ".join(sorted({r for rs in self.releases().values()
                                for r in rs}))
        failed = len(self.samples.failed)
        return (f"run {s.run_id} · matrix {s.matrix_file} sha256 "
                f"{s.matrix_sha256[:12]} ({s.submatrix}) · {s.repeats} "
                f"repeats planned, n={n} measured"
                + (f", {failed} failed cells left out" if failed else "")
                + f" · kernels: {rel or 'none reported'}")


# ------------------------------------------------------------ findings

def finding(row: Row, baseline: str) -> str:
    """One sentence on a row's change against the baseline."""
    c = row.change
    if c is None or c.pct is None:
        return f"{row.variant}: no comparison with {baseline}"
    where = f"{what(row)} on {row.backend}"
    if c.verdict == "n<3":
        return (f"{row.variant}: {where} {pct_text(c.pct)}, too few "
                "repeats to judge")
    if not c.significant:
        return (f"{row.variant}: no significant difference in {where} "
                f"({pct_text(c.pct)}, CI {c.low:+.1f}..{c.high:+.1f})")
    verb = "raises" if c.pct > 0 else "cuts"
    # From 3x on, the fold is what a reader compares ("12x faster").
    if c.pct >= 200:
        return f"{row.variant} {verb} {where} {1 + c.pct / 100:.1f}x " \
            f"({c.pct:+.0f} %)"
    if c.pct <= -100 * 2 / 3:
        return f"{row.variant} {verb} {where} {1 / (1 + c.pct / 100):.1f}x" \
            f" ({c.pct:+.0f} %)"
    return f"{row.variant} {verb} {where} by {abs(c.pct):.0f} %"


def headline(rows: Sequence[Row], baseline: str) -> str:
    """The title of a figure over `rows`: its biggest significant
    improvement (and worst regression), that nothing is significant, or
    that nothing could be judged (fewer than 3 repeats)."""
    judged = [(g[0], r) for r in rows if r.change and r.change.significant
              and (g := gain(r)) is not None]
    if judged:
        best = max(judged, key=lambda t: t[0])
        out = finding(best[1], baseline)
        worst = min(judged, key=lambda t: t[0])
        if worst[0] < 0 and worst[1] is not best[1]:
            out += f"; {finding(worst[1], baseline)}"
        return out
    changes = [(r, r.change.pct) for r in rows
               if r.change and r.change.pct is not None]
    few = [(r, p) for r, p in changes
           if r.change and r.change.verdict == "n<3"]
    if not changes or len(few) < len(changes):
        return (f"No variant differs significantly from {baseline}"
                + (f" ({len(few)} of {len(changes)} comparisons not judged:"
                   " fewer than 3 repeats)" if few else ""))
    repeats = ("1 repeat" if all(r.summary.n == 1 for r, _ in few)
               else "fewer than 3 repeats")
    # Not a verdict: the largest change is what a reader looks for first,
    # so the title names it and says it is unjudged.
    big, big_pct = max(few, key=lambda t: abs(t[1]))
    return (f"{repeats}, nothing judged against {baseline}; largest change "
            f"seen: {big.variant} {what(big)} on {big.backend} "
            f"{pct_text(big_pct)} (unjudged)")
