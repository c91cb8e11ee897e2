"""Tables from the statistics: `compare` (lkp-tests style text), the
report pivots (Markdown, CSV, HTML) and the seeds' latency format.

Every table names the matrix (file and hash, sub-matrix), the run and
the repeats it rests on. Rendering is pure: rows in, text out.
"""
from __future__ import annotations

import csv
import io
from typing import Iterable, Mapping, Sequence

from lab.errors import LabError
from lab.results.metrics import HIGHER, LATENCY_FIELDS, LOWER, gather
from lab.results.stats import BOOTSTRAP_MIN_N, CONFIDENCE, MIN_N, Row, analyze
from lab.results.store import Run, Source

MARK_SIGNIFICANT, MARK_FEW = "*", "?"
LEGEND = (f"{MARK_SIGNIFICANT} significant: the {CONFIDENCE:.0%} confidence "
          f"interval of the %change excludes 0 (Welch t below "
          f"{BOOTSTRAP_MIN_N} repeats, bootstrap from {BOOTSTRAP_MIN_N}); "
          f"{MARK_FEW} fewer than {MIN_N} repeats on a side, not judged")
BACKSLASH = "\\"
SEED_PERCENTILES = ("p50_us", "p60_us", "p70_us", "p80_us", "p90_us",
                    "p95_us", "p99_us")


def _shown(rows: Sequence[Row], all_metrics: bool) -> list[str]:
    """Metric names in first-seen order: headline ones, and any with a
    significant change (lkp shows only what changed)."""
    out: list[str] = []
    for r in rows:
        if r.metric not in out and (all_metrics or r.headline or
                                    (r.change and r.change.significant)):
            out.append(r.metric)
    return out


def index_rows(rows: Iterable[Row]) -> dict[tuple[str, str, str, str], Row]:
    return {(r.workload, r.backend, r.metric, r.variant): r for r in rows}


def _measured(rows: Sequence[Row], variants: Sequence[str]) -> str:
    n = {v: max((r.summary.n for r in rows if r.variant == v), default=0)
         for v in variants}
    return ", ".join(f"{v} n={n[v]}" for v in variants)


def failed_lines(failed: Mapping[str, str] | None,
            cells: Iterable[str] | None = None) -> list[str]:
    """A line naming the failed cells (of `cells`, default all)."""
    failed = failed or {}
    hit = [f"{c} ({failed[c]})" for c in (failed if cells is None else cells)
           if c in failed]
    return [f"failed cells, left out: {', '.join(hit)}"] if hit else []


# ---------------------------------------------------------------- compare

def _lkp_num(value: float) -> str:
    # lkp-tests prints large values as integers and small ones with two
    # decimals, which keeps the columns narrow.
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.2f}"


def _lkp_sd(row: Row | None) -> str:
    cv = row.summary.cv_pct if row else None
    return f" ± {cv:>2.0f}%" if cv is not None else " " * 6


def _mark(row: Row) -> str:
    if row.change is None:
        return " "
    if row.change.verdict == "n<3":
        return MARK_FEW
    return MARK_SIGNIFICANT if row.change.significant else " "


