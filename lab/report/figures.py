"""Figures of a run (matplotlib, Agg): PNG and SVG per figure.

Every figure states its finding in the title, computed from the
statistics (lab.results.stats via Results), labels its axes with units and
carries the run's provenance in small print. They read the run through
lab.report.analysis.Results, as the recommendation and the slides do.

    change-<workload>     %change vs the baseline, per variant and backend,
                          95 % CI error bars, A/A noise band
    latency-<workload>    p50..p99.9 swap-in latency curves, log scale
    swapout               swap-out throughput per variant and backend
    heatmap               variants x backends, colour = change, a panel
                          per workload on its own colour scale
"""
from __future__ import annotations

import math
import textwrap
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend choice)
from matplotlib.colors import TwoSlopeNorm, to_rgb  # noqa: E402

from lab.report.analysis import Results, headline, what  # noqa: E402
from lab.results.metrics import HIGHER, LATENCY_FIELDS, LOWER  # noqa: E402
from lab.results.stats import CONFIDENCE, Row  # noqa: E402

PERCENTILES = tuple(f for f in LATENCY_FIELDS if f.startswith("p"))
# Okabe-Ito (colour-blind safe) without its black (the latency figure
# draws the baseline black), then Paul Tol's muted scheme.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
           "#D55E00", "#F0E442", "#332288", "#88CCEE",
           "#44AA99", "#117733", "#999933", "#DDCC77", "#882255",
           "#AA4499")
DPI = 110
TITLE_PT, TITLE_EM = 12, 0.68   # figure titles: size, bold character width
LABEL_PT = 7                # bar labels of the swap-out figure
DARK = "#222222"            # text on white or on a light bar
SCALE_PERCENTILE = 90       # a heat-map panel's colours saturate beyond it


# ------------------------------------------------------------- drawing

@dataclass(frozen=True)
class Figure:
    name: str
    title: str                      # the finding
    png: Path
    svg: Path


def finish(fig: plt.Figure, res: Results, title: str, name: str,
            dest: Path, note: str = "") -> Figure:
    # Wrapped here: matplotlib's wrap=True breaks lines only when drawing,
    # after tight_layout has left room for one line, so a long finding ran
    # into the axes. A bold character is about TITLE_EM of the font size.
    per_line = int(fig.get_figwidth() * 72 / (TITLE_EM * TITLE_PT))
    fig.suptitle(textwrap.fill(title, per_line), fontsize=TITLE_PT,
                 fontweight="bold")
    fig.text(0.005, 0.005, "\n".join(filter(None, [note,
                                                   res.provenance()])),
             fontsize=6, color="#555555", ha="left", va="bottom", wrap=True)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    dest.mkdir(parents=True, exist_ok=True)
    png, svg = dest / f"{name}.png", dest / f"{name}.svg"
    # No creation date in either file: a report regenerated from the same
    # raw results is the same, byte for byte.
    fig.savefig(png, dpi=DPI, metadata={"Software": None})
    # Text as paths: the SVG looks the same without the fonts installed.
    with matplotlib.rc_context({"svg.fonttype": "path",
                                "svg.hashsalt": name}):
        fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)
    return Figure(name, title, png, svg)


def colours_of(variants: Sequence[str]) -> dict[str, str]:
    """A colour per variant, from its name: the same in every figure and,
    unless two of a run's names hash alike, in every run. Pass the run's
    full variant list (res.source.variants), never the subset a figure
    shows. Names are placed in sorted order; a name whose colour is taken
    moves to the next free one (past len(PALETTE) variants, colours
    repeat)."""
    out: dict[str, str] = {}
    taken: set[int] = set()
    for v in sorted(variants):
        i = zlib.crc32(v.encode()) % len(PALETTE)
        if len(taken) < len(PALETTE):
            while i in taken:
                i = (i + 1) % len(PALETTE)
        taken.add(i)
        out[v] = PALETTE[i]
    return out


