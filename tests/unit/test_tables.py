"""Tables rendered from tests/data/results: the synthetic fixture run
(repeats, planted effects, a failed cell) and quick-real (real guest
results, one repeat)."""
from __future__ import annotations

import csv
import json
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lab.errors import LabError
from lab.report import reportdir, tablefiles, tables
from lab.results import metrics, stats
from lab.results.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"
LINE = ("matrix matrix.yaml (sha256 efefefefefef), sub-matrix fixture, "
        "run fixture-run, 3 repeats planned")


@pytest.fixture(scope="module")
def loaded():
    run = Store(DATA).open("fixture-run")
    samples = metrics.gather(run.records().values())
    return tables.Source.of(run), samples


def rows_for(loaded, baseline="base"):
    _, s = loaded
    return stats.analyze(s.values, s.info, baseline)


def row_of(text: str, metric: str) -> str:
    return next(ln for ln in text.splitlines() if ln.endswith("  " + metric))


def test_source_line(loaded):
    source, _ = loaded
    assert source.line() == LINE
    assert source.baseline == "base"


def test_compare_lkp_layout(loaded):
    source, s = loaded
    text = tables.compare_text(rows_for(loaded), source, "base",
                               ["readahead", "thp-stage2"], s.failed)
    lines = text.splitlines()
    assert lines[:9] == [
        "seq on nvme", LINE,
        "repeats measured: base n=3, readahead n=3, thp-stage2 n=3", "",
        "base             readahead                   thp-stage2",
        "---------------- -------------------------- "
        "--------------------------",
        "         %stddev   %change           %stddev   %change    "
        "       %stddev",
        "             \\          |                \\          |      "
        "          \\", lines[8]]
    # base ± %stddev, %change + mark, other ± %stddev, metric
    num = r"\s*[\d.]+ ±\s+\d+%"
    pct = r"\s*[+-]\d+\.\d%[*? ]"
    assert re.fullmatch(num + pct + num + pct + num
                        + r"  swapbench\.main\.bytes_per_s", lines[8])
    tp = row_of(text, "swapbench.main.bytes_per_s")
    assert re.search(r"\+\d+\.\d%\*", tp)          # readahead: significant
    assert re.search(r" -\d+\.\d%  ", tp)          # thp-stage2: not
    assert text.count(LINE) == 4                   # every block says it
    assert "A/A noise, smallest detectable %change: " \
        "swapbench.main.bytes_per_s ±" in text


def test_compare_marks_few_repeats_and_failures(loaded):
    source, s = loaded
    text = tables.compare_text(rows_for(loaded), source, "base",
                               ["readahead"], s.failed)
    block = text.split("seq on rotational")[1].split("thp-swpout on")[0]
    assert "repeats measured: base n=3, readahead n=2" in block
    assert "failed cells, left out: readahead-rotational-seq-r3 (hang)" \
        in block
    assert re.search(r"\+\d+\.\d%\?", row_of(block,
                                           "swapbench.main.bytes_per_s"))
    assert "*" not in "".join(ln for ln in block.splitlines()
                              if ln.endswith(("_us", "_s", "ratio")))


def test_compare_shows_what_changed(loaded):
    source, _ = loaded
    few = tables.compare_text(rows_for(loaded), source, "base",
                              ["thp-stage2"])
    thp = few.split("thp-swpout on nvme")[1]
    # thp_swpout is not a headline metric, but it changed from 0.
    line = row_of(thp, "vmstat.thp_swpout")
    assert re.fullmatch(r"\s+0\.00\s{6}\s{10}\*\s+\d+\.\d\d ±\s+\d%  "
                        r"vmstat\.thp_swpout", line)
    assert "diskstats.kib_per_write" in thp
    assert "meminfo.SwapCached" not in thp
    everything = tables.compare_text(rows_for(loaded), source, "base",
                                     ["thp-stage2"], all_metrics=True)
    assert "meminfo.SwapCached" in everything


def test_compare_other_baseline(loaded):
    source, _ = loaded
    text = tables.compare_text(rows_for(loaded, "readahead"), source,
                               "readahead", ["base"])
    assert text.splitlines()[4].startswith("readahead        base")
    assert re.search(r"-\d+\.\d%\*", row_of(text,
                                          "swapbench.main.bytes_per_s"))


