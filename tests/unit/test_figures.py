"""Figures rendered from the fixture run."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.report import analysis, figures
from lab.results.store import Store

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
    p99 = res.row("seq", "nvme", "swapbench.main.latency.p99_us",
                  "readahead")
    assert p99.change.significant
    assert drawn["change-seq"].title == (
        f"seq: readahead cuts p99 fault latency on nvme by "
        f"{abs(p99.change.pct):.0f} %")
    fill = res.row("thp-swpout", "rotational",
                   "swapbench.fill.bytes_per_s", "thp-stage2")
    assert f"by {abs(fill.change.pct):.0f} %" in drawn["swapout"].title


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
               figures.colours_of(res.source.variants).items()}

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
        "n/a: 0 block writes"
    io = real.row("thp-swpout", "nvme", "diskstats.kib_per_write",
                  "thp-stage2")
    assert figures.write_size(real, "thp-swpout", "nvme", "thp-stage2") == \
        f"{io.summary.mean:.0f} KiB/write"
    assert figures.write_size(real, "thp-swpout", "nvme", "nope") == \
        "n/a: no diskstats"


def test_heatmap_scale_per_workload(drawn):
    assert drawn["heatmap"].title.startswith(
        "Throughput on seq, thp-swpout: ")
    # One outlier does not set the scale, and is said to be clipped.
    assert figures.colour_scale([1, -2, 3, 4, 5, 6, 7, 8, 9, -400]) == \
        (9, True)
    assert figures.colour_scale([-20, 5]) == (20, False)
    assert figures.colour_scale([0.1]) == (1.0, False)


def test_the_swapout_figure_takes_the_fill_workload(res):
    assert figures.swapout_workload(res) == "thp-swpout"


def test_a_variant_keeps_its_colour_across_runs() -> None:
    """By name, not by place: a run with other variants, or in another
    order, gives the shared ones the same colours, all distinct."""
    a = figures.colours_of(["base", "readahead", "thp-stage1", "thp-stage2"])
    b = figures.colours_of(["thp-swapin", "thp-stage2", "base-again",
                            "base", "readahead"])
    assert {v: a[v] for v in ("base", "readahead", "thp-stage2")} == \
        {v: b[v] for v in ("base", "readahead", "thp-stage2")}
    many = [f"v{i}" for i in range(len(figures.PALETTE))]
    assert len(set(figures.colours_of(many).values())) == len(many)
    assert "#000000" not in figures.PALETTE
