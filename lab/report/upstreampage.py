"""upstream.md and upstream.html: the ranking of the series upstream
lacks, the send order and the verdict, each candidate's evidence linked
to its table row, its figure and its patch files, its risks, and the
backtest of the merged series against what upstream did.
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lab.report.analysis import Results
from lab.report.effect import Effect
from lab.report.backtest import findings
from lab.report.tablefiles import anchor
from lab.report.tables import pivots
from lab.report.patchseries import patch_files
from lab.report.upstream import (MERGED, Candidate, Ranking, Recommendation,
                                 evidence, verdict)
from lab.spec.model import Matrix


@dataclass(frozen=True)
class Links:
    """Where a claim's sources are, relative to the report directory."""
    out: Path
    matrix: Matrix
    tables: frozenset[str]              # anchors report.html has
    figures: frozenset[str]             # figure stems written

    @classmethod
    def of(cls, res: Results, matrix: Matrix, out: Path,
           figures: list[str]) -> "Links":
        tables = {anchor(wl, metric, row[0].split(" ")[0])
                  for wl, metric, _, table in pivots(res.rows, res.source)
                  for row in table[1:]}
        return cls(out, matrix, frozenset(tables), frozenset(figures))

    def of_effect(self, e: Effect) -> list[tuple[str, str]]:
        out = []
        row = anchor(e.workload, e.metric, e.with_)
        if row in self.tables:
            out.append(("table row", f"tables/report.html#{row}"))
        for stem in (f"change-{e.workload}", f"latency-{e.workload}"):
            if stem in self.figures:
                out.append(("figure", f"figures/{stem}.svg"))
                break
        return out

    def of_series(self, c: Candidate) -> list[tuple[str, str]]:
        out = []
        for s in c.series:
            d = self.matrix.series_dir(c.tree, s)
            out += [(name, os.path.relpath(d / name, self.out))
                    for name in patch_files(self.matrix, c.tree, s)]
        return out


def _md_links(links: list[tuple[str, str]]) -> str:
    return " · ".join(f"[{t}]({h})" for t, h in links)


def _html_links(links: list[tuple[str, str]]) -> str:
    e = html.escape
    return " · ".join(f"<a href='{e(h)}'>{e(t)}</a>" for t, h in links)


def _as_is(text: str) -> str:
    return text


def _escaped(text: str) -> str:
    return html.escape(text)


def _candidate_lines(c: Candidate, links: Links,
                     fmt: str) -> tuple[list[str], list[str], str]:
    """(evidence, risks, patches) of a candidate, links rendered."""
    render: Callable[[list[tuple[str, str]]], str] = \
        _md_links if fmt == "md" else _html_links
    esc: Callable[[str], str] = _as_is if fmt == "md" else _escaped
    lines = evidence(c)
    by_text = {e.text(): e for e in c.effects}
    out = []
    for line in lines:
        e = by_text.get(line)
        tail = render(links.of_effect(e)) if e else ""
        out.append(esc(line) + (f" ({tail})" if tail else ""))
    risks = [esc(t) + (f" ({render(links.of_effect(e))})"
                       if (e := next((x for x in c.risks.tails
                                      if t.endswith(x.text())), None))
                       and links.of_effect(e) else "")
             for t in c.risks.lines()]
    return out, risks, render(links.of_series(c))


def _ranking_md(r: Ranking, links: Links, level: str) -> list[str]:
    out = []
    for i, c in enumerate(r.ranked):
        ev, risks, patches = _candidate_lines(c, links, "md")
        out += [f"{level} {i + 1}. {c.name}", "", f"Patches: {patches}", ""]
        out += [f"- {t}" for t in ev]
        out += ["", "Risks:", ""] + [f"- {t}" for t in risks]
        if i < len(r.separation):
            out += ["", f"**{r.separation[i]}.**"]
        out.append("")
    if r.unranked:
        out += [f"{level} Not ranked", ""]
        out += [f"- {s}: {why}" for s, why in r.unranked.items()]
        out.append("")
    return out


def markdown(rec: Recommendation, links: Links, source_line: str) -> str:
    out = ["# Upstream first", "", source_line + ".", "",
           f"**{verdict(rec)}.**", "",
           f"Candidates: the series added on top of the baseline "
           f"'{rec.baseline}' that upstream has not merged, each judged on "
           f"the pairs of variants that differ only by it, on "
           f"{rec.metrics}.", ""]
    if rec.order:
        out += ["Send order (the ranking, each series after what it is "
                "built on): " + ", ".join(
                    f"{i + 1}. {c.name}" for i, c in enumerate(rec.order)),
                ""]
    out += _ranking_md(rec, links, "##")
    if rec.merged:
        out += ["## Does the lab reproduce 2017?", ""]
        out += [t + "\n" for t in findings(rec.merged, links.matrix,
                                           verdict(rec.merged, MERGED))]
        out += _ranking_md(rec.merged, links, "###")
    return "\n".join(out).rstrip("\n") + "\n"


def _ranking_html(r: Ranking, links: Links, level: str) -> list[str]:
    e = html.escape
    out = []
    for i, c in enumerate(r.ranked):
        ev, risks, patches = _candidate_lines(c, links, "html")
        out.append(f"<{level}>{i + 1}. {e(c.name)}</{level}>"
                   f"<p>Patches: {patches}</p><ul>")
        out += [f"<li>{t}</li>" for t in ev]
        out.append("</ul><p>Risks:</p><ul>")
        out += [f"<li>{t}</li>" for t in risks]
        out.append("</ul>")
        if i < len(r.separation):
            out.append(f"<p><strong>{e(r.separation[i])}.</strong></p>")
    if r.unranked:
        out.append(f"<{level}>Not ranked</{level}><ul>")
        out += [f"<li>{e(s)}: {e(w)}</li>" for s, w in r.unranked.items()]
        out.append("</ul>")
    return out


def html_page(rec: Recommendation, links: Links, source_line: str) -> str:
    e = html.escape
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
           "<title>swaplab: upstream first</title>",
           "<style>body{font-family:sans-serif;max-width:60em;margin:1em "
           "auto}li{margin:.2em 0}</style></head><body>",
           "<h1>Upstream first</h1>", f"<p>{e(source_line)}.</p>",
           f"<p><strong>{e(verdict(rec))}.</strong></p>",
           f"<p>Candidates: the series added on top of the baseline "
           f"'{e(rec.baseline)}' that upstream has not merged, each judged "
           f"on the pairs of variants that differ only by it, on "
           f"{e(rec.metrics)}.</p>"]
    if rec.order:
        out.append("<p>Send order (the ranking, each series after what it "
                   "is built on):</p><ol>" + "".join(
                       f"<li>{e(c.name)}</li>" for c in rec.order) + "</ol>")
    out += _ranking_html(rec, links, "h2")
    if rec.merged:
        out.append("<h2>Does the lab reproduce 2017?</h2>")
        out += [f"<p>{e(t)}</p>" for t in findings(rec.merged, links.matrix,
                                           verdict(rec.merged, MERGED))]
        out += _ranking_html(rec.merged, links, "h3")
    out.append("</body></html>\n")
    return "\n".join(out)
