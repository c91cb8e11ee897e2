"""`lab slides`: a summit-style deck of a run, HTML and PDF.

The HTML is self-contained (CSS inline, figures as base64 SVG data URIs,
system fonts, no scripts, nothing fetched) so it opens anywhere, offline;
headless Chromium prints it to PDF, one 1280x720 page per slide. One idea
per slide: setup, one slide per question the seed article asks (its
evidence continued on the next when it does not fit), the matrix at a
glance, the recommendation, the full tables as backup.

Every number on a slide is rendered from a statistic and tagged with
data-* attributes naming it, so tests can check each against lab.results.stats.
"""
from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Callable, Sequence

from lab.cache import atomic_write
from lab.report.analysis import Results
from lab.report.backup import backup_slides
from lab.report.effect import Effect, gain, what
from lab.report.figstyle import Figure
from lab.report.figures import swapout_workload
from lab.report.columns import Item, effect_items, num, pages, render, room
from lab.report.pdf import print_pdf
from lab.report.slide import Slide
from lab.report.tables import LEGEND, pivots
from lab.report.verdicts import testbed
from lab.results.stats import CONFIDENCE
from lab.report.backtest import findings
from lab.report.upstream import MERGED, Candidate, Recommendation, verdict
from lab.spec.model import Matrix

e = html.escape

CSS = """
@page { size: 1280px 720px; margin: 0 }
html, body { margin: 0; background: #d8d8d8;
  font-family: system-ui, "DejaVu Sans", "Liberation Sans", sans-serif;
  color: #1a1a1a; -webkit-print-color-adjust: exact;
  print-color-adjust: exact }
.slide { width: 1280px; height: 720px; box-sizing: border-box;
  padding: 32px 48px 18px; margin: 24px auto; background: #fff;
  display: flex; flex-direction: column; overflow: hidden;
  break-after: page; page-break-after: always; break-inside: avoid }
.slide:last-child { break-after: auto; page-break-after: auto }
@media print { html, body { background: #fff }
  .slide { margin: 0 } }
h1 { font-size: 44px; margin: 120px 0 16px }
h2 { font-size: 28px; margin: 0 0 6px; color: #0b3d6b }
.claim { font-size: 19px; line-height: 24px; margin: 0 0 12px;
  color: #333 }
.body { flex: 1; min-height: 0; overflow: hidden; display: flex;
  gap: 28px; font-size: 17px; line-height: 1.35 }
.body > .col { flex: 1; min-width: 0; min-height: 0 }
.body > .fig { flex: 1.5; display: flex; align-items: flex-start;
  justify-content: center; min-height: 0 }
.fig img { max-width: 100%; max-height: 100%; object-fit: contain }
.foot { font-size: 10px; color: #777; margin-top: 6px;
  border-top: 1px solid #ddd; padding-top: 4px }
ul { margin: 4px 0; padding-left: 1.1em } li { margin: 3px 0 }
table { border-collapse: collapse; font-size: 13px }
th, td { border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: right }
th:first-child, td:first-child { text-align: left }
.small { font-size: 15px }
.backup { font-size: 12px } .backup .pivot { margin-bottom: 8px }
.backup table { font-size: 12px; width: 100% } .missing { color: #a33; font-size: 20px }
.sig { font-weight: bold }
table.effects { font-size: 14px; line-height: 18px; margin-bottom: 8px }
table.effects th, table.effects td { padding: 2px 6px }
table.effects th, table.effects td:not(:last-child) { white-space: nowrap }
h3 { font-size: 18px; line-height: 24px; margin: 4px 0 6px }
p.pair { font-size: 15px; line-height: 20px; margin: 2px 0 4px; color: #444 }
p.note { font-size: 15px; line-height: 20px; margin: 4px 0 }
"""


def _data_uri(fig: Figure) -> str:
    return "data:image/svg+xml;base64," + \
        base64.b64encode(fig.svg.read_bytes()).decode()


def _fig(fig: Figure | None) -> str:
    if fig is None:
        return ""
    return (f"<div class='fig'><img alt='{e(fig.title)}' "
            f"src='{_data_uri(fig)}'></div>")


def question(key: str, title: str, claim: str, fig: Figure | None,
             items: Sequence[Item]) -> list[Slide]:
    """A question's slide, the figure beside the evidence; evidence that
    does not fit goes on over continuation slides (key-2, key-3 ...)."""
    return [Slide(key if n == 1 else f"{key}-{n}",
                  title if n == 1 else f"{title} (continued)",
                  (_fig(fig) if n == 1 else "") +
                  f"<div class='col'>{render(page)}</div>", claim)
            for n, page in enumerate(pages(items, room(claim)), 1)]


