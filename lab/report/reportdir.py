"""`lab report`: everything about a run in one directory.

    reports/<run-id>/index.html         links to all of the below
                     tables/            report.md/.csv/.html, latency.txt
                     figures/           PNG + SVG per figure
                     upstream.md/.html  the ranked recommendation
                     deck.html/.pdf     the slides

Only results go in: no logs, so a report is small enough to commit.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Mapping, Sequence

from lab.cache import atomic_write
from lab.paths import REPO
from lab.report import reliability, verdicts
from lab.results import faults
from lab.report.answerdeck import answer_slides
from lab.report.catalogue import write_catalogue, write_record
from lab.report.analysis import Results
from lab.report.figstyle import Figure
from lab.report.figures import write_figures
from lab.report.slide import Slide
from lab.report.slides import write_deck
from lab.report.tablefiles import write_report
from lab.report.upstream import recommend, verdict
from lab.report.upstreampage import Links, html_page, markdown
from lab.results.replication import RunAnswers, replicate
from lab.results.runmatrix import run_matrix
from lab.results.store import Run

# (question, backend) -> "yes" or "no (why)": replicated in other runs
Marks = Mapping[tuple[str, str], str]

REPORTS = REPO / "reports"


def default_dest(run: Run) -> Path:
    return REPORTS / run.id


def run_answers(run: Run) -> RunAnswers | None:
    """The run's answers when its sub-matrix declares questions."""
    matrix = run_matrix(run)
    sub = (run.manifest.get("matrix") or {}).get("submatrix", "")
    if sub not in matrix.matrices or not matrix.sub(sub).questions:
        return None
    return RunAnswers.of(run, matrix)


def run_ref(run: Run) -> str:
    """How a report's record names another run: its raw results' path in
    the repository when committed there (so the report regenerates from
    the checkout), else its id."""
    try:
        return run.root.resolve().relative_to(REPO.resolve()).as_posix()
    except ValueError:
        return run.id


def lead_slides(run: Run, ra: RunAnswers | None,
                marks: Marks | None = None) -> list[Slide]:
    return [] if ra is None else answer_slides(ra, run_matrix(run), marks)


def write_replication(ra: RunAnswers | None, others: Sequence[Run],
                      out: Path) -> tuple[Marks, list[Path]]:
    """replication.md against other runs of the same questions (committed
    raw results, so that the report regenerates), and each (question,
    backend)'s "replicated" mark; none without other runs."""
    if ra is None or not others:
        return {}, []
    reps = replicate([ra, *(RunAnswers.of(o, run_matrix(o))
                            for o in others)])
    atomic_write(out / "replication.md", verdicts.replication_markdown(reps))
    return verdicts.replication_marks(reps), [out / "replication.md"]


def slides_run(run: Run, dest: Path | None = None,
               pdf: bool = True) -> list[Path]:
    """`lab slides`: the figures and the deck (default reports/<run-id>)."""
    out = dest or default_dest(run)
    res = Results.of(run)
    figs = write_figures(res, out / "figures")
    matrix = run_matrix(run)
    return write_deck(res, recommend(res, matrix), matrix, figs, out, pdf,
                      lead_slides(run, run_answers(run)))


def index_html(res: Results, figs: list[Figure], files: list[Path],
               dest: Path, answers: str = "", claims: str = "",
               upstream: str = "") -> str:
    """The report's first page: how it was measured (in the answers, when
    the run asks questions), the published claims beside the lab's
    results (when the questions cite any), the answers, the
    upstream-first verdict, the files and the figures."""
    e = html.escape

    def link(p: Path) -> str:
        rel = p.relative_to(dest).as_posix()
        return f"<a href='{e(rel)}'>{e(rel)}</a>"

    out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
           f"<title>swaplab report {e(res.source.run_id)}</title>",
           "<style>body{font-family:system-ui,sans-serif;max-width:70em;"
           "margin:1em auto}img{max-width:100%;border:1px solid #ddd}"
           "</style></head><body>",
           f"<h1>swaplab report: {e(res.source.run_id)}</h1>",
           f"<p>{e(res.provenance())}</p>",
           "" if answers else
           f"<p>{e(verdicts.testbed(res.records.values()))}</p>",
           verdicts.markdown_html(claims) if claims else "",
           verdicts.markdown_html(answers) if answers else "",
           f"<p><b><a href='upstream.html'>Upstream first</a>:</b> "
           f"{e(upstream)}.</p>" if upstream else "",
           "<h2>Files</h2><ul>"]
    out += [f"<li>{link(p)}</li>" for p in files]
    out.append("</ul><h2>Figures</h2>")
    for f in figs:
        out.append(f"<h3>{e(f.title)}</h3>{link(f.svg)}<br>"
                   f"<img src='{e(f.png.relative_to(dest).as_posix())}' "
                   f"alt='{e(f.title)}'>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write_reliability(res: Results, out: Path,
                      figs: list[Figure]) -> list[Path]:
    """reliability.md and its figure (added to `figs`) when the run
    injected faults or cycled swapoff."""
    records = list(res.records.values())
    if not faults.has_faults(records):
        return []
    rows = faults.summarize(records, res.source.variants)
    path = out / "reliability.md"
    atomic_write(path, reliability.markdown(rows, res.source.line()))
    fig = reliability.figure(res, rows, out / "figures")
    if fig is None:
        return [path]
    figs.append(fig)
    return [path, fig.png, fig.svg]


