"""`lab slides`: a summit-style deck of a run, HTML and PDF.

The HTML is self-contained (CSS inline, figures as base64 SVG data URIs,
system fonts, no scripts, nothing fetched) so it opens anywhere, offline;
headless Chromium prints it to PDF, one 1280x720 page per slide. One idea
per slide: setup, one slide per question the seed article asks, the
matrix at a glance, the recommendation, the full tables as backup.

Every number on a slide is rendered from a statistic and tagged with
data-* attributes naming it, so tests can check each against lab.stats.
"""
from __future__ import annotations

import base64
import html
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from lab.cache import atomic_write
from lab.errors import LabError
from lab.figures import Figure, Results, gain, what
from lab.stats import CONFIDENCE
from lab.tables import LEGEND, pivots
from lab.upstream import Candidate, Effect, Recommendation, evidence

e = html.escape
BROWSERS = ("chromium", "chromium-browser")
BACKUP_ROWS = 52            # table rows that fit one backup slide's two columns
CHROMIUM_TIMEOUT_S = 120

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
.claim { font-size: 19px; margin: 0 0 12px; color: #333 }
.body { flex: 1; min-height: 0; overflow: hidden; display: flex;
  gap: 28px; font-size: 17px; line-height: 1.35 }
.body > .col { flex: 1; min-width: 0; min-height: 0 }
.body > .fig { flex: 1.7; display: flex; align-items: flex-start;
  justify-content: center; min-height: 0 }
.fig img { max-width: 100%; max-height: 100%; object-fit: contain }
.foot { font-size: 10px; color: #777; margin-top: 6px;
  border-top: 1px solid #ddd; padding-top: 4px }
ul { margin: 4px 0; padding-left: 1.1em } li { margin: 3px 0 }
table { border-collapse: collapse; font-size: 13px }
th, td { border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: right }
th:first-child, td:first-child { text-align: left }
.small { font-size: 15px }
.backup { column-count: 2; column-gap: 36px; font-size: 12px }
.backup .pivot { break-inside: avoid; margin-bottom: 8px }
.backup table { font-size: 12px; width: 100% } .missing { color: #a33; font-size: 20px }
.sig { font-weight: bold }
table.effects { font-size: 14px; margin-bottom: 8px }
h3 { font-size: 18px; margin: 4px 0 6px }
"""


@dataclass(frozen=True)
class Slide:
    key: str                # stable id: tests and anchors use it
    title: str
    body: str               # HTML
    claim: str = ""         # the slide's one idea, in a sentence


def _data_uri(fig: Figure) -> str:
    return "data:image/svg+xml;base64," + \
        base64.b64encode(fig.svg.read_bytes()).decode()


def _fig(fig: Figure | None) -> str:
    if fig is None:
        return ""
    return (f"<div class='fig'><img alt='{e(fig.title)}' "
            f"src='{_data_uri(fig)}'></div>")


def num(effect: Effect) -> str:
    """An effect's %change and CI, tagged with what it is."""
    c = effect.change
    attrs = (f"data-workload='{e(effect.workload)}' "
             f"data-backend='{e(effect.backend)}' "
             f"data-metric='{e(effect.metric)}' "
             f"data-with='{e(effect.with_)}' "
             f"data-without='{e(effect.without)}' "
             f"data-pct='{c.pct!r}' data-verdict='{c.verdict}'")
    if c.pct is None:
        return f"<span class='num' {attrs}>n/a</span>"
    ci = f" [{c.low:+.1f}, {c.high:+.1f}]" if c.low is not None else ""
    cls = "num sig" if c.significant else "num"
    return (f"<span class='{cls}' {attrs}>{c.pct:+.1f} %{ci} "
            f"{e(c.verdict)}</span>")


def _effect_list(effects: Sequence[Effect]) -> str:
    """A compact table of effects; the pair is named when there are
    several."""
    if not effects:
        return ""
    pairs = {(x.with_, x.without) for x in effects}

    def label(x: Effect) -> str:
        return what(x) + (f" ({x.with_} vs {x.without})"
                          if len(pairs) > 1 else "")
    rows = "".join(
        f"<tr><td>{e(label(x))}</td><td>{e(x.backend)}</td>"
        f"<td>{x.n[1]}/{x.n[0]}</td><td>{num(x)}</td></tr>"
        for x in effects)
    head = "" if len(pairs) > 1 else \
        "<p class='small'>{} vs {}</p>".format(*map(e, next(iter(pairs))))
    return (f"{head}<table class='effects'><tr><th>measure</th><th>device"
            "</th><th>n</th><th>% change [95 % CI]</th></tr>"
            f"{rows}</table>")


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


def _candidate(rec: Recommendation, series: str) -> Candidate | None:
    return next((c for c in rec.ranked if series in c.series), None)


def _missing(text: str) -> str:
    return f"<div class='col'><p class='missing'>{e(text)}</p></div>"


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
        f"<p class='small'>{e(res.manifest.get('host', {}).get('cpu_model', ''))}"
        f", run started {e(str(res.manifest.get('started')))}</p></div>")
    return Slide("setup", f"swaplab: {s.run_id}", body,
                 f"{len(s.variants)} kernels × {len(s.backends)} swap devices"
                 f" × {len(s.workloads)} workloads, {s.repeats} repeats")


def _readahead_question(res: Results, rec: Recommendation,
                        figs: dict[str, Figure], key: str, title: str,
                        kind: str) -> Slide:
    wl = next((w for w in res.source.workloads if res.kind(w) == kind),
              None)
    cand = _candidate(rec, "readahead")
    if wl is None:
        return Slide(key, title, _missing(
            f"This run has no {kind} workload (swapbench mode/pattern "
            f"'{kind}'), so it cannot answer this question."))
    if cand is None:
        return Slide(key, title, _missing(
            "No pair of variants in this run isolates the readahead "
            "series, so its effect cannot be measured."))
    effects = [x for x in cand.effects if x.workload == wl]
    return Slide(key, title, _fig(figs.get(f"change-{wl}")) +
                 f"<div class='col'><h3>readahead on {e(wl)}</h3>"
                 f"{_effect_list(effects)}</div>",
                 _say(effects, f"readahead on {wl}"))


def rotational_slide(res: Results, rec: Recommendation,
                     figs: dict[str, Figure]) -> Slide:
    key, title = "rotational", "How does VMA readahead fare on a " \
        "rotational disk?"
    devs = res.devices()
    spinning = [be for be in res.source.backends
                if str((devs.get(be) or {}).get("rotational")) == "1"]
    cand = _candidate(rec, "readahead")
    if not spinning:
        return Slide(key, title, _missing(
            "No swap device in this run was rotational as the guest saw "
            "it (queue/rotational = 1): the question stays open."))
    if cand is None:
        return Slide(key, title, _missing(
            "No pair of variants in this run isolates the readahead "
            "series, so its effect cannot be measured."))
    # Readahead acts on swap-in: the swap-out (fill) workload says nothing.
    effects = [x for x in cand.effects if x.backend in spinning
               and res.kind(x.workload) != "fill"]
    others = [x for x in cand.effects if x.backend not in spinning
              and x.workload in {y.workload for y in effects}]
    device = [t for t in cand.interactions if "by device" in t]
    wl = next((x.workload for x in effects if res.kind(x.workload) != "fill"
               and f"latency-{x.workload}" in figs), None)
    body = (_fig(figs.get(f"latency-{wl}") if wl else None) +
            f"<div class='col'><h3>on {e(', '.join(spinning))}</h3>"
            f"{_effect_list(effects)}<h3>on the other devices</h3>"
            f"{_effect_list(others)}<p class='small'>"
            + e("; ".join(device) or "Where both were judged, no evidence "
                "that readahead's effect depends on the device.")
            + "</p></div>")
    return Slide(key, title, body, _say(effects, "readahead on a rotational "
                                        "disk"))


def thp_slide(res: Results, rec: Recommendation,
              figs: dict[str, Figure]) -> Slide:
    key, title = "thp", "What do THP swap-out stages 1 and 2 give on " \
        "each device?"
    wl = next((w for w in res.source.workloads if res.kind(w) == "fill"),
              None)
    if wl is None:
        return Slide(key, title, _missing(
            "This run has no swap-out (swapbench fill) workload, so it "
            "cannot answer this question."))
    cands = [c for c in rec.ranked
             if {"thp-stage1", "thp-stage2"} & set(c.series)]
    if not cands:
        return Slide(key, title, _missing(
            "No pair of variants in this run isolates a THP stage."))
    metric = res.throughput(wl)
    parts, claims = [], []
    for c in cands:
        effects = [x for x in c.effects if x.workload == wl and
                   x.metric == metric]
        note = (" <span class='small'>(stages not separable in this run:"
                " measured together)</span>" if len(c.series) > 1 else "")
        parts.append(f"<h3>{e(c.name)}{note}</h3>{_effect_list(effects)}")
        claims.append(_say(effects, c.name))
    return Slide(key, title, _fig(figs.get("swapout")) +
                 f"<div class='col'>{''.join(parts)}</div>",
                 "; ".join(claims))


def overview_slide(res: Results, figs: dict[str, Figure]) -> Slide:
    fig = figs.get("heatmap")
    return Slide("overview", "The whole matrix at a glance",
                 _fig(fig) if fig else _missing("No throughput measured."),
                 fig.title if fig else "")


def recommendation_slide(rec: Recommendation) -> Slide:
    if not rec.ranked:
        return Slide("recommendation", "Upstream first", _missing(
            "No candidate could be measured: the run has no pair of "
            "variants that differ by a patch series."))
    items = []
    for i, c in enumerate(rec.ranked):
        best = max(c.judged(), key=lambda t: t[1][0], default=None)
        lead = (f"best: {e(what(best[0]))} on {e(best[0].workload)}/"
                f"{e(best[0].backend)} {num(best[0])}"
                if best and best[0].change.significant
                else "no significant improvement")
        # The evidence's last line is the cost and the complaints.
        items.append(f"<li><b>{i + 1}. {e(c.name)}</b>: {c.wins} "
                     f"significant wins, {c.losses} losses; {lead}; "
                     f"{e(evidence(c)[-1])}</li>")
    seps = "".join(f"<li>{e(t)}</li>" for t in rec.separation)
    unranked = "".join(f"<li>{e(s)}: {e(w)}</li>"
                       for s, w in rec.unranked.items())
    body = (f"<div class='col'><ol style='list-style:none;padding:0'>"
            f"{''.join(items)}</ol><h3>Why this order</h3>"
            f"<ul class='small'>{seps or '<li>one candidate</li>'}</ul>"
            + (f"<h3>Not ranked</h3><ul class='small'>{unranked}</ul>"
               if unranked else "") + "</div>")
    return Slide("recommendation", "Upstream first", body,
                 f"Send {rec.ranked[0].name} first")


def backup_slides(res: Results) -> list[Slide]:
    """The report's pivot tables (lab.tables.pivots), packed into as many
    slides as they need."""
    slides: list[Slide] = []
    chunk: list[str] = []
    used = 0

    def flush() -> None:
        if chunk:
            n = len(slides) + 1
            slides.append(Slide(f"backup-{n}", f"Backup: full table ({n})",
                                "<div class='col backup'>" +
                                "".join(chunk) + "</div>", LEGEND))
            chunk.clear()

    for wl, metric, sub, table in pivots(res.rows, res.source):
        size = len(table) + 2           # heading and header row
        if used + size > BACKUP_ROWS:
            flush()
            used = 0
        used += size
        head = "".join(f"<th>{e(c)}</th>" for c in table[0])
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r)
                       + "</tr>" for r in table[1:])
        chunk.append(f"<div class='pivot'><b>{e(wl)}: {e(metric)}</b> "
                     f"({e(sub)})<table><tr>{head}</tr>{body}</table></div>")
    flush()
    return slides