def _say(effects: Sequence[Effect], subject: str) -> str:
    """The slide's claim, from the significant effects only."""
    sig = [x for x in effects if x.change.significant]
    if not effects:
        return ""
    if all(x.change.verdict == "n<3" for x in effects):
        return f"{subject}: too few repeats to judge"
    if not sig:
        return (f"{subject}: no significant difference at "
                f"{CONFIDENCE:.0%} confidence")
    parts = []
    for x in sig:
        g = gain(x)
        direction = "better" if g and g[0] > 0 else "worse"
        parts.append(f"{what(x)} on {x.backend} {x.change.pct:+.0f} % "
                     f"({direction})")
    return f"{subject}: " + "; ".join(parts)


# ---------------------------------------------------------------- slides

def setup_slide(res: Results) -> Slide:
    s = res.source
    releases = res.releases()
    kernels = "".join(
        f"<tr><td>{e(v)}</td><td>{e(', '.join(releases.get(v, [])) or '–')}"
        f"</td></tr>" for v in s.variants)
    devs = res.devices()
    rows = []
    for be in s.backends:
        d = devs.get(be) or {}
        q = d.get("queue") or {}
        rows.append("<tr>" + "".join(f"<td>{e(str(x))}</td>" for x in (
            be, d.get("name", "not reported"), d.get("model", "–"),
            d.get("rotational", q.get("rotational", "–")),
            q.get("dax", "–"), q.get("max_hw_sectors_kb", "–"),
            " ".join(d.get("swap_flags") or []) or "–")) + "</tr>")
    lo, hi = res.measured()
    failed = len(res.samples.failed)
    body = (
        "<div class='col'><h3>Kernels (as the guests reported)</h3>"
        f"<table><tr><th>variant</th><th>release</th></tr>{kernels}</table>"
        f"<p>Baseline: <b>{e(s.baseline)}</b>"
        + ("" if s.compared else " (not in this run: no comparisons)")
        + ". Workloads: "
        f"{e(', '.join(s.workloads))}.</p>"
        f"<p>Repeats: {s.repeats} planned, n={lo}"
        + (f"–{hi}" if hi != lo else "") + " measured"
        + (f"; {failed} failed cells left out" if failed else "") + ".</p>"
        "</div><div class='col'><h3>Swap devices (as the guests saw them)"
        "</h3><table><tr><th>backend</th><th>device</th><th>model</th>"
        "<th>rotational</th><th>dax</th><th>max IO KiB</th><th>swap flags"
        f"</th></tr>{''.join(rows)}</table>"
        f"<p class='small'>{e(testbed(res.records.values()))} "
        f"{e(res.manifest.get('host', {}).get('cpu_model', ''))}"
        f", run started {e(str(res.manifest.get('started')))}</p></div>")
    return Slide("setup", f"swaplab: {s.run_id}", body,
                 f"{len(s.variants)} kernels × {len(s.backends)} swap devices"
                 f" × {len(s.workloads)} workloads, {s.repeats} repeats")


def _readahead_question(res: Results, rec: Recommendation,
                        figs: dict[str, Figure], key: str, title: str,
                        kind: str) -> list[Slide]:
    wl = next((w for w in res.source.workloads if res.kind(w) == kind),
              None)
    cand = rec.find("readahead")
    if wl is None or cand is None:
        return []           # not a question this run covers
    effects = [x for x in cand.effects if x.workload == wl]
    return question(key, title, _say(effects, f"readahead on {wl}"),
                    figs.get(f"change-{wl}"),
                    [Item("h3", f"readahead on {wl}"),
                     *effect_items(effects)])


def rotational_slide(res: Results, rec: Recommendation,
                     figs: dict[str, Figure]) -> list[Slide]:
    key, title = "rotational", "How does VMA readahead fare on a " \
        "rotational disk?"
    devs = res.devices()
    spinning = [be for be in res.source.backends
                if str((devs.get(be) or {}).get("rotational")) == "1"]
    cand = rec.find("readahead")
    if not spinning or cand is None:
        return []           # no rotational device, or no readahead pair
    # Readahead acts on swap-in: the swap-out (fill) workload says nothing.
    effects = [x for x in cand.effects if x.backend in spinning
               and res.kind(x.workload) != "fill"]
    others = [x for x in cand.effects if x.backend not in spinning
              and x.workload in {y.workload for y in effects}]
    device = [t for t in cand.interactions if "by device" in t]
    wl = next((x.workload for x in effects
               if f"latency-{x.workload}" in figs), None)
    items = [Item("h3", f"on {', '.join(spinning)}"),
             *effect_items(effects)]
    if others:
        items += [Item("h3", "on the other devices"), *effect_items(others)]
    items.append(Item("note", "; ".join(device) or (
        "Where both were judged, no evidence that readahead's effect "
        "depends on the device.")))
    return question(key, title, _say(effects, "readahead on a rotational "
                                     "disk"),
                    figs.get(f"latency-{wl}") if wl else None, items)