def change_figure(res: Results, workload: str, dest: Path) -> Figure | None:
    """%change of the workload's throughput and p99 latency per variant,
    grouped by backend."""
    metrics = [m for m in (res.throughput(workload), res.latency(workload))
               if m]
    if not metrics or not res.others():
        return None
    others, backends = res.others(), res.source.backends
    colours = colours_of(res.source.variants)
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics),
                                                       4.4), squeeze=False)
    shown: list[Row] = []
    width = 0.8 / len(others)
    for ax, metric in zip(axes[0], metrics):
        for b, be in enumerate(backends):
            rows = [res.row(workload, be, metric, v) for v in others]
            noise = next((r.noise.detectable_pct for r in rows if r), None)
            if noise is not None:
                ax.fill_between([b - 0.45, b + 0.45], -noise, noise,
                                color="#bbbbbb", alpha=0.45, lw=0,
                                label="A/A noise (smallest detectable)"
                                if b == 0 else None)
            for i, (v, r) in enumerate(zip(others, rows)):
                if r is None or r.change is None or r.change.pct is None:
                    continue
                shown.append(r)
                c, mid = r.change, r.change.pct
                x = b - 0.4 + width * (i + 0.5)
                ax.bar(x, mid, width * 0.9, color=colours[v],
                       label=v if b == 0 else None,
                       hatch=None if c.significant else "//",
                       alpha=1.0 if c.significant else 0.55)
                if c.low is not None and c.high is not None:
                    ax.errorbar(x, mid, yerr=[[mid - c.low],
                                              [c.high - mid]],
                                fmt="none", ecolor="black", capsize=3, lw=1)
                mark = "*" if c.significant else (
                    "n<3" if c.verdict == "n<3" else "ns")
                top = c.high if c.high is not None else mid
                bottom = c.low if c.low is not None else mid
                y = top if mid >= 0 else bottom
                ax.annotate(mark, (x, y), ha="center", fontsize=8,
                            va="bottom" if mid >= 0 else "top",
                            xytext=(0, 2 if mid >= 0 else -2),
                            textcoords="offset points")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(range(len(backends)), backends)
        ax.set_xlabel("swap backend")
        some = next((r for r in shown if r.metric == metric), None)
        better = "higher" if some and some.better == HIGHER else "lower"
        ax.set_ylabel(f"{what(some) if some else metric}: % change vs "
                      f"{res.source.baseline} ({better} is better)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="best")
    title = f"{workload}: " + headline(shown, res.source.baseline)
    note = (f"bars: mean % change; whiskers: {CONFIDENCE:.0%} CI; "
            "* significant, ns (hatched) not, n<3 not judged")
    return finish(fig, res, title, f"change-{workload}", dest, note)


def latency_figure(res: Results, workload: str, dest: Path) -> Figure | None:
    """Percentile curves of the fault latency, one panel per backend."""
    g = res.group(workload)
    names = [f"swapbench.{g}.latency.{p}" for p in PERCENTILES]
    if not g or not any(res.row(workload, be, names[0], v)
                        for be in res.source.backends
                        for v in res.source.variants):
        return None
    variants, backends = res.source.variants, res.source.backends
    colours = colours_of(variants)
    fig, axes = plt.subplots(1, len(backends), figsize=(4.2 * len(backends),
                                                        4.2), squeeze=False,
                             sharey=True)
    labels = [p[1:-3].replace("999", "99.9") for p in PERCENTILES]
    for ax, be in zip(axes[0], backends):
        for v in variants:
            found = [res.row(workload, be, n, v) for n in names]
            rows = [r for r in found if r is not None]
            if len(rows) < len(found):
                continue
            base = v == res.source.baseline
            # The baseline dashed black on top: variants that match it
            # stay visible under it.
            ax.plot(range(len(names)), [r.summary.mean for r in rows],
                    marker="o", ms=3, label=v, zorder=3 if base else 2,
                    color="black" if base else colours[v],
                    ls="--" if base else "-", lw=1.2 if base else 1.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(names)), labels)
        ax.set_xlabel("percentile")
        ax.set_title(be, fontsize=10)
        ax.grid(which="both", alpha=0.3)
    axes[0][0].set_ylabel("fault latency, µs (log scale; mean of repeats)")
    axes[0][0].legend(fontsize=7)
    p99 = res.latency(workload)
    p99_rows = [r for be in backends for v in res.others()
                if p99 and (r := res.row(workload, be, p99, v))]
    title = f"{workload}: " + res.headline(p99_rows)
    return finish(fig, res, title, f"latency-{workload}", dest)


