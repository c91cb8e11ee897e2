"""Counter expectations: parsed from matrix.yaml, checked against real
guest results (tests/data/results/quick-real, captured from a quick run)."""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from lab.errors import MatrixError
from lab.results.store import Store, open_results_dir
from lab.spec import expect
from lab.spec.matrix import load_matrix
from lab.spec.yamlsrc import Node

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data"
REPORTS = ROOT / "reports"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(ROOT / "matrix.yaml")


@pytest.fixture(scope="module")
def records():
    return Store(DATA).open("quick-real").records()


def test_real_cells_meet_the_repository_matrix(matrix, records):
    """The fixture's pmem cell (base, seq) comes from a kernel whose
    sync_io_bypass still defaulted to on (before issue 24, item 3): the
    rules for today's base name exactly the bypass it took and the
    readahead it skipped, and it meets the rules of base-bypass, the
    control with the bypass on."""
    checked = 0
    for rec in records.values():
        problems = expect.check(matrix.expect, rec.cell, rec.result)
        if rec.cell.backend == "dax-pmem":
            assert [p.split(" during")[0] for p in problems] == [
                "expected vmstat swap_sync_bypass == 0",
                "expected vmstat swap_ra_cluster > 0"], problems
            control = dataclasses.replace(rec.cell,
                                          variant=f"{rec.cell.variant}-bypass")
            assert expect.check(matrix.expect, control, rec.result) == []
        else:
            assert problems == []
        checked += sum(e.where.matches(rec.cell) for e in matrix.expect)
    # Every captured cell is covered by at least one rule.
    assert all(any(e.where.matches(r.cell) for e in matrix.expect)
               for r in records.values())
    assert checked >= len(records)


def test_a_variant_that_took_the_wrong_path_is_named(matrix, records):
    # base's THP workload on NVMe, judged as if it were thp-stage2.
    rec = records["base-nvme-thp-swpout-r1"]
    cell = type(rec.cell)(1, "thp-stage2", "nvme", "thp-swpout")
    problems = expect.check(matrix.expect, cell, rec.result)
    assert any(p.startswith('expected vmstat thp_swpout > 0 during the '
                            'workload (') and p.endswith("counted 0")
               for p in problems), problems
    assert any("thp_swpout_split_early <= 5% of thp_swpout (0)" in p and
               "counted 132" in p for p in problems), problems
    assert all("matrix.yaml:" in p for p in problems)


def test_a_kernel_without_the_counters_is_named(matrix, records):
    rec = records["thp-stage2-nvme-thp-swpout-r1"]
    result = copy.deepcopy(rec.result)
    del result["after"]["vmstat"]["thp_swpout_split_early"]
    problems = expect.check(matrix.expect, rec.cell, result)
    assert problems == [p for p in problems if "has no" in p]
    assert "the guest's /proc/vmstat has no thp_swpout_split_early" \
        in problems[0]


@pytest.mark.parametrize("value,cond,holds,fails", [
    (0, expect.Condition("==", 0), 0, 1),
    (">0", expect.Condition(">", 0), 3, 0),
    (">= 512", expect.Condition(">=", 512), 512, 511),
    ("< 10", expect.Condition("<", 10), 9, 10),
    ("==7", expect.Condition("==", 7), 7, 8),
    # thp_swpout moved by 219 below: 5 % of it is 10.95
    ("<= 5% thp_swpout", expect.Condition("<=", 5, "thp_swpout"), 10, 11),
    (">=200%thp_swpout", expect.Condition(">=", 200, "thp_swpout"), 438,
     437),
])
def test_conditions(value, cond, holds, fails):
    got = expect.condition(Node("m.yaml", 3, "expect[0].vmstat.x", value))
    delta = {"thp_swpout": 219}
    assert got == cond and got.holds(holds, delta) and \
        not got.holds(fails, delta)


def test_a_few_thps_off_the_stage_2_path_pass_and_many_fail(matrix,
                                                            records):
    """A quick run's `everything` on NVMe (20261204-145849-quick) wrote
    219 THPs whole and split 6 early, PTE-mapped by a race with the
    workload's read-back: still stage 2. A fifth split early is not."""
    rec = records["thp-stage2-nvme-thp-swpout-r1"]
    result = copy.deepcopy(rec.result)
    delta = result["delta"]["vmstat"]
    delta.update(thp_swpout=219, thp_swpout_split_early=6)
    assert expect.check(matrix.expect, rec.cell, result) == []
    delta.update(thp_swpout_split_early=44)
    problems = expect.check(matrix.expect, rec.cell, result)
    assert len(problems) == 1 and problems[0].startswith(
        "expected vmstat thp_swpout_split_early <= 5% of thp_swpout "
        "(10.95) during the workload (") and \
        problems[0].endswith("the guest counted 44"), problems


def test_a_missing_reference_counter_is_named(matrix, records):
    rec = records["thp-stage2-nvme-thp-swpout-r1"]
    result = copy.deepcopy(rec.result)
    del result["after"]["vmstat"]["thp_swpout"]
    problems = expect.check(matrix.expect, rec.cell, result)
    assert any("split_early <= 5% of thp_swpout" in p and
               p.endswith("has no thp_swpout") for p in problems), problems


@pytest.mark.parametrize("value", ["lots", -1, True, "> -1", None,
                                   "<= 5%", "5% 9lives"])
def test_bad_conditions_are_named(value):
    with pytest.raises(MatrixError) as info:
        expect.condition(Node("m.yaml", 3, "expect[0].vmstat.x", value))
    assert str(info.value).startswith(
        "m.yaml:3: expect[0].vmstat.x: expected a counter condition")


def test_6_12_large_folio_swap_in_is_proven_on_pmem_and_zram(matrix):
    """Issue 25: stock 6.12 with 64 KiB mTHP swaps large folios in from
    both synchronous devices (15.6 to 15.8 pages a major fault in the
    reference run), with 4 KiB folios one page a fault. Every such cell
    of the run meets its rule; a 64 KiB cell that brought one page a
    fault breaks it, and so does a 4 KiB cell that brought two."""
    run = open_results_dir(REPORTS / "20261207-170011-today-reread" / "raw")
    checked = 0
    for rec in run.records().values():
        if (rec.cell.backend not in ("dax-pmem", "zram")
                or ".12" not in rec.cell.variant):
            continue
        assert expect.check(matrix.expect, rec.cell, rec.result) == []
        wrong = copy.deepcopy(rec.result)
        vm = wrong["delta"]["vmstat"]
        large = rec.cell.variant.endswith("-mthp64")
        vm["pswpin"] = vm["pgmajfault"] * (1 if large else 2)
        problems = expect.check(matrix.expect, rec.cell, wrong)
        assert any("pswpin" in p for p in problems), problems
        checked += 1
    assert checked == 48