def thp_slide(res: Results, rec: Recommendation,
              figs: dict[str, Figure]) -> list[Slide]:
    key, title = "thp", "What do THP swap-out stages 1 and 2 give on " \
        "each device?"
    wl = next((w for w in res.source.workloads if res.kind(w) == "fill"),
              None)
    both = [*rec.ranked, *(rec.merged.ranked if rec.merged else [])]
    cands = [c for c in both if {"thp-stage1", "thp-stage2"} & set(c.series)]
    if wl is None or not cands:
        return []           # no swap-out workload, or no THP stage pair
    metric = res.throughput(wl)
    items, claims = [], []
    for c in cands:
        effects = [x for x in c.effects if x.workload == wl and
                   x.metric == metric]
        items.append(Item("h3", c.name))
        if len(c.series) > 1:
            items.append(Item("note", "Stages not separable in this run: "
                                      "measured together."))
        items += effect_items(effects)
        claims.append(_say(effects, c.name))
    return question(key, title, "; ".join(claims), figs.get("swapout"),
                    items)


def workload_slides(res: Results, figs: dict[str, Figure],
                    shown: Sequence[Slide]) -> list[Slide]:
    """A slide for each workload whose change figure no question slide
    showed: every variant against the baseline on its headline metric,
    the figure beside (a run without the seed article's questions, such
    as a THP re-read, has its main result here)."""
    out: list[Slide] = []
    fill = swapout_workload(res)
    # The figures embedded, read and encoded once, not once a slide.
    bodies = "".join(s.body for s in shown)
    for wl in res.source.workloads:
        fig = figs.get(f"change-{wl}")
        metric = res.throughput(wl) or res.latency(wl)
        about = [f for name, f in figs.items() if name in (
            f"change-{wl}", f"latency-{wl}") or (name == "swapout" and
                                                 wl == fill)]
        if fig is None or metric is None or any(
                _data_uri(f) in bodies for f in about):
            continue
        effects = []
        for be in res.source.backends:
            base = res.row(wl, be, metric, res.source.baseline)
            for v in res.others():
                r = res.row(wl, be, metric, v)
                if base and r and r.change:
                    effects.append(Effect(v, res.source.baseline, wl, be,
                                          metric, r.better,
                                          (base.summary.n, r.summary.n),
                                          r.change))
        out += question(f"workload-{wl}", f"{wl}: what each variant "
                        "changes", fig.title, fig, effect_items(effects))
    return out


def reliability_slide(figs: dict[str, Figure]) -> list[Slide]:
    """Whether every page came back right, when the run injected faults
    or cycled swapoff (the report drew its reliability figure)."""
    fig = figs.get("reliability")
    if fig is None:
        return []
    return [Slide("reliability", "Did every page come back right?",
                  _fig(fig) + "<div class='col'><p class='note'>Every page "
                  "read back was checked against its stamp; reliability.md "
                  "has the table (device faults, swapoff cycles, kernel "
                  "complaints, files around a swap file).</p></div>",
                  fig.title)]


def overview_slide(res: Results, figs: dict[str, Figure]) -> list[Slide]:
    fig = figs.get("heatmap")
    if fig is None:
        return []           # nothing compared with the baseline
    return [Slide("overview", "The whole matrix at a glance", _fig(fig),
                  fig.title)]


def _candidate_items(c: Candidate, rank: int) -> list[Item]:
    best = max(c.judged(), key=lambda t: t[1][0], default=None)
    lead = (f"best: {what(best[0])} on {best[0].workload}/"
            f"{best[0].backend} {best[0].change.pct:+.1f} %"
            if best and best[0].change.significant and best[1][0] > 0
            and best[0].change.pct is not None
            else "not judged (fewer than 3 repeats)" if c.unjudged
            else "no significant improvement")
    risks = c.risks.lines()
    more = f" (+{len(risks) - 1} more)" if len(risks) > 1 else ""
    return [Item("h3", f"{rank}. {c.name}"),
            Item("note", f"{c.wins} significant wins, {c.losses} losses "
                         f"(q <= 5 %); {lead}; {c.lines} lines"
                         + (f"; built on {', '.join(c.needs)}"
                            if c.needs else "")),
            Item("note", f"risks: {risks[0]}{more}")]