def test_report_markdown_pivot(loaded):
    source, s = loaded
    md = tables.report_markdown(rows_for(loaded), source, s.failed)
    assert LINE in md
    section = md.split("### swapbench.main.bytes_per_s (B/s, higher is "
                       "better)")[1].split("###")[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    assert lines[0] == "| variant | nvme | rotational |"
    assert re.fullmatch(r"\| base \(baseline\) \| \d+ MB/s ±\d\.\d% \(n=3\) "
                        r"\| [\d.]+ MB/s ±\d\.\d% \(n=3\) \|", lines[2])
    assert re.fullmatch(r"\| readahead \| \+\d+\.\d% \[\+\d+\.\d, "
                        r"\+\d+\.\d\] \* \| \+\d+\.\d% \(n<3\) \|", lines[3])
    assert re.fullmatch(r"\| thp-stage2 \| [+-]\d+\.\d% \[-\d+\.\d, "
                        r"\+\d+\.\d\] \| .* \|", lines[4])
    assert re.fullmatch(r"\| A/A detectable \| ±\d+\.\d% \| ±\d+\.\d% \|",
                        lines[5])
    assert "## thp-swpout" in md and "## Latency" in md
    assert "failed cells, left out: readahead-rotational-seq-r3 (hang)" in md


def test_report_csv(loaded):
    source, _ = loaded
    rows = rows_for(loaded)
    data = list(csv.DictReader(io.StringIO(tables.report_csv(rows,
                                                             source))))
    assert len(data) == len(rows)
    assert {d["run"] for d in data} == {"fixture-run"}
    assert {d["submatrix"] for d in data} == {"fixture"}
    one = next(d for d in data if d["variant"] == "readahead"
               and d["backend"] == "nvme" and d["workload"] == "seq"
               and d["metric"] == "swapbench.main.bytes_per_s")
    assert one["verdict"] == "better" and one["method"] == "welch"
    assert float(one["ci_low"]) < float(one["pct_change"]) < \
        float(one["ci_high"])
    base = next(d for d in data if d["variant"] == "base")
    assert base["verdict"] == "baseline" and base["pct_change"] == ""


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.tables = [], 0

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br"):
            self.stack.append(tag)
        self.tables += tag == "table"

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag


def test_report_html(loaded):
    source, s = loaded
    text = tablefiles.report_html(rows_for(loaded), source, s.failed)
    parser = Tags()
    parser.feed(text)
    assert parser.stack == []
    md = tables.report_markdown(rows_for(loaded), source, s.failed)
    assert parser.tables == md.count("| variant |")
    assert LINE in text and "<td>readahead</td>" in text


def test_latency_seed_format(loaded):
    source, _ = loaded
    text = tables.latency_text(rows_for(loaded), source)
    assert text.splitlines()[0] == LINE
    blocks = text.split("\n\n")[1:]
    assert len(blocks) == 12     # 2 workloads x 2 backends x 3 variants
    head, first, second = blocks[0].splitlines()
    assert head == "seq on nvme, base, group main (mean of 3 repeats):"
    us = r"\d+(\.\d\d?)?(us|ms)"
    assert re.fullmatch(rf"samples: \d+, average: {us}, min: {us}, "
                        rf"max: {us}", first)
    assert re.fullmatch(", ".join(rf"{p}th: {us}" for p in
                                  (50, 60, 70, 80, 90, 95, 99)), second)
    assert "readahead, group main (mean of 2 repeats)" in text


@pytest.mark.parametrize("us,text", [(40.08, "40.08us"), (1.0, "1us"),
                                     (26.8, "26.8us"), (16200, "16.2ms"),
                                     (17420, "17.42ms"), (0.0, "0us")])
def test_seed_number_format(us, text):
    assert tables._seed_us(us) == text


def test_write_report(loaded, tmp_path):
    source, s = loaded
    files = tablefiles.write_report(rows_for(loaded), source, tmp_path / "r",
                                s.failed)
    assert [f.name for f in files] == ["report.md", "report.csv",
                                       "report.html", "latency.txt"]
    for f in files:
        text = f.read_text()
        assert "fixture-run" in text and "fixture" in text


def test_compare_unknown_variant(loaded):
    source, _ = loaded
    with pytest.raises(LabError, match="no variant everything in run "
                       "fixture-run; it has: base, readahead, thp-stage2"):
        tables.compare_text(rows_for(loaded), source, "base",
                            ["everything"])


def test_compare_run_and_report_tables(tmp_path):
    run = Store(DATA).open("fixture-run")
    text = tables.compare_run(run, "base", ["readahead"])
    assert text.startswith("seq on nvme\n" + LINE)
    files = reportdir.build_report(run, tmp_path, pdf=False)
    assert (tmp_path / "tables" / "report.md").read_text().startswith(
        "# swaplab report")
    table_files = [f for f in files if f.parent == tmp_path / "tables"]
    assert len(table_files) == 4


# Real guest results: cells of a quick run (one repeat), captured verbatim
# by tests/data/capture_run.py.

@pytest.fixture(scope="module")
def real():
    run = Store(DATA).open("quick-real")
    samples = metrics.gather(run.records().values())
    return run, tables.Source.of(run), samples


def group(run, cell: str, name: str) -> dict:
    doc = run.records()[cell].result["workload"]["result"]
    return next(g for g in doc["groups"] if g["name"] == name)


def test_real_compare_quotes_the_guests_numbers(real):
    run, source, s = real
    text = tables.compare_text(stats.analyze(s.values, s.info, "base"),
                               source, "base", ["thp-stage2"], s.failed)
    block = text.split("thp-swpout on nvme\n")[1].split(" on ")[0]
    assert "repeats measured: base n=1, thp-stage2 n=1" in block
    base = group(run, "base-nvme-thp-swpout-r1", "fill")["bytes_per_s"]
    stage2 = group(run, "thp-stage2-nvme-thp-swpout-r1", "fill")[
        "bytes_per_s"]
    change = f"{(stage2 / base - 1) * 100:+.1f}%"
    line = row_of(block, "swapbench.fill.bytes_per_s")
    assert line.split() == [f"{base:.0f}", change + "?", f"{stage2:.0f}",
                            "swapbench.fill.bytes_per_s"]
    # One repeat: every change is shown unjudged, none is significant.
    assert "*" not in "".join(ln for ln in text.splitlines()
                              if ln.endswith(("_s", "_us")))


def test_real_latency_in_the_seed_format(real):
    run, source, s = real
    text = tables.latency_text(stats.analyze(s.values, s.info, "base"),
                               source)
    lat = group(run, "base-rotational-seq-r1", "main")["latency"]
    block = text.split("seq on rotational, base, group main (mean of 1 "
                       "repeats):\n")[1].split("\n\n")[0]
    first, second = block.splitlines()
    assert first == (f"samples: {lat['samples']}, average: "
                     f"{tables._seed_us(lat['avg_us'])}, min: "
                     f"{tables._seed_us(lat['min_us'])}, max: "
                     f"{tables._seed_us(lat['max_us'])}")
    assert second == ", ".join(
        f"{p}th: {tables._seed_us(lat[f'p{p}_us'])}"
        for p in (50, 60, 70, 80, 90, 95, 99))


def test_real_pivot_marks_single_repeats(real):
    _, source, s = real
    md = tables.report_markdown(stats.analyze(s.values, s.info, "base"),
                                source, s.failed)
    assert "run quick-real, 1 repeat planned" in md
    section = md.split("## thp-swpout")[1].split(
        "### swapbench.fill.bytes_per_s")[1].split("###")[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| thp-")]
    assert rows and all("(n<3)" in r and "*" not in r for r in rows)


def test_report_of_a_run_without_the_baseline(tmp_path):
    """A sub-matrix may leave the baseline out (the debug matrix runs one
    debug variant): the report shows each variant's own values, no
    change columns, no change figures, and says why."""
    src = DATA / "results" / "fixture-run"
    dest = tmp_path / "results" / "no-base"
    dest.mkdir(parents=True)
    for f in src.glob("*.json"):
        if not f.name.startswith("base-"):
            (dest / f.name).write_bytes(f.read_bytes())
    manifest = json.loads((src / "manifest.json").read_text())
    manifest["id"] = "no-base"
    manifest["matrix"]["variants"].remove("base")
    manifest["cells"] = [c for c in manifest["cells"]
                         if not c.startswith("base-")]
    (dest / "manifest.json").write_text(json.dumps(manifest))
    run = Store(tmp_path).open("no-base")
    source = tables.Source.of(run)
    assert not source.compared

    files = reportdir.build_report(run, tmp_path / "report", pdf=False)
    md = (tmp_path / "report" / "tables" / "report.md").read_text()
    assert "No comparison: the baseline variant 'base' is not in " \
        "sub-matrix fixture" in md
    assert "(baseline)" not in md and "%change" not in md
    assert re.search(r"\| readahead \| \d+ MB/s ±\d\.\d% \(n=3\) \|", md)
    rows = list(csv.DictReader(io.StringIO(
        (tmp_path / "report" / "tables" / "report.csv").read_text())))
    assert {r["verdict"] for r in rows} == {"no baseline"}
    names = {f.name for f in files}
    assert not any(n.startswith(("change-", "heatmap")) for n in names)
    assert {"latency-seq.png", "swapout.png", "deck.html"} <= names
    assert "(not in this run: no comparisons)" in \
        (tmp_path / "report" / "deck.html").read_text()
    upstream = (tmp_path / "report" / "upstream.md").read_text()
    assert "**No recommendation: " in upstream
    with pytest.raises(LabError, match="no variant base in run no-base"):
        tables.compare_run(run, "base", ["readahead"])