def write_answers(run: Run, out: Path, ra: RunAnswers | None = None,
                  marks: Marks | None = None) -> str:
    """answers.md when the run's sub-matrix declares questions ("" when
    it does not)."""
    ra = ra or run_answers(run)
    if ra is None:
        return ""
    text = verdicts.markdown(ra, dict(marks or {}))
    atomic_write(out / "answers.md", text)
    return text


def claims_first(ra: RunAnswers | None,
                 marks: Marks | None = None) -> tuple[str, str]:
    """The index page's claims section and its answers without it: a run
    that cites published figures leads with them."""
    if ra is None:
        return "", ""
    marks = dict(marks or {})
    claims = verdicts.claims_section(ra.primary, marks, ra.values, ra.rows)
    text = verdicts.markdown(ra, marks, claims=not claims)
    return "\n".join(claims).lstrip("\n") + "\n" if claims else "", text


def build_report(run: Run, dest: Path | None = None,
                 all_metrics: bool = False, pdf: bool = True,
                 others: Sequence[Run] = ()) -> list[Path]:
    """Write the run's report directory; the paths, index.html first.
    A run of questions starts with its answers (answers.md), marked
    replicated or not against `others` (other runs of its questions)."""
    out = dest or default_dest(run)
    res = Results.of(run)
    ra = run_answers(run)
    marks, files = write_replication(ra, others, out)
    answers = write_answers(run, out, ra, marks)
    files = ([out / "answers.md"] if answers else []) + files
    files += write_report(res.rows, res.source, out / "tables",
                         res.samples.failed, all_metrics,
                         res.samples.values)
    figs = write_figures(res, out / "figures")
    files += [p for f in figs for p in (f.png, f.svg)]
    matrix = run_matrix(run)
    rec = recommend(res, matrix)
    line = res.source.line()
    links = Links.of(res, matrix, out, [f.name for f in figs])
    for name, text in (("upstream.md", markdown(rec, links, line)),
                       ("upstream.html", html_page(rec, links, line))):
        atomic_write(out / name, text)
        files.append(out / name)
    # Before the deck: its reliability slide shows the figure.
    files += write_reliability(res, out, figs)
    files += write_deck(res, rec, matrix, figs, out, pdf,
                        lead_slides(run, ra, marks))
    files.append(write_record(run, out, [run_ref(o) for o in others]))
    index = out / "index.html"
    claims, answers = claims_first(ra, marks)
    atomic_write(index, index_html(res, figs, files, out, answers, claims,
                                   verdict(rec)))
    if out.resolve().parent == REPORTS.resolve():
        write_catalogue(REPORTS)
    return [index, *files]


def write_raw(run: Run, dest: Path) -> list[Path]:
    """The run's manifest, matrix and cell results, without logs: what
    `lab report --results DIR` and `lab answers --results DIR` read."""
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for name in ("manifest.json", "matrix.yaml"):
        if (run.root / name).is_file():
            atomic_write(dest / name, (run.root / name).read_bytes())
            out.append(dest / name)
    for cell_id in sorted(run.records()):
        src = run.cell_file(cell_id)
        atomic_write(dest / src.name, src.read_bytes())
        out.append(dest / src.name)
    return out
