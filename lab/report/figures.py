"""Figures of a run (matplotlib, Agg): PNG and SVG per figure.

Every figure states its finding in the title, computed from the
statistics (lab.results.stats via Results), labels its axes with units,
and is drawn for a projector (lab.report.figstyle: sizes, text of at
least 14 pt as shown, colours, no overlapping text); the run's
provenance is in its metadata. They read the run through
lab.report.analysis.Results, as the recommendation and the slides do.

    change-<workload>     change vs the baseline per variant and backend
                          (% or, from 3x on, a fold axis), 95 % CI
                          whiskers, A/A noise band, unjudged grey
    latency-<workload>    p50..p99.9 fault latency curves, log scale,
                          shaded from the lowest to the highest repeat
    swapout               swap-out throughput per variant and backend
    heatmap               variants x backends, colour = change, text =
                          change and CI half-width, a panel per workload
                          on its own colour scale, unjudged grey
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import matplotlib.pyplot as plt
from matplotlib.colors import to_rgb
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from lab.report.analysis import Results, headline
from lab.report.effect import what
from lab.report.figstyle import (COLUMN, DARK, UNJUDGED, WIDE, Figure,
                                 colours_of, finish, new_figure)
from lab.results.metrics import HIGHER, LATENCY_FIELDS, LOWER
from lab.results.stats import CONFIDENCE, Row

PERCENTILES = tuple(f for f in LATENCY_FIELDS if f.startswith("p"))
# The percentiles a slide can label at projector size.
SHOWN_PERCENTILES = ("p50_us", "p99_us", "p999_us")
COLUMN_IN = (7.0, 5.2)      # a figure beside a slide's evidence
SCALE_PERCENTILE = 90       # a heat-map panel's colours saturate beyond it
FLOOR = 1e-3                # the smallest ratio a fold axis shows


def _fold(pct: float, better: str) -> float:
    """A %change as a fold in the better direction (2.0: twice as good)."""
    ratio = max(1 + pct / 100, FLOOR)
    return ratio if better != LOWER else 1 / ratio


def folded(rows: Sequence[Row]) -> bool:
    """Whether the changes span so much that a % axis would crush them:
    some change of 3x or more either way."""
    return any(c.pct is not None and
               (c.pct >= 200 or c.pct <= -100 * 2 / 3)
               for r in rows if (c := r.change) is not None)


def _change_bar(ax: plt.Axes, x: float, width: float, r: Row,
                colour: str, fold: bool) -> None:
    c = r.change
    assert c is not None and c.pct is not None
    if c.verdict == "n<3":
        colour, style = UNJUDGED, {"hatch": "..", "alpha": 1.0}
    elif c.significant:
        style = {"hatch": None, "alpha": 1.0}
    else:
        style = {"hatch": "//", "alpha": 0.55}
    if fold:
        mid = _fold(c.pct, r.better)
        ax.bar(x, mid - 1, width, bottom=1, color=colour, **style)
        if c.low is not None and c.high is not None:
            ends = sorted((_fold(c.low, r.better), _fold(c.high, r.better)))
            ax.errorbar(x, mid, yerr=[[mid - ends[0]], [ends[1] - mid]],
                        fmt="none", ecolor="black", capsize=3, lw=1)
        return
    ax.bar(x, c.pct, width, color=colour, **style)
    if c.low is not None and c.high is not None:
        ax.errorbar(x, c.pct, yerr=[[c.pct - c.low], [c.high - c.pct]],
                    fmt="none", ecolor="black", capsize=3, lw=1)


def change_figure(res: Results, workload: str, dest: Path) -> Figure | None:
    """The change of the workload's headline metric (throughput, else p99
    fault latency) per variant, grouped by backend: a % axis, or a fold
    axis ("x better") when the changes span 3x or more."""
    metric = res.throughput(workload) or res.latency(workload)
    if not metric or not res.others():
        return None
    others = res.others()
    rows = {(be, v): r for be in res.source.backends for v in others
            if (r := res.row(workload, be, metric, v)) and r.change
            and r.change.pct is not None}
    if not rows:
        return None
    backends = [be for be in res.source.backends
                if any(k[0] == be for k in rows)]
    colours = colours_of(res.source.variants)
    fig, ax, _ = new_figure(COLUMN_IN, COLUMN)
    fold = folded(list(rows.values()))
    width = 0.8 / len(others)
    for b, be in enumerate(backends):
        noise = next((r.noise.detectable_pct for (e, _), r in rows.items()
                      if e == be), None)
        if noise is not None:
            lo, hi = (1 / (1 + noise / 100), 1 + noise / 100) if fold \
                else (-noise, noise)
            ax.fill_between([b - 0.45, b + 0.45], lo, hi, color="#bbbbbb",
                            alpha=0.45, lw=0)
        for i, v in enumerate(others):
            r = rows.get((be, v))
            if r is not None:
                _change_bar(ax, b - 0.4 + width * (i + 0.5), width * 0.9,
                            r, colours[v], fold)
    some = next(iter(rows.values()))
    if fold:
        ax.set_yscale("log")
        ax.axhline(1, color="black", lw=0.8)
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}x"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel(f"x better than {res.source.baseline}\n(log scale)")
    else:
        ax.axhline(0, color="black", lw=0.8)
        ax.set_ylabel(f"% change vs {res.source.baseline}\n"
                      f"({'higher' if some.better == HIGHER else 'lower'}"
                      " is better)")
    ax.set_xticks(range(len(backends)), backends)
    ax.grid(axis="y", alpha=0.3)
    _legend_below(ax, [v for v in others if any(k[1] == v for k in rows)],
                  colours)
    title = f"{workload}, {what(some)}: " + headline(list(rows.values()),
                                                    res.source.baseline)
    note = (f"whiskers {CONFIDENCE:.0%} CI; solid significant, hatched not, "
            "grey n<3; band A/A noise")
    return finish(fig, title, f"change-{workload}", dest,
                  res.provenance(), note)


def _legend_below(ax: plt.Axes, names: Sequence[str],
                  colours: dict[str, str]) -> None:
    handles = [Patch(color=colours[v], label=v) for v in names]
    ax.legend(handles=handles, loc="upper center", ncol=min(3, len(names)),
              bbox_to_anchor=(0.5, -0.12), frameon=False,
              handlelength=1.0, columnspacing=1.0)


def latency_figure(res: Results, workload: str, dest: Path) -> Figure | None:
    """Percentile curves of the fault latency, one panel per backend:
    each variant's mean over its repeats, shaded from the lowest to the
    highest repeat."""
    g = res.group(workload)
    fields = [p for p in SHOWN_PERCENTILES if p in PERCENTILES]
    names = [f"swapbench.{g}.latency.{p}" for p in fields]
    if not g or not any(res.row(workload, be, names[0], v)
                        for be in res.source.backends
                        for v in res.source.variants):
        return None
    variants = res.source.variants
    backends = [be for be in res.source.backends
                if any(res.samples.values.get((workload, be, names[0], v))
                       for v in variants)]
    colours = colours_of(variants)
    fig, axes, _ = new_figure(COLUMN_IN, COLUMN, ncols=len(backends),
                              squeeze=False, sharey=True)
    labels = [p[1:-3].replace("999", "99.9") for p in fields]
    drawn: list[str] = []
    for ax, be in zip(axes[0], backends):
        for v in variants:
            keys = [(workload, be, n, v) for n in names]
            if not all(res.samples.values.get(k) for k in keys):
                continue
            values = [res.samples.values[k] for k in keys]
            base = v == res.source.baseline
            colour = "black" if base else colours[v]
            xs = range(len(names))
            ax.fill_between(xs, [min(x) for x in values],
                            [max(x) for x in values], color=colour,
                            alpha=0.15, lw=0)
            # The baseline dashed black on top: variants that match it
            # stay visible under it.
            ax.plot(xs, [sum(x) / len(x) for x in values], marker="o",
                    ms=4, zorder=3 if base else 2, color=colour,
                    ls="--" if base else "-", lw=1.5 if base else 2.0)
            if v not in drawn:
                drawn.append(v)
        ax.set_yscale("log")
        ax.set_xticks(range(len(names)), labels)
        ax.set_title(be)
        ax.grid(which="both", alpha=0.3)
    axes[0][0].set_ylabel("fault latency, µs (log)")
    colours = {**colours, res.source.baseline: "black"}
    fig.legend(handles=[Patch(color=colours[v], label=v) for v in drawn],
               loc="lower center", ncol=min(3, len(drawn)), frameon=False,
               handlelength=1.0)
    p99 = res.latency(workload)
    p99_rows = [r for be in backends for v in res.others()
                if p99 and (r := res.row(workload, be, p99, v))]
    title = f"{workload}: " + res.headline(p99_rows)
    note = ("x: percentile; lines: mean of repeats, shading lowest to "
            "highest repeat; baseline dashed black")
    return finish(fig, title, f"latency-{workload}", dest,
                  res.provenance(), note)


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
        return f"{io.summary.mean:.0f} KiB"
    if res.row(workload, backend, "diskstats.writes", variant):
        return "0 writes"
    return "n/a"


def _bar_label(ax: plt.Axes, x: float, height: float, top: float,
               text: str, colour: str, pt: float) -> None:
    """`text` up the bar: inside it when it fits (white on a dark bar,
    dark on a light one), else dark above it and its repeat dots
    (`top`)."""
    lo, hi = ax.get_ylim()
    # The axes' height once finish has laid the figure out under the
    # title, the legend and the note: about 0.45 of the figure's.
    axis_pt = 0.45 * ax.get_figure().get_figheight() * 72
    bar_pt = height / (hi - lo) * axis_pt
    # Rotated text: its length in points, roughly 0.6 em a character.
    if bar_pt >= pt * (0.6 * len(text) + 1):
        r, g, b = to_rgb(colour)
        light = 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.6
        ax.annotate(text, (x, 0), ha="center", va="bottom", rotation=90,
                    fontsize=pt, color=DARK if light else "white",
                    xytext=(0, 4), textcoords="offset points")
    else:
        ax.annotate(text, (x, top), ha="center", va="bottom", rotation=90,
                    fontsize=pt, color=DARK, xytext=(0, 3),
                    textcoords="offset points")


def swapout_figure(res: Results, dest: Path) -> Figure | None:
    """Swap-out throughput per variant and backend, each repeat a dot,
    labelled with the average write size the swap device saw."""
    wl = swapout_workload(res)
    metric = res.throughput(wl) if wl else None
    if not wl or not metric:
        return None
    variants = res.source.variants
    backends = [be for be in res.source.backends
                if any(res.row(wl, be, metric, v) for v in variants)]
    colours = colours_of(variants)
    fig, ax, pt = new_figure(COLUMN_IN, COLUMN)
    width = 0.8 / len(variants)
    shown, labels, drawn = [], [], []
    for b, be in enumerate(backends):
        for i, v in enumerate(variants):
            r = res.row(wl, be, metric, v)
            if r is None:
                continue
            shown.append(r)
            if v not in drawn:
                drawn.append(v)
            x = b - 0.4 + width * (i + 0.5)
            mb = r.summary.mean / 1e6
            ax.bar(x, mb, width * 0.9, color=colours[v])
            pts = [p / 1e6 for p in res.samples.values[(wl, be, metric, v)]]
            ax.plot([x] * len(pts), pts, "k.", ms=4)
            labels.append((x, mb, max([mb, *pts]),
                           write_size(res, wl, be, v), colours[v]))
    ax.set_xticks(range(len(backends)), backends)
    ax.set_ylabel("swap-out throughput, MB/s")
    ax.margins(y=0.1)
    # After the limits are final: whether a label fits its bar depends
    # on them. Labels fit side by side only on bars as wide as a line.
    if width * 0.9 * COLUMN_IN[0] * 72 * 0.8 >= pt * 1.2:
        for label in labels:
            _bar_label(ax, *label, pt)
    ax.grid(axis="y", alpha=0.3)
    _legend_below(ax, drawn, colours)
    title = f"{wl}: " + res.headline([r for r in shown if r.change])
    note = ("bars: mean; dots: repeats; labels: KiB per write the swap "
            "device counted")
    return finish(fig, title, "swapout", dest, res.provenance(), note)


def colour_scale(changes: Sequence[float]) -> float:
    """A heat-map panel's colour scale, ±this %: the SCALE_PERCENTILE-th
    percentile of the |changes| (nearest rank), so one outlier does not
    wash the other cells out (its cell says its value)."""
    mags = sorted(abs(x) for x in changes)
    if not mags:
        return 1.0
    return max(mags[math.ceil(len(mags) * SCALE_PERCENTILE / 100) - 1], 1.0)


def cell_text(r: Row) -> str:
    """A heat-map cell: the change (as a fold from 3x on) with the
    half-width of its interval, * when significant."""
    c = r.change
    assert c is not None and c.pct is not None
    mark = "*" if c.significant else ""
    fold = c.pct >= 200 or c.pct <= -100 * 2 / 3
    if c.low is None or c.high is None:
        return (f"{_fold(c.pct, HIGHER):.1f}x" if fold
                else f"{c.pct:+.0f}%") + mark
    if fold:
        lo, hi = _fold(c.low, HIGHER), _fold(c.high, HIGHER)
        return f"{_fold(c.pct, HIGHER):.1f}x±{(hi - lo) / 2:.1f}{mark}"
    return f"{c.pct:+.0f}±{(c.high - c.low) / 2:.0f}%{mark}"


def heatmap_figure(res: Results, dest: Path) -> Figure | None:
    """Every non-baseline variant against every (workload, backend) on the
    workload's throughput; colour = improvement, text = change and the
    half-width of its interval, * significant, grey not judged (n<3).
    One panel per workload, each on its own colour scale: a swap-out
    workload's +400 % would leave a swap-in workload's ±20 % white."""
    metric_of = {w: m for w in res.source.workloads
                 if (m := res.throughput(w))}
    others = res.others()
    # Each panel shows the backends its workload ran on.
    cols = {w: [be for be in res.source.backends
                if any(res.row(w, be, m, v) for v in others)]
            for w, m in metric_of.items()}
    workloads = [w for w in metric_of if cols[w]]
    if not workloads or not others:
        return None
    # At full size: a cell 1.55 in wide and 0.5 in high, the variant
    # names 2.2 in, 3.3 in for the title, the backends and the note (at
    # least 9 in wide, or they wrap onto more lines); larger figures
    # shrink, and their text grows with them.
    ncols = sum(len(cols[w]) for w in workloads)
    size = (max(9.0, 2.2 + ncols * 1.55 + (len(workloads) - 1) * 0.3),
            3.3 + 0.5 * len(others))
    fig, axes, pt = new_figure(size, WIDE, ncols=len(workloads),
                               squeeze=False, gridspec_kw={
                                   "width_ratios": [len(cols[w])
                                                    for w in workloads]})
    shown: list[Row] = []
    texts: list[tuple[plt.Axes, int, int, str, float]] = []
    for ax, w in zip(axes[0], workloads):
        backends = cols[w]
        grid = [[math.nan] * len(backends) for _ in others]
        for i, v in enumerate(others):
            for j, be in enumerate(backends):
                r = res.row(w, be, metric_of[w], v)
                if r is None or r.change is None or r.change.pct is None:
                    ax.text(j, i, "–", ha="center", va="center")
                    continue
                shown.append(r)
                if r.change.verdict == "n<3":
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1,
                                           color=UNJUDGED, zorder=2))
                else:
                    # Colour by improvement: "good" is one colour on
                    # every row.
                    grid[i][j] = r.change.pct if r.better != LOWER \
                        else -r.change.pct
                texts.append((ax, j, i, cell_text(r), grid[i][j]))
        span = colour_scale([x for row in grid for x in row
                             if not math.isnan(x)])
        ax.imshow(grid, cmap="RdBu", aspect="auto", vmin=-span, vmax=span)
        # White on the dark ends of the colour map.
        for where, j, i, text, value in texts:
            where.text(j, i, text, ha="center", va="center", zorder=3,
                       color="white" if abs(value) > 0.6 * span else DARK)
        texts.clear()
        ax.set_title(w)
        ax.set_xticks(range(len(backends)), backends)
        ax.set_yticks(range(len(others)),
                      others if ax is axes[0][0] else [])
    note = (f"% change vs {res.source.baseline} (from 3x a fold) ± half "
            f"its {CONFIDENCE:.0%} CI; * significant; blue better; grey "
            "n<3")
    title = "Throughput: " + headline(shown, res.source.baseline)
    return finish(fig, title, "heatmap", dest, res.provenance(), note)


def write_figures(res: Results, dest: Path) -> list[Figure]:
    """Every figure the run has data for, under `dest`."""
    out = [heatmap_figure(res, dest)]
    for wl in res.source.workloads:
        out.append(change_figure(res, wl, dest))
        if res.kind(wl) != "fill":
            out.append(latency_figure(res, wl, dest))
    out.append(swapout_figure(res, dest))
    return [f for f in out if f is not None]