def recommendation_slide(rec: Recommendation) -> list[Slide]:
    """The ranking of the series upstream lacks: verdict, send order,
    each candidate's wins, best gain and risks, why this order."""
    items: list[Item] = []
    if rec.order:
        items.append(Item("note", "Send order: " + ", ".join(
            f"{i + 1}. {c.name}" for i, c in enumerate(rec.order))))
    for i, c in enumerate(rec.ranked):
        items += _candidate_items(c, i + 1)
    if rec.separation:
        items.append(Item("h3", "Why this order"))
        items += [Item("note", t) for t in rec.separation]
    if rec.unranked:
        items.append(Item("h3", "Not ranked"))
        items += [Item("note", f"{s}: {w}") for s, w in rec.unranked.items()]
    if not items:
        items.append(Item("note", verdict(rec)))
    return question("recommendation", "Upstream first", verdict(rec), None,
                    items)


def reproduce_slide(rec: Recommendation, matrix: Matrix) -> list[Slide]:
    """The merged series ranked alone, beside what upstream did."""
    if rec.merged is None or not (rec.merged.ranked or rec.merged.unranked):
        return []           # the run measures none of the merged series
    items = [Item("note", t) for t in findings(rec.merged, matrix,
                                                  verdict(rec.merged, MERGED))]
    return question("reproduce-2017", "Does the lab reproduce 2017?",
                    "Given the merged series alone: "
                    f"{verdict(rec.merged, MERGED)}",
                    None, items)


def slides(res: Results, rec: Recommendation, matrix: Matrix,
           figs: Sequence[Figure], lead: Sequence[Slide] = ()) -> list[Slide]:
    """The deck. A run that answers questions opens with `lead`, its
    answers (lab.report.answerdeck), in place of the seed article's
    questions read off the tables."""
    by_name = {f.name: f for f in figs}
    if lead:
        return [*lead, *reliability_slide(by_name),
                *recommendation_slide(rec), *reproduce_slide(rec, matrix),
                *overview_slide(res, by_name),
                *backup_slides(pivots(res.rows, res.source))]
    questions: list[Callable[[], list[Slide]]] = [
        lambda: _readahead_question(res, rec, by_name, "seq",
                                    "Does VMA readahead help sequential "
                                    "swap-in?", "seq"),
        lambda: _readahead_question(res, rec, by_name, "random",
                                    "Does VMA readahead hurt random "
                                    "access?", "random"),
        lambda: _readahead_question(res, rec, by_name, "combined",
                                    "Does VMA readahead survive a mixed "
                                    "load?", "combined"),
        lambda: rotational_slide(res, rec, by_name),
        lambda: thp_slide(res, rec, by_name),
    ]
    asked = [s for q in questions for s in q()]
    return [setup_slide(res), *asked,
            *workload_slides(res, by_name, asked),
            *reliability_slide(by_name),
            *overview_slide(res, by_name), *recommendation_slide(rec),
            *reproduce_slide(rec, matrix),
            *backup_slides(pivots(res.rows, res.source))]


def deck_html(res: Results, deck: Sequence[Slide]) -> str:
    foot = e(res.provenance())
    out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
           f"<title>swaplab {e(res.source.run_id)}</title>",
           f"<style>{CSS}</style></head><body>"]
    for i, s in enumerate(deck):
        claim = f"<p class='claim'>{e(s.claim)}</p>" if s.claim else ""
        out.append(f"<section class='slide' id='{e(s.key)}' "
                   f"data-slide='{e(s.key)}'><h2>{e(s.title)}</h2>{claim}"
                   f"<div class='body'>{s.body}</div>"
                   f"<div class='foot'>{i + 1}/{len(deck)} · {foot}</div>"
                   "</section>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write_deck(res: Results, rec: Recommendation, matrix: Matrix,
               figs: Sequence[Figure], dest: Path, pdf: bool = True,
               lead: Sequence[Slide] = ()) -> list[Path]:
    """deck.html (and deck.pdf) under `dest`."""
    page = dest / "deck.html"
    atomic_write(page, deck_html(res, slides(res, rec, matrix, figs, lead)))
    return [page, print_pdf(page, dest / "deck.pdf")] if pdf else [page]