def swapout_workload(res: Results) -> str | None:
    """The workload that measures swap-out (swapbench fill mode)."""
    return next((w for w in res.source.workloads
                 if res.kind(w) == "fill"), None)


def write_size(res: Results, workload: str, backend: str,
               variant: str) -> str:
    """The average write size the swap device counted, or why there is
    none (a DAX pmem device counts no block writes)."""
    io = res.row(workload, backend, "diskstats.kib_per_write", variant)
    if io:
        return f"{io.summary.mean:.0f} KiB/write"
    if res.row(workload, backend, "diskstats.writes", variant):
        return "n/a: 0 block writes"
    return "n/a: no diskstats"


def _bar_label(ax: plt.Axes, x: float, height: float, top: float,
               text: str, colour: str) -> None:
    """`text` up the bar: inside it when it fits (white on a dark bar,
    dark on a light one), else dark above it and its repeat dots
    (`top`)."""
    lo, hi = ax.get_ylim()
    # The axes' height once finish has laid the figure out under a
    # two-line title: about 0.55 of the figure's.
    axis_pt = 0.55 * ax.get_figure().get_figheight() * 72
    bar_pt = height / (hi - lo) * axis_pt
    # Rotated text: its length in points, roughly 0.6 em a character.
    if bar_pt >= LABEL_PT * (0.6 * len(text) + 1):
        r, g, b = to_rgb(colour)
        light = 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.6
        ax.annotate(text, (x, 0), ha="center", va="bottom", rotation=90,
                    fontsize=LABEL_PT, color=DARK if light else "white",
                    xytext=(0, 4), textcoords="offset points")
    else:
        ax.annotate(text, (x, top), ha="center", va="bottom", rotation=90,
                    fontsize=LABEL_PT, color=DARK, xytext=(0, 3),
                    textcoords="offset points")


def swapout_figure(res: Results, dest: Path) -> Figure | None:
    """Swap-out throughput per variant and backend, each repeat a dot,
    labelled with the average write size the swap device saw."""
    wl = swapout_workload(res)
    metric = res.throughput(wl) if wl else None
    if not wl or not metric:
        return None
    variants, backends = res.source.variants, res.source.backends
    colours = colours_of(variants)
    fig, ax = plt.subplots(figsize=(9, 4.4))
    width = 0.8 / len(variants)
    shown, labels = [], []
    for b, be in enumerate(backends):
        for i, v in enumerate(variants):
            r = res.row(wl, be, metric, v)
            if r is None:
                continue
            shown.append(r)
            x = b - 0.4 + width * (i + 0.5)
            mb = r.summary.mean / 1e6
            ax.bar(x, mb, width * 0.9, color=colours[v],
                   label=v if b == 0 else None)
            pts = [p / 1e6 for p in res.samples.values[(wl, be, metric, v)]]
            ax.plot([x] * len(pts), pts, "k.", ms=3)
            labels.append((x, mb, max([mb, *pts]),
                           write_size(res, wl, be, v), colours[v]))
    ax.set_xticks(range(len(backends)), backends)
    ax.set_xlabel("swap backend")
    ax.set_ylabel("swap-out throughput, MB/s")
    ax.margins(y=0.1)
    # After the limits are final: whether a label fits its bar depends
    # on them.
    for label in labels:
        _bar_label(ax, *label)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    title = f"{wl}: " + res.headline([r for r in shown if r.change])
    note = ("bars: mean; dots: repeats; labels: average write size the "
            "swap device counted (/proc/diskstats)")
    return finish(fig, res, title, "swapout", dest, note)