def compare_text(rows: Sequence[Row], source: Source, base: str,
                 others: Sequence[str],
                 failed: Mapping[str, str] | None = None,
                 all_metrics: bool = False) -> str:
    """lkp-style blocks, one per (workload, backend), of `others` against
    `base`; `rows` must come from stats.analyze with baseline=`base`."""
    variants = [base, *others]
    unknown = [v for v in variants if v not in source.variants]
    if unknown:
        raise LabError(f"no variant {', '.join(unknown)} in run "
                       f"{source.run_id}; it has: "
                       f"{', '.join(source.variants)}")
    index = index_rows(rows)
    out = []
    for wl in source.workloads:
        for be in source.backends:
            block = [r for r in rows if r.workload == wl and r.backend == be
                     and r.variant in variants]
            if not block:
                continue
            cells = [f"{v}-{be}-{wl}-r{i}" for v in variants
                     for i in range(1, source.repeats + 1)]
            out += [f"{wl} on {be}", source.line(),
                    f"repeats measured: {_measured(block, variants)}",
                    *failed_lines(failed, cells), "",
                    f"{base:<16} " + "".join(f"{o:<27} " for o in others),
                    "-" * 16 + " " + ("-" * 26 + " ") * len(others),
                    f"{'%stddev':>16}" + f"{'%change':>10} {'%stddev':>17}"
                    * len(others),
                    f"{BACKSLASH:>14}" + f"{'|':>11}{BACKSLASH:>17}"
                    * len(others)]
            noise = []
            for metric in _shown(block, all_metrics):
                b = index.get((wl, be, metric, base))
                line = (f"{_lkp_num(b.summary.mean):>10}" if b
                        else " " * 10) + _lkp_sd(b)
                for o in others:
                    r = index.get((wl, be, metric, o))
                    pct = r.change.pct if r and r.change else None
                    line += (f"{pct:>+9.1f}%" if pct is not None
                             else " " * 10) + (_mark(r) if r else " ")
                    line += (f"{_lkp_num(r.summary.mean):>11}" if r
                             else " " * 11) + _lkp_sd(r)
                out.append(f"{line}  {metric}")
                any_row = b or next(r for r in block if r.metric == metric)
                det = any_row.noise.detectable_pct
                if any_row.headline and det is not None:
                    noise.append(f"{metric} ±{det:.1f}%")
            out += ["", LEGEND]
            if noise:
                out.append("A/A noise, smallest detectable %change: "
                           + ", ".join(noise))
            out.append("")
    return "\n".join(line.rstrip() for line in out)


# ----------------------------------------------------------------- report

def human(value: float, unit: str) -> str:
    if unit == "B/s":
        for div, name in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
            if abs(value) >= div:
                return f"{value / div:.3g} {name}"
        return f"{value:.0f} B/s"
    if unit == "us":
        return _seed_us(value)
    number = f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
    return f"{number} {unit}"


def pivot_cell(row: Row | None, base_row: Row | None) -> str:
    """A pivot cell: the baseline's mean, or the change against it."""
    if row is None:
        return "–"
    s = row.summary
    if row.change is None:
        cv = f" ±{s.cv_pct:.1f}%" if s.cv_pct is not None else ""
        return f"{human(s.mean, row.unit)}{cv} (n={s.n})"
    c = row.change
    mark = f" {MARK_SIGNIFICANT}" if c.significant else ""
    if c.pct is None:
        base = human(base_row.summary.mean, row.unit) if base_row else "0"
        return f"{base} → {human(s.mean, row.unit)}{mark}"
    if c.verdict == "n<3":
        return f"{c.pct:+.1f}% (n<3)"
    ci = f" [{c.low:+.1f}, {c.high:+.1f}]" if c.low is not None else ""
    return f"{c.pct:+.1f}%{ci}{mark}"


def _better(better: str) -> str:
    return {HIGHER: "higher is better", LOWER: "lower is better"}.get(
        better, "neither better nor worse")


def pivots(rows: Sequence[Row], source: Source, all_metrics: bool = False
           ) -> list[tuple[str, str, str, list[list[str]]]]:
    """(workload, metric, subtitle, table) per pivot: a header row, then a
    row per variant (the baseline first), then the A/A noise row."""
    index = index_rows(rows)
    out = []
    variants = [v for v in source.variants if v != source.baseline]
    if source.compared:
        variants.insert(0, source.baseline)
    for wl in source.workloads:
        wl_rows = [r for r in rows if r.workload == wl]
        for metric in _shown(wl_rows, all_metrics):
            some = next(r for r in wl_rows if r.metric == metric)
            table = [["variant", *source.backends]]
            for v in variants:
                label = f"{v} (baseline)" if v == source.baseline else v
                table.append([label, *(
                    pivot_cell(index.get((wl, be, metric, v)),
                          index.get((wl, be, metric, source.baseline)))
                    for be in source.backends)])
            noise = ["A/A detectable"]
            for be in source.backends:
                r = next((r for r in wl_rows if r.backend == be
                          and r.metric == metric), None)
                det = r.noise.detectable_pct if r else None
                noise.append(f"±{det:.1f}%" if det is not None else "n<3")
            table.append(noise)
            out.append((wl, metric, f"{some.unit}, {_better(some.better)}",
                        table))
    return out


def about(source: Source) -> list[str]:
    """What the pivot cells are: changes against the baseline, or (no
    baseline in the run) each variant's own values."""
    if not source.compared:
        return [source.no_baseline() + "."]
    return [f"Baseline: {source.baseline}. Cells: %change of the mean "
            f"against the baseline with its {CONFIDENCE:.0%} confidence "
            "interval.", "", LEGEND + "."]


