"""Proof that every patched variant takes the path it claims (issues 4, 10).

Each variant boots with one THP workload (MADV_HUGEPAGE area larger than
the guest, written then re-read sequentially) and the new vmstat counters
must show its THP swap-out stage and its readahead algorithm. Builds come
from the lab's own cache (built there if missing), as `make run` would.
"""
from __future__ import annotations

import collections
from pathlib import Path

import pytest

from lab import runner
from lab.build import Build, Builder
from lab.cache import cache_root, locked
from lab.matrix import Guest, Matrix
from lab.progress import Progress

pytestmark = pytest.mark.slow

GUEST = Guest(memory_mib=256, vcpus=2, swap_mib=512, firmware="seabios",
              cmdline="")
THP_SEQ = ["swapbench", "--pattern", "seq", "--thp", "madvise",
           "--size-frac-mem", "1.3", "--passes", "2", "-q"]
# Below 512 MiB of RAM the kernel starts with THP off: ask for it, and let
# madvised faults compact memory to get huge pages.
THP_ON = {"kernel/mm/transparent_hugepage/enabled": "madvise",
          "kernel/mm/transparent_hugepage/defrag": "madvise"}


@pytest.fixture(scope="module")
def builds(repo_matrix: Matrix) -> dict[str, Build]:
    root = cache_root()
    with locked(root):
        builder = Builder(repo_matrix, root)
        return {name: builder.build(repo_matrix.variants[name],
                                    Progress(name))
                for name in ("base", "readahead", "thp-stage1",
                             "thp-stage2", "everything", "thp-swapin")}


def boot(matrix: Matrix, build: Build, backend: str, tmp: Path,
         sysfs: dict[str, str] | None = None) -> dict[str, int]:
    spec = runner.CellSpec(
        cell_id=f"proof-{build.variant}-{backend}", build=build,
        backend=matrix.backends[backend], guest=GUEST, argv=THP_SEQ,
        out_dir=tmp / f"{build.variant}-{backend}", timeout_s=600,
        sysfs={**THP_ON, **(sysfs or {})})
    res = runner.run_cell(spec, cache_root())
    assert res.ok, f"{res.reason}: {res.detail} ({res.console_log})"
    wl = res.result["workload"]["result"]
    assert wl["total"]["mismatches"] == 0
    assert wl["groups"][0]["anon_huge_kb_first_pass"] > 0, "no THP at all"
    # The delta lists only the counters that moved.
    return collections.defaultdict(int, res.result["delta"]["vmstat"])


# variant -> (THP swap-out counters that must move / stay 0, readahead)
EXPECT = {
    "base": ("thp_swpout_split_early", "cluster"),
    "readahead": ("thp_swpout_split_early", "vma_rfc"),
    "thp-stage1": ("thp_swpout_split_swapcache", "cluster"),
    "thp-stage2": ("thp_swpout", "cluster"),
    "everything": ("thp_swpout", "vma_rfc"),
}
THP_PATHS = ("thp_swpout", "thp_swpout_split_early",
             "thp_swpout_split_swapcache")


@pytest.mark.parametrize("variant", list(EXPECT))
def test_variant_paths_on_nvme(variant: str, builds: dict[str, Build],
                               repo_matrix: Matrix, tmp_path: Path) -> None:
    vm = boot(repo_matrix, builds[variant], "nvme", tmp_path)
    thp_path, ra = EXPECT[variant]
    for path in THP_PATHS:
        moved = vm[path] > 0
        assert moved == (path == thp_path), f"{path}={vm[path]}: {dict(vm)}"
    assert vm[f"swap_ra_{ra}_pages"] > 0
    # vma-rfc kernels still count a few cluster reads: shmem always uses
    # cluster readahead, as in 6.1.
    if ra == "vma_rfc":
        assert vm["swap_ra_vma_rfc_max_order"] > 0, "window never at max"
    else:
        assert vm["swap_ra_vma_rfc"] == 0


def test_rotational_writes_no_whole_thp_and_rfc_still_runs(
        builds: dict[str, Build], repo_matrix: Matrix,
        tmp_path: Path) -> None:
    vm = boot(repo_matrix, builds["everything"], "rotational", tmp_path)
    assert vm["thp_swpout"] == 0
    assert vm["thp_swpout_fallback"] > 0, "no swap clusters on rotational"
    assert vm["swap_ra_vma_rfc_pages"] > 0


@pytest.mark.parametrize("bypass", ["1", "0"])
def test_pmem_sync_bypass_switch(bypass: str, builds: dict[str, Build],
                                 repo_matrix: Matrix,
                                 tmp_path: Path) -> None:
    vm = boot(repo_matrix, builds["readahead"], "dax-pmem", tmp_path,
              {"kernel/mm/swap/sync_io_bypass": bypass})
    if bypass == "1":
        assert vm["swap_sync_bypass"] > 0
        assert vm["swap_ra_vma_rfc_pages"] == 0
    else:
        assert vm["swap_sync_bypass"] == 0
        assert vm["swap_ra_vma_rfc_pages"] > 0


@pytest.mark.parametrize("mode", ["madvise", "never"])
def test_thp_swapin_brings_whole_thps_back(mode: str,
                                           builds: dict[str, Build],
                                           repo_matrix: Matrix,
                                           tmp_path: Path) -> None:
    """thp-swapin: a THP written whole comes back in one fault and one
    2 MiB read (pswpin counts its 512 pages); `never` is the 4 KiB path."""
    vm = boot(repo_matrix, builds["thp-swapin"], "nvme", tmp_path,
              {"kernel/mm/swap/thp_swapin": mode})
    assert vm["thp_swpout"] > 0
    if mode == "never":
        assert vm["thp_swpin"] == 0 and vm["thp_swpin_fallback"] == 0
        assert vm["pgmajfault"] > 0
    else:
        assert vm["thp_swpin"] > 0, dict(vm)
        # Most of what went out whole came back whole.
        assert vm["thp_swpin"] * 2 > vm["thp_swpout"], dict(vm)
        assert vm["pswpin"] >= 512 * vm["thp_swpin"]