def colour_scale(changes: Sequence[float]) -> tuple[float, bool]:
    """A heat-map panel's colour scale, ±this %, and whether some cells
    lie beyond it: the SCALE_PERCENTILE-th percentile of the |changes|
    (nearest rank), so one outlier does not wash the other cells out."""
    mags = sorted(abs(x) for x in changes)
    if not mags:
        return 1.0, False
    span = max(mags[math.ceil(len(mags) * SCALE_PERCENTILE / 100) - 1], 1.0)
    return span, mags[-1] > span


def heatmap_figure(res: Results, dest: Path) -> Figure | None:
    """Every non-baseline variant against every (workload, backend) on the
    workload's throughput; colour = improvement, text = %change + mark.
    One panel per workload, each on its own colour scale: a swap-out
    workload's +400 % would leave a swap-in workload's ±20 % white."""
    metric_of = {w: m for w in res.source.workloads
                 if (m := res.throughput(w))}
    workloads = list(metric_of)
    others, backends = res.others(), res.source.backends
    if not workloads or not others:
        return None
    fig, axes = plt.subplots(
        1, len(workloads), squeeze=False,
        figsize=(len(workloads) * (1.2 * len(backends) + 1.6) + 1.4,
                 1.0 + 0.55 * len(others) + 1.2))
    shown: list[Row] = []
    for ax, w in zip(axes[0], workloads):
        grid = [[math.nan] * len(backends) for _ in others]
        for i, v in enumerate(others):
            for j, be in enumerate(backends):
                r = res.row(w, be, metric_of[w], v)
                if r is None or r.change is None or r.change.pct is None:
                    ax.text(j, i, "–", ha="center", va="center", fontsize=8)
                    continue
                shown.append(r)
                # Colour by improvement so "good" is one colour on every
                # row.
                grid[i][j] = r.change.pct if r.better != LOWER \
                    else -r.change.pct
                mark = {"n<3": " ?"}.get(r.change.verdict,
                                         " *" if r.change.significant else "")
                ax.text(j, i, f"{r.change.pct:+.1f}%{mark}", ha="center",
                        va="center", fontsize=8, fontweight="bold"
                        if r.change.significant else "normal")
        span, clipped = colour_scale([x for row in grid for x in row
                                      if not math.isnan(x)])
        im = ax.imshow(grid, cmap="RdBu", aspect="auto",
                       norm=TwoSlopeNorm(0, -span, span))
        ax.set_title(w, fontsize=10)
        ax.set_xticks(range(len(backends)), backends, fontsize=8)
        ax.set_yticks(range(len(others)),
                      others if ax is axes[0][0] else [], fontsize=8)
        ax.set_xlabel("swap backend")
        bar = fig.colorbar(im, ax=ax, shrink=0.8,
                           extend="both" if clipped else "neither")
        metric = next((r for r in shown if r.workload == w), None)
        bar.set_label(f"{what(metric) if metric else 'throughput'} change "
                      f"vs {res.source.baseline}, %\n(blue = better; scale "
                      f"±{span:.0f} %" + (", beyond: clipped" if clipped
                                          else "") + ")", fontsize=7)
    axes[0][0].set_ylabel("variant")
    note = (f"* significant ({CONFIDENCE:.0%} CI excludes 0); "
            "? fewer than 3 repeats, not judged; colour scale per workload: "
            f"the {SCALE_PERCENTILE}th percentile of its |changes|")
    title = f"Throughput on {', '.join(workloads)}: " + headline(
        shown, res.source.baseline)
    return finish(fig, res, title, "heatmap", dest, note)


def write_figures(res: Results, dest: Path) -> list[Figure]:
    """Every figure the run has data for, under `dest`."""
    out = [heatmap_figure(res, dest)]
    for wl in res.source.workloads:
        out.append(change_figure(res, wl, dest))
        if res.kind(wl) != "fill":
            out.append(latency_figure(res, wl, dest))
    out.append(swapout_figure(res, dest))
    return [f for f in out if f is not None]