def report_markdown(rows: Sequence[Row], source: Source,
                    failed: Mapping[str, str] | None = None,
                    all_metrics: bool = False) -> str:
    out = ["# swaplab report", "", source.line() + ".",
           *about(source), ""]
    out += [*failed_lines(failed), ""] if failed else []
    current = None
    for wl, metric, sub, table in pivots(rows, source, all_metrics):
        if wl != current:
            measured = _measured([r for r in rows if r.workload == wl],
                                 source.variants)
            out += [f"## {wl}", "", f"repeats measured: {measured}", ""]
            current = wl
        out += [f"### {metric} ({sub})", "",
                "| " + " | ".join(table[0]) + " |",
                "|" + "---|" * len(table[0])]
        out += ["| " + " | ".join(r) + " |" for r in table[1:]]
        out.append("")
    out += ["## Latency", "", "```", latency_text(rows, source), "```", ""]
    return "\n".join(out)


CSV_FIELDS = ("run", "matrix", "matrix_sha256", "submatrix",
              "repeats_planned", "workload", "backend", "metric", "unit",
              "better", "variant", "n", "mean", "median", "stddev", "cv_pct",
              "pct_change", "ci_low", "ci_high", "method", "p", "verdict",
              "detectable_pct")


def report_csv(rows: Sequence[Row], source: Source) -> str:
    """Every statistic in long form, one line per (workload, backend,
    metric, variant); each line names its run and matrix."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in rows:
        s, c = r.summary, r.change
        change = (c.pct, c.low, c.high, c.method, c.p, c.verdict) if c \
            else (None, None, None, None, None, "baseline"
                  if r.variant == source.baseline else "no baseline")
        fields = [source.run_id, source.matrix_file, source.matrix_sha256,
                  source.submatrix, source.repeats, r.workload, r.backend,
                  r.metric, r.unit, r.better, r.variant, s.n, s.mean,
                  s.median, s.stddev, s.cv_pct, *change,
                  r.noise.detectable_pct]
        w.writerow("" if x is None else x for x in fields)
    return buf.getvalue()


# ---------------------------------------------------------------- latency

def _seed_us(us: float) -> str:
    # The seeds write "40.08us", "1us", "16.2ms": at most two decimals,
    # trailing zeros dropped, milliseconds from 1000 us on.
    value, unit = (us / 1000, "ms") if us >= 1000 else (us, "us")
    return f"{value:.2f}".rstrip("0").rstrip(".") + unit


def latency_text(rows: Sequence[Row], source: Source) -> str:
    """The seeds' latency blocks per workload, backend, variant and
    swapbench group; each figure is the mean over the measured repeats."""
    index = index_rows(rows)
    out = [source.line()]
    groups: list[str] = []
    for r in rows:
        parts = r.metric.split(".")
        if r.metric.endswith(".latency.samples") and parts[1] not in groups:
            groups.append(parts[1])
    for wl in source.workloads:
        for be in source.backends:
            for v in source.variants:
                for g in groups:
                    found = {f: index.get((wl, be,
                                           f"swapbench.{g}.latency.{f}", v))
                             for f in ("samples", *LATENCY_FIELDS)}
                    samples = found["samples"]
                    if samples is None:
                        continue
                    fig = {f: r.summary.mean for f, r in found.items() if r}
                    out += ["", f"{wl} on {be}, {v}, group {g} "
                            f"(mean of {samples.summary.n} repeats):",
                            f"samples: {samples.summary.mean:.0f}, "
                            f"average: {_seed_us(fig['avg_us'])}, "
                            f"min: {_seed_us(fig['min_us'])}, "
                            f"max: {_seed_us(fig['max_us'])}",
                            ", ".join(f"{p[1:-3]}th: {_seed_us(fig[p])}"
                                      for p in SEED_PERCENTILES)]
    return "\n".join(out)


# ------------------------------------------------------- for the command

def compare_run(run: Run, base: str, others: Sequence[str],
                all_metrics: bool = False) -> str:
    """`lab compare`: the run's cells, analysed against `base`."""
    samples = gather(run.records().values())
    rows = analyze(samples.values, samples.info, base)
    return compare_text(rows, Source.of(run), base, others, samples.failed,
                        all_metrics)
