"""A report's table files: report.md, report.csv, latency.txt (from
lab.report.tables) and report.html, the one a reader clicks through.

report.html's pivots carry what the text tables cannot: an anchor per
table and per variant row (what upstream.html links a claim to), each
change coloured by its verdict, every variant's own mean beside its
change, and the raw repeats behind each cell.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Mapping, Sequence

from lab.cache import atomic_write
from lab.report.tables import (LEGEND, about, pivot_cell, failed_lines, human,
                               index_rows, latency_text, pivots, report_csv,
                               report_markdown)
from lab.results.metricinfo import Key
from lab.results.stats import Row
from lab.results.store import Source

CSS = ("table{border-collapse:collapse}td,th{border:1px solid #999;"
       "padding:2px 6px;text-align:right;vertical-align:top}"
       "td:first-child{text-align:left}td.better{background:#d5ecd5}"
       "td.worse{background:#f6d3d3}td.few{color:#777}"
       "small{color:#555}details{margin:2px 0 10px}")


def anchor(workload: str, metric: str, variant: str = "") -> str:
    """The id of a pivot table in report.html, or of a variant's row in
    it: what other pages link a figure they quote to."""
    return "--".join(filter(None, (workload, metric, variant)))


def _td(row: Row | None, base: Row | None) -> str:
    """A pivot cell: the change (or the baseline's mean), and under it
    the variant's own mean and n; coloured by the verdict."""
    e = html.escape
    text = e(pivot_cell(row, base))
    if row is None:
        return f"<td>{text}</td>"
    c = row.change
    cls = ""
    if c is not None:
        cls = {"better": " class='better'", "worse": " class='worse'",
               "n<3": " class='few'"}.get(c.verdict, "")
        text += (f"<br><small>{e(human(row.summary.mean, row.unit))}, "
                 f"n={row.summary.n}</small>")
    return f"<td{cls}>{text}</td>"


def _repeats(workload: str, metric: str, variants: Sequence[str],
             backends: Sequence[str], unit: str,
             values: Mapping[Key, Sequence[float]]) -> str:
    """The raw repeats of one pivot, folded away."""
    e = html.escape
    rows = []
    for v in variants:
        for be in backends:
            got = values.get((workload, be, metric, v))
            if got:
                rows.append(f"<tr><td>{e(v)}</td><td>{e(be)}</td><td>"
                            + e(", ".join(human(x, unit) for x in got))
                            + "</td></tr>")
    if not rows:
        return ""
    return ("<details><summary>raw repeats</summary><table><tr><th>"
            "variant</th><th>backend</th><th>repeats, in order</th></tr>"
            + "".join(rows) + "</table></details>")


def report_html(rows: Sequence[Row], source: Source,
                failed: Mapping[str, str] | None = None,
                all_metrics: bool = False,
                values: Mapping[Key, Sequence[float]] | None = None) -> str:
    e = html.escape
    index = index_rows(rows)
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
           f"<title>swaplab report {e(source.run_id)}</title>",
           f"<style>{CSS}</style></head><body>",
           "<h1>swaplab report</h1>", f"<p>{e(source.line())}.</p>"]
    out += [f"<p>{e(t)}</p>" for t in about(source) if t]
    if source.compared:
        out.append("<p>Green: better, red: worse (significant); grey: "
                   "not judged. Under each change, the variant's own mean "
                   "and n.</p>")
    out += [f"<p>{e(t)}</p>" for t in failed_lines(failed)]
    current = None
    for wl, metric, sub, table in pivots(rows, source, all_metrics):
        if wl != current:
            out.append(f"<h2>{e(wl)}</h2>")
            current = wl
        out.append(f"<h3 id='{e(anchor(wl, metric))}'>{e(metric)} "
                   f"({e(sub)})</h3><table>")
        out.append("<tr>" + "".join(f"<th>{e(c)}</th>" for c in table[0])
                   + "</tr>")
        names = [r[0].split(" ")[0] for r in table[1:-1]]
        for label, v in zip(table[1:-1], names):
            out.append(f"<tr id='{e(anchor(wl, metric, v))}'><td>"
                       f"{e(label[0])}</td>" + "".join(
                           _td(index.get((wl, be, metric, v)),
                               index.get((wl, be, metric, source.baseline)))
                           for be in source.backends) + "</tr>")
        out.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in table[-1])
                   + "</tr></table>")
        some = next(r for r in rows if r.workload == wl and r.metric == metric)
        out.append(_repeats(wl, metric, names, source.backends, some.unit,
                            values or {}))
    out += [f"<p><small>{e(LEGEND)}.</small></p>", "<h2>Latency</h2>",
            f"<pre>{e(latency_text(rows, source))}</pre>",
            "</body></html>", ""]
    return "\n".join(out)


def write_report(rows: Sequence[Row], source: Source, dest: Path,
                 failed: Mapping[str, str] | None = None,
                 all_metrics: bool = False,
                 values: Mapping[Key, Sequence[float]] | None = None
                 ) -> list[Path]:
    """report.md, report.csv, report.html and latency.txt under `dest`."""
    files = {"report.md": report_markdown(rows, source, failed, all_metrics),
             "report.csv": report_csv(rows, source),
             "report.html": report_html(rows, source, failed, all_metrics,
                                        values),
             "latency.txt": latency_text(rows, source) + "\n"}
    for name, text in files.items():
        atomic_write(dest / name, text)
    return [dest / name for name in files]
