"""Figures rendered from the fixture run."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab import figures
from lab.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture(scope="module")
def res() -> figures.Results:
    return figures.Results.of(Store(DATA).open("fixture-run"))


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


def test_no_significant_difference_is_said_so(res):
    rows = [r for r in res.rows if r.change and not r.change.significant]
    assert figures.headline(rows, "base") == \
        "No variant differs significantly from base"
    ns = res.row("seq", "nvme", "swapbench.main.bytes_per_s", "thp-stage2")
    assert "no significant difference" in figures.finding(ns, "base")


def test_provenance_names_run_matrix_repeats_kernels(res):
    line = res.provenance()
    assert "run fixture-run" in line and "sha256 efefefefefef" in line
    assert "3 repeats planned, n=2-3 measured" in line
    assert "6.1.158-readahead-2b3c4d5e6f70" in line
    assert "1 failed cells left out" in line


def test_facts_the_guests_reported(res):
    assert res.kind("seq") == "seq" and res.kind("thp-swpout") == "fill"
    assert res.devices()["rotational"]["rotational"] == "1"
    assert figures.swapout_workload(res) == "thp-swpout"
