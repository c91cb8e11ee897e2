"""Figures rendered from the fixture run."""
from __future__ import annotations

from pathlib import Path

import pytest

import dataclasses

from lab.paths import REPO
from lab.report import analysis, figstyle, figures
from lab.results.metricinfo import HIGHER, LOWER
from lab.results.store import Store, open_results_dir

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture(scope="module")
def res() -> analysis.Results:
    return analysis.Results.of(Store(DATA).open("fixture-run"))


@pytest.fixture(scope="module")
def drawn(res, tmp_path_factory) -> dict[str, figures.Figure]:
    dest = tmp_path_factory.mktemp("figures")
    return {f.name: f for f in figures.write_figures(res, dest)}


def test_every_figure_in_png_and_svg(drawn):
    assert set(drawn) == {"heatmap", "change-seq", "latency-seq",
                          "change-thp-swpout", "swapout"}
    for f in drawn.values():
        assert f.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = f.svg.read_text()
        assert "<svg" in svg and f.png.stat().st_size > 10_000
        # The provenance is in the picture (text drawn as paths in the
        # SVG, so check it where it is computed).


def test_titles_state_the_computed_finding(res, drawn):
    seq = res.row("seq", "nvme", "swapbench.main.bytes_per_s", "readahead")
    assert drawn["change-seq"].title == "seq, throughput: " + \
        analysis.headline([r for r in res.rows if r.workload == "seq" and
                           r.metric == seq.metric and r.change],
                          "base")
    p99 = res.row("seq", "nvme", "swapbench.main.latency.p99_us",
                  "readahead")
    assert p99.change.significant
    assert drawn["latency-seq"].title == \
        f"seq: {analysis.finding(p99, 'base')}"
    # From 3x on, the finding says the fold.
    assert analysis.finding(p99, "base").endswith(
        f"{1 / (1 + p99.change.pct / 100):.1f}x ({p99.change.pct:+.0f} %)")
    fill = res.row("thp-swpout", "rotational",
                   "swapbench.fill.bytes_per_s", "thp-stage2")
    assert f"by {abs(fill.change.pct):.0f} %" in drawn["swapout"].title


RUNS = [REPO / "reports" / r / "raw" for r in (
    "20261206-114034-seeds", "20261206-023500-quick",
    "20261206-184347-safety")]


@pytest.mark.parametrize("where", ["fixture-run", "quick-real", *RUNS],
                         ids=lambda w: w if isinstance(w, str)
                         else w.parent.name)
def test_every_figure_reads_on_a_projector(where, tmp_path):
    """At least 14 pt as the deck shows it, and no two texts overlap:
    on planted effects, one repeat, and three committed runs."""
    run = Store(DATA).open(where) if isinstance(where, str) \
        else open_results_dir(where)
    found = analysis.Results.of(run)
    drawn = figures.write_figures(found, tmp_path)
    assert drawn
    for f in drawn:
        assert f.shown_pt >= figstyle.MIN_SHOWN_PT, f.name
        assert f.overlaps == (), f.name


def test_a_change_of_3x_or_more_gets_a_fold_axis(res):
    rows = [r for r in res.rows if r.change and r.change.pct is not None]
    big = dataclasses.replace(rows[0], change=dataclasses.replace(
        rows[0].change, pct=+210.0))
    assert not figures.folded(rows[:1]) and figures.folded([big])
    # Up is better on a fold axis: a halved latency is 2x.
    assert figures._fold(-50.0, LOWER) == pytest.approx(2.0)
    assert figures._fold(+100.0, HIGHER) == pytest.approx(2.0)


def test_heatmap_cells_carry_their_spread(res):
    row = res.row("seq", "nvme", "swapbench.main.bytes_per_s", "readahead")
    c = row.change
    text = figures.cell_text(row)
    assert text.startswith(f"{c.pct:+.0f}±{(c.high - c.low) / 2:.0f}%")
    assert text.endswith("*") == c.significant
    one = dataclasses.replace(row, change=dataclasses.replace(
        c, low=None, high=None, verdict="n<3", pct=250.0))
    assert figures.cell_text(one) == "3.5x"


@pytest.fixture(scope="module")
def real() -> analysis.Results:
    """A real quick run: one repeat per cell."""
    return analysis.Results.of(Store(DATA).open("quick-real"))


def test_one_repeat_judges_nothing(real, tmp_path):
    drawn = figures.write_figures(real, tmp_path)
    assert len(drawn) == 5
    for f in drawn:
        assert "differs significantly" not in f.title
        assert "1 repeat, nothing judged against base; largest change " \
            "seen: " in f.title and f.title.endswith(" (unjudged)")
    # The largest change named is the largest the figure shows.
    swapout = next(f for f in drawn if f.name == "swapout")
    metric = real.throughput("thp-swpout")
    rows = [r for r in real.rows if r.workload == "thp-swpout" and
            r.metric == metric and r.change]
    big = max(rows, key=lambda r: abs(r.change.pct))
    assert f"{big.variant} swap-out throughput on {big.backend} " \
        f"{big.change.pct:+.1f} % (unjudged)" in swapout.title


def test_a_variant_has_one_colour_in_every_figure(res, drawn):
    colours = {v: c.lower() for v, c in
               figstyle.colours_of(res.source.variants).items()}

    def used(name: str) -> set[str]:
        text = drawn[name].svg.read_text().lower()
        return {c for c in colours.values() if c in text}
    compared = {colours[v] for v in res.others()}
    # The change figures leave the baseline out (the latency one draws it
    # black): its colour must not pass to the next variant.
    assert used("change-seq") == used("change-thp-swpout") == \
        used("latency-seq") == compared
    assert used("swapout") == set(colours.values())


def test_swapout_label_says_why_there_is_none(real):
    # DAX pmem: the guest counted no block writes, so no write size.
    assert figures.write_size(real, "seq", "dax-pmem", "base") == \
        "0 writes"
    io = real.row("thp-swpout", "nvme", "diskstats.kib_per_write",
                  "thp-stage2")
    assert figures.write_size(real, "thp-swpout", "nvme", "thp-stage2") == \
        f"{io.summary.mean:.0f} KiB"
    assert figures.write_size(real, "thp-swpout", "nvme", "nope") == "n/a"


def test_heatmap_scale_per_workload(drawn):
    assert drawn["heatmap"].title.startswith("Throughput: ")
    # One outlier does not set the scale (its cell says its value).
    assert figures.colour_scale([1, -2, 3, 4, 5, 6, 7, 8, 9, -400]) == 9
    assert figures.colour_scale([-20, 5]) == 20
    assert figures.colour_scale([0.1]) == 1.0


def test_the_swapout_figure_takes_the_fill_workload(res):
    assert figures.swapout_workload(res) == "thp-swpout"