def slides(res: Results, rec: Recommendation,
           figs: Sequence[Figure]) -> list[Slide]:
    by_name = {f.name: f for f in figs}
    questions: list[Callable[[], Slide]] = [
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
    return [setup_slide(res), *(q() for q in questions),
            overview_slide(res, by_name), recommendation_slide(rec),
            *backup_slides(res)]


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


# ------------------------------------------------------------------- PDF

def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    raise LabError("no headless Chromium to print the deck: apt-get "
                   "install chromium (or skip the PDF)")


def chromium_argv(profile: Path) -> list[str]:
    """Headless, offline, and with a throw-away profile."""
    return [browser(), "--headless", "--no-sandbox", "--disable-gpu",
            "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}"]


def print_pdf(page: Path, pdf: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="swaplab-chromium-") as tmp:
        argv = chromium_argv(Path(tmp)) + [
            "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
            page.resolve().as_uri()]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=CHROMIUM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise LabError(f"chromium did not print {page} within "
                           f"{CHROMIUM_TIMEOUT_S} s") from None
    if proc.returncode != 0 or not pdf.is_file():
        raise LabError(f"chromium could not print {page} (exit "
                       f"{proc.returncode}): {proc.stderr.strip()[-500:]}")
    return pdf


def write_deck(res: Results, rec: Recommendation, figs: Sequence[Figure],
               dest: Path, pdf: bool = True) -> list[Path]:
    """deck.html (and deck.pdf) under `dest`."""
    page = dest / "deck.html"
    atomic_write(page, deck_html(res, slides(res, rec, figs)))
    return [page, print_pdf(page, dest / "deck.pdf")] if pdf else [page]

