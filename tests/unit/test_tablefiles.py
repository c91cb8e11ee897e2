"""report.html: anchors, verdict colours, each variant's own mean, the raw
repeats; and every table link of upstream.md lands on an anchor."""
from __future__ import annotations

import re
from pathlib import Path

from lab.report import analysis, tablefiles, tables, upstream
from lab.report.upstreampage import Links, markdown
from lab.results.runmatrix import run_matrix
from lab.results.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"


def built() -> tuple[analysis.Results, str]:
    run = Store(DATA).open("fixture-run")
    res = analysis.Results.of(run)
    return res, tablefiles.report_html(res.rows, res.source,
                                       res.samples.failed,
                                       values=res.samples.values)


def test_cells_are_coloured_by_verdict_and_show_their_mean() -> None:
    res, page = built()
    row = res.row("seq", "nvme", "swapbench.main.bytes_per_s", "readahead")
    rid = tablefiles.anchor("seq", row.metric, "readahead")
    line = next(t for t in page.splitlines() if f"id='{rid}'" in t)
    cls = {"better": "better", "worse": "worse", "n<3": "few"}.get(
        row.change.verdict)
    assert (f"<td class='{cls}'>" in line) if cls else "class=" not in line
    assert f"n={row.summary.n}</small>" in line


def test_raw_repeats_are_every_value_in_order() -> None:
    res, page = built()
    values = res.samples.values[("seq", "nvme", "swapbench.main.bytes_per_s",
                                 "readahead")]
    shown = ", ".join(tables.human(v, "B/s") for v in values)
    assert f"<td>readahead</td><td>nvme</td><td>{shown}</td>" in page


def test_every_table_link_of_upstream_lands_on_an_anchor(tmp_path) -> None:
    res, page = built()
    run = Store(DATA).open("fixture-run")
    matrix = run_matrix(run)
    rec = upstream.recommend(res, matrix)
    links = Links.of(res, matrix, tmp_path, ["change-seq"])
    md = markdown(rec, links, "line")
    targets = re.findall(r"\(tables/report\.html#([^)]+)\)", md)
    ids = set(re.findall(r"id='([^']+)'", page))
    assert targets and set(targets) <= ids
