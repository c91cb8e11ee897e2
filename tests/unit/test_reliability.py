"""The reliability section on real faults cells: base and thp-swapin on
the nvme-faulty backend (faults-thp and swapoff-load), captured from a
real `lab run --matrix faults` (tests/data/capture_run.py)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab.report import reliability, reportdir
from lab.results import faults
from lab.report.analysis import Results
from lab.results.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"
GIB = 1 << 30


@pytest.fixture(scope="module")
def run():
    return Store(DATA).open("faults-real")


@pytest.fixture(scope="module")
def records(run):
    return list(run.records().values())


def raw(records, variant: str) -> list[dict]:
    return [r.result for r in records if r.cell.variant == variant]


def test_rows_add_up_the_cells(records):
    rows = faults.summarize(records, ["upstream", "base", "thp-swapin"])
    assert [r.variant for r in rows] == ["base", "thp-swapin"]
    for row in rows:
        cells = raw(records, row.variant)
        vm = [c["delta"]["vmstat"] for c in cells]
        wl = [c["workload"]["result"] for c in cells]
        assert row.cells == len(cells) == 2 and row.failed == 0
        assert row.swapped_out_gib == pytest.approx(
            sum(v.get("pswpout", 0) for v in vm) * 4096 / GIB)
        assert row.swapped_in_gib == pytest.approx(
            sum(v.get("pswpin", 0) for v in vm) * 4096 / GIB)
        # verified_pages already holds the final sweep: not added twice
        assert row.verified_pages == sum(
            w["total"]["verified_pages"] + w["total"]["fork_verified_pages"]
            for w in wl)
        assert row.faults == sum(c["device_faults"]["read_errors"] +
                                 c["device_faults"]["write_errors"]
                                 for c in cells) > 0
        # unreadable pages were lost in place: no process died of them
        assert row.lost_pages == sum(w["total"]["lost_pages"]
                                     for w in wl) > 0
        assert row.procs_io_killed == 0
        assert row.mismatches == 0 and row.complaints == 0
        assert row.swapoff_cycles > 0 and row.swap_failures == 0
        assert row.clean


def test_a_mismatch_or_a_swap_left_off_is_not_clean(records):
    cell = next(r for r in records if r.cell.workload == "swapoff-load")
    broken = copy.deepcopy(cell)
    broken.result["workload"]["result"]["total"]["fork_mismatches"] = 1
    row = faults.VariantFaults(cell.cell.variant)
    faults.add_cell(row, broken.result)
    assert row.mismatches == 1 and not row.clean

    left_off = copy.deepcopy(cell)
    left_off.result["swap_events"]["swapcycle"][0]["swapon"] = "EBUSY"
    row = faults.VariantFaults(cell.cell.variant)
    faults.add_cell(row, left_off.result)
    assert row.swap_failures == 1 and not row.clean


def test_a_damaged_file_beside_a_swap_file_is_not_clean(records):
    """A swap-file cell's filler-file check (workloads/agent/swapfile.h)
    is summed per variant, reported under the table only where one ran,
    and a damaged file makes the variant not clean."""
    cell = next(r for r in records if r.cell.workload == "faults-thp")
    rows = []
    for bad in (0, 3):
        on_file = copy.deepcopy(cell)
        on_file.result["swap_file_check"] = {
            "files": 4397, "bad": bad, "unreadable": 1 if bad else 0}
        row = faults.VariantFaults(cell.cell.variant)
        faults.add_cell(row, on_file.result)
        rows.append(row)
    assert (rows[0].swap_file_cells, rows[0].filler_files,
            rows[0].filler_damaged) == (1, 4397, 0) and rows[0].clean
    assert rows[1].filler_damaged == 4 and not rows[1].clean
    text = reliability.markdown(rows[:1], "run x")
    assert "1 cells, 4397 files, 0 damaged" in text
    assert text.rstrip().endswith("no damaged file.")
    plain = faults.summarize(records, ["base", "thp-swapin"])
    assert "Swap files" not in reliability.markdown(plain, "run x")


def test_lab_errors_are_not_counted(records):
    host_fault = copy.deepcopy(records[0])
    host_fault.result.update(outcome="failed", reason="lab-error")
    rows = faults.summarize([host_fault], ["base", "thp-swapin"])
    assert rows == []


def test_markdown_and_figure(run, records, tmp_path):
    rows = faults.summarize(records, ["base", "thp-swapin"])
    text = reliability.markdown(rows, "run faults-real")
    assert "| base | 2 (0) |" in text
    assert "Every variant clean" in text
    res = Results.of(run)
    fig = reliability.figure(res, rows, tmp_path)
    assert fig is not None and fig.png.stat().st_size > 0
    assert fig.title.startswith("No silent corruption: 2 variants")


def test_report_has_the_section_only_when_faults_ran(run, tmp_path):
    res = Results.of(run)
    figs: list = []
    files = reportdir.write_reliability(res, tmp_path / "faults", figs)
    assert [p.name for p in files] == ["reliability.md", "reliability.png",
                                       "reliability.svg"]
    assert [f.name for f in figs] == ["reliability"]
    quick = Results.of(Store(DATA).open("quick-real"))
    assert reportdir.write_reliability(quick, tmp_path / "quick", []) == []
    assert not faults.has_faults(quick.records.values())


def test_captured_cells_are_real(records):
    """The data came from guests that ran: kernel release and device."""
    for rec in records:
        kernel = rec.result["kernel"]
        assert kernel["release"].endswith(kernel["expected_suffix"])
        assert rec.result["device"]["name"] == "nvme0n1"
        json.dumps(rec.result)          # plain JSON, as stored
