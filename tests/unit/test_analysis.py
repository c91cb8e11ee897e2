"""A run analysed once (lab.report.analysis), on the fixture run."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.report import analysis
from lab.results.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture(scope="module")
def res() -> analysis.Results:
    return analysis.Results.of(Store(DATA).open("fixture-run"))


def test_no_significant_difference_is_said_so(res):
    rows = [r for r in res.rows if r.change and r.change.pct is not None
            and not r.change.significant]
    judged = [r for r in rows if r.change.verdict != "n<3"]
    assert analysis.headline(judged, "base") == \
        "No variant differs significantly from base"
    few = len(rows) - len(judged)
    assert few and analysis.headline(rows, "base") == (
        f"No variant differs significantly from base ({few} of {len(rows)}"
        " comparisons not judged: fewer than 3 repeats)")
    ns = res.row("seq", "nvme", "swapbench.main.bytes_per_s", "thp-stage2")
    assert "no significant difference" in analysis.finding(ns, "base")


def test_provenance_names_run_matrix_repeats_kernels(res):
    line = res.provenance()
    assert "run fixture-run" in line and "sha256 efefefefefef" in line
    assert "3 repeats planned, n=2-3 measured" in line
    assert "6.1.158-readahead-2b3c4d5e6f70" in line
    assert "1 failed cells left out" in line


def test_facts_the_guests_reported(res):
    assert res.kind("seq") == "seq" and res.kind("thp-swpout") == "fill"
    assert res.devices()["rotational"]["rotational"] == "1"
