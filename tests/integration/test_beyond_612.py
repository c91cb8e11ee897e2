"""The THP swap-in series on 6.12 (issue 25, item 2), proven in guests.

`beyond-6.12` reads a PMD-size THP swapped out whole back in whole, with
one IO through the swap cache, from an NVMe drive, where stock 6.12
swaps in 4 KiB pages with readahead (its large-folio swap-in is for
synchronous devices only). Both boot the matrix's own `thp-reread-ro`
cell on `nvme`: swapbench writes a MADV_HUGEPAGE area of 1.3x RAM, then
re-reads it and checks every page of it.
"""
from __future__ import annotations

import collections
from pathlib import Path

import pytest

from lab.cache import cache_root
from lab.calibrate import dilation
from lab.guest import cellspec, runner
from lab.kernel.build import Build
from lab.spec.expect import check
from lab.spec.model import Cell, Matrix

pytestmark = pytest.mark.slow


def reread_on_nvme(matrix: Matrix, build: Build, tmp: Path) -> dict:
    """The `thp-reread-ro` cell of `build`'s variant on `nvme`: its
    result, after checking it ran clean, verified every page and held
    matrix.yaml's expectations."""
    cell = Cell(1, build.variant, "nvme", "thp-reread-ro")
    spec = cellspec.cell_spec(matrix.plan(cell), build, tmp / build.variant)
    res = runner.run_cell(dilation.prepared(spec, cache_root()),
                          cache_root())
    assert res.ok, f"{res.reason}: {res.detail} (log {res.console_log})"
    wl = res.result["workload"]["result"]
    assert wl["status"] == "ok" and wl["total"]["mismatches"] == 0, wl
    assert check(matrix.expect, cell, res.result) == []
    return res.result


def counters(result: dict) -> dict[str, int]:
    # The delta lists only the counters that moved.
    return collections.defaultdict(int, result["delta"]["vmstat"])


def test_beyond_6_12_swaps_thps_in_whole_from_nvme(
        repo_matrix: Matrix, builds: dict[str, Build],
        tmp_path: Path) -> None:
    """THPs that went out whole come back whole: thp_swpin moves, each
    read brings 512 pages, most of the area comes back that way, and
    every page reads back right."""
    vm = counters(reread_on_nvme(repo_matrix, builds["beyond-6.12"],
                                 tmp_path))
    shown = {k: vm[k] for k in sorted(vm)
             if k.startswith(("thp_sw", "pswp", "pgmaj"))}
    print(f"\nbeyond-6.12 on nvme: {shown}")
    assert vm["thp_swpout"] > 0, str(vm)
    assert vm["thp_swpin"] > 0, str(vm)
    assert vm["pswpin"] >= 512 * vm["thp_swpin"], str(vm)
    # Whole reads are most of what came back: 512 pages per major fault
    # at best, against at most 8 (page-cluster 3) for 4 KiB swap-ins.
    assert vm["pswpin"] >= 64 * vm["pgmajfault"], str(vm)


def test_upstream_6_12_swaps_no_large_folio_in_from_nvme(
        repo_matrix: Matrix, builds: dict[str, Build],
        tmp_path: Path) -> None:
    """Stock 6.12 on the same cell: no counter of a whole swap-in (its
    kernel has none), and no more pages per major fault than its 4 KiB
    readahead window (8 at page-cluster 3) can bring."""
    vm = counters(reread_on_nvme(repo_matrix, builds["upstream-6.12"],
                                 tmp_path))
    print(f"\nupstream-6.12 on nvme: pswpin {vm['pswpin']}, pgmajfault "
          f"{vm['pgmajfault']}, thp_swpout {vm['thp_swpout']}")
    assert vm["thp_swpout"] > 0, str(vm)
    assert not any(k.startswith("thp_swpin") for k in vm), str(vm)
    assert vm["pswpin"] <= 8 * vm["pgmajfault"], str(vm)
