"""Proof that every patched variant takes the path it claims (issues 4, 10).

Each variant boots with one THP workload (MADV_HUGEPAGE area larger than
the guest, written then re-read sequentially) and the new vmstat counters
must show its THP swap-out stage and its readahead algorithm. Builds come
from the lab's own cache (built there if missing), as `make run` would.

The five series of issue 10 (ra-by-device, thp-swapin, thp-keep-whole,
thp-swapin-ra, thp-ra-4k) are proven on `beyond`, the kernel that stacks
them all, each mechanism isolated by its own knobs (the others off or at
the setting its variant has). Each of those series adds vmstat counters, so
each distinct stack recompiles most of the tree: building their own
variants here cost three such rebuilds (476 to 493 s each, 29 min of the
cold CI run of d21978e) where `beyond` costs one. Their own variants'
stacks are applied by test_build.py, and every matrix run checks each
variant's counters against matrix.yaml's `expect` rules.
"""
from __future__ import annotations

import collections
import dataclasses
from pathlib import Path

import pytest

from lab.cache import cache_root
from lab.calibrate import dilation
from lab.guest import cellspec
from lab.guest import runner
from lab.kernel.build import Build
from lab.session import cellrun
from lab.spec.model import Matrix
from tests.integration.conftest import (GUEST, NO_THP_RA, NO_THP_SWAPIN,
                                        THP_SEQ, boot, boot_result)

pytestmark = pytest.mark.slow

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
    assert vm[thp_path] > 0, dict(vm)
    if thp_path != "thp_swpout":
        assert vm["thp_swpout"] == 0, dict(vm)
    # Every stage splits, before giving it swap space, a THP that has lost
    # its PMD mapping (6.1's rule for a folio without an entire mapcount),
    # and a THP can lose it on the way: khugepaged collapses and a page
    # unmapped from a THP left one PTE-mapped THP split early among 216
    # written whole on `everything` (thp_deferred_split_page 1). The stage
    # under test is the path nearly every THP takes.
    for path in THP_PATHS:
        if path != thp_path:
            assert vm[path] * 20 <= vm[thp_path], f"{path}: {dict(vm)}"
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


@pytest.mark.parametrize("bypass", ["1", "0", "default"])
def test_pmem_sync_bypass_switch(bypass: str, builds: dict[str, Build],
                                 repo_matrix: Matrix,
                                 tmp_path: Path) -> None:
    """6.1's synchronous-device bypass on pmem only when asked: by
    default the patched kernels swap in as 2017's did (issue 24, item
    3), through the swap cache and their readahead."""
    knob = {} if bypass == "default" else \
        {"kernel/mm/swap/sync_io_bypass": bypass}
    vm = boot(repo_matrix, builds["readahead"], "dax-pmem", tmp_path, knob)
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
    2 MiB read (pswpin counts its 512 pages); `never` is the 4 KiB path.
    No THP readahead, as on the thp-swapin variant."""
    vm = boot(repo_matrix, builds["beyond"], "nvme", tmp_path,
              {"kernel/mm/swap/thp_swapin": mode, **NO_THP_RA})
    assert vm["thp_swpout"] > 0
    if mode == "never":
        assert vm["thp_swpin"] == 0 and vm["thp_swpin_fallback"] == 0
        assert vm["pgmajfault"] > 0
    else:
        assert vm["thp_swpin"] > 0, dict(vm)
        # Most of what went out whole came back whole: read by its fault,
        # or still in the swap cache from its swap-out and mapped whole
        # from there (thp-swapin-ra's first patch, in this kernel).
        whole = vm["thp_swpin"] + vm["thp_swpin_cached"]
        assert whole * 2 > vm["thp_swpout"], dict(vm)
        assert vm["pswpin"] >= 512 * vm["thp_swpin"]



@pytest.mark.parametrize("keep", ["split", "whole"])
def test_thp_keep_whole_sends_swapped_in_thps_out_whole(
        keep: str, builds: dict[str, Build], repo_matrix: Matrix,
        tmp_path: Path) -> None:
    """thp-keep-whole: a THP that came back whole (PTE-mapped) goes out
    whole again instead of being split first; `split` is 6.1's way."""
    # A THP swapped in whole keeps its swap slots in the swap cache, and
    # goes out again without the split decision, until swap is half full
    # (vm_swap_full()) and the fault frees them. With 512 MiB of swap one
    # CI boot never got there (split_early 0 under `split`); with 384 MiB
    # six boots split 40 to 90 THPs early and three kept all whole; with
    # 256 MiB the workload met the OOM killer.
    vm = boot(repo_matrix, builds["beyond"], "nvme", tmp_path,
              {"kernel/mm/swap/thp_swpout_pte_mapped": keep, **NO_THP_RA},
              dataclasses.replace(GUEST, swap_mib=384))
    assert vm["thp_swpin"] > 0, dict(vm)
    if keep == "split":
        assert vm["thp_swpout_split_early"] > 0, dict(vm)
    else:
        assert vm["thp_swpout_split_early"] == 0, dict(vm)


@pytest.mark.parametrize("ranges", ["2", "0"])
def test_thp_readahead_maps_read_ahead_thps_whole(
        ranges: str, builds: dict[str, Build], repo_matrix: Matrix,
        tmp_path: Path) -> None:
    """thp-swapin-ra: a sequential re-read reads the next THPs ahead and
    maps each whole from the swap cache, so most THPs come back without
    a fault of their own reading them; at 0 nothing is read ahead."""
    vm = boot(repo_matrix, builds["beyond"], "nvme", tmp_path,
              {"kernel/mm/swap/thp_swapin_readahead": ranges})
    assert vm["thp_swpin"] > 0, dict(vm)
    if ranges == "0":
        assert vm["thp_swpin_ra"] == 0, dict(vm)
    else:
        assert vm["thp_swpin_ra"] > 0, dict(vm)
        # Read ahead, then mapped whole by a minor fault: more THPs than
        # the faults that read their own range.
        assert vm["thp_swpin_cached"] > vm["thp_swpin"], dict(vm)
        # Each THP mapped from the cache came from somewhere: read ahead,
        # swapped out whole and not freed yet, or left by a raced read.
        assert vm["thp_swpin_cached"] <= vm["thp_swpin_ra"] + \
            vm["thp_swpout"] + vm["thp_swpin_fallback_race"], dict(vm)


def test_page_cluster_0_turns_every_readahead_off(
        builds: dict[str, Build], repo_matrix: Matrix,
        tmp_path: Path) -> None:
    """vm.page-cluster 0 means no swap-in readahead, in every mode of
    ra-by-device and for THP readahead (issue 24, item 5: the 2017
    regression that removed vma_ra_max_order). Before the fix, the same
    boots read 47 pages ahead at random and 132,575 sequentially
    (docs/patches.md). The faults still read THPs whole."""
    result = boot_result(repo_matrix, builds["beyond"], "nvme", tmp_path,
                         sysctl={"vm.page-cluster": "0"})
    vm = collections.defaultdict(int, result["delta"]["vmstat"])
    [knob] = [s for s in result["settings"] if s["kind"] == "sysctl"]
    assert (knob["name"], knob["ok"], knob["readback"]) == \
        ("vm.page-cluster", True, "0"), knob
    assert vm["thp_swpin"] > 0, dict(vm)
    read_ahead = {k: v for k, v in vm.items()
                  if (k.startswith("swap_ra_") and k.endswith("_pages"))
                  or k in ("swap_ra", "thp_swpin_ra", "thp_swpin_ra_pages")}
    assert not any(read_ahead.values()), read_ahead
    assert vm["swap_ra_none"] > 0 or vm["pswpin"] == 512 * vm["thp_swpin"], \
        dict(vm)


# 8 ranges, each read back 3 times (workloads/swapalign.c)
ALIGN = ["swapalign", "--ranges", "8", "--rounds", "2"]
ALIGN_READS = 8 * 3


def test_thp_swapin_never_reads_a_swap_file_range_whole(
        builds: dict[str, Build], repo_matrix: Matrix,
        tmp_path: Path) -> None:
    """Issue 24, item 1. swapalign swaps 2 MiB ranges out so that each
    range's slots are one swap cluster in order. On the NVMe drive
    `beyond` brings them back whole (the control: the case is made), on
    a fragmented swap file never, and the file system around the swap
    file keeps its data. The series before the fix (b1d5bf0^, booted by
    hand as thp-swapin) read all 24 whole from the swap file: 11,592
    pages read back wrong in one boot, and with reclaim writing the THPs
    whole, 44 of 4,397 filler files overwritten, 64 unreadable and
    EXT4-fs errors (docs/patches.md)."""
    def whole(vm: dict[str, int]) -> int:
        return vm.get("thp_swpin", 0) + vm.get("thp_swpin_cached", 0)

    disk = boot_result(repo_matrix, builds["beyond"], "nvme",
                       tmp_path / "disk", argv=ALIGN)
    # measured: 24 (3 by their fault, 21 read ahead)
    assert whole(disk["delta"]["vmstat"]) * 3 >= ALIGN_READS * 2, \
        disk["delta"]["vmstat"]
    on_file = boot_result(repo_matrix, builds["beyond"], "nvme-swapfile",
                          tmp_path / "file", argv=ALIGN)
    vm = on_file["delta"]["vmstat"]
    assert whole(vm) == 0 and vm.get("pswpin", 0) >= 512 * ALIGN_READS, vm
    check = on_file["swap_file_check"]
    assert check["files"] > 1000 and check["bad"] == check["unreadable"] \
        == 0, check
    assert cellrun.sanity(on_file) == []
    assert on_file["device"]["swap_file"]["fragmented"] is True


def test_a_write_fault_frees_the_slots_of_a_thp_brought_in_whole(
        builds: dict[str, Build], repo_matrix: Matrix,
        tmp_path: Path) -> None:
    """Issue 24, item 4: a write fault by the only user that brings a
    range in whole frees its 512 swap slots, as do_swap_page() frees a
    page's. swapalign's last step rewrites the paged-out ranges as their
    first touch. Measured (thp-swapin, 8 ranges): swap in use 17,408 kB
    before and after that step without the fix (should_try_to_free_swap()
    compared the THP's refcount with 2), 17,664 then 1,280 kB with it;
    `beyond`, whose THP readahead maps most ranges from the swap cache,
    17,152 then 768 kB."""
    result = boot_result(repo_matrix, builds["beyond"], "nvme", tmp_path,
                         argv=["swapalign", "--ranges", "8", "--rounds",
                               "1"])
    vm = result["delta"]["vmstat"]
    assert vm.get("thp_swpin", 0) + vm.get("thp_swpin_cached", 0) >= 12, vm
    steps = result["workload"]["result"]["steps"]
    [write] = [i for i, s in enumerate(steps) if s["step"] == "write"]
    before, after = steps[write - 1], steps[write]
    assert before["step"] == "pageout" and before["swap_kb"] == 16384
    freed_kb = before["swap_used_kb"] - after["swap_used_kb"]
    assert freed_kb >= 12 * 1024, (before, after)


# THP_SEQ with every fourth 2 MiB range in 4 KiB pages from first touch:
# 155 ranges in the area (1.3 x MemTotal), 38 of them such holes.
HOLES = 4
THP_SEQ_HOLES = [*THP_SEQ, "--thp-holes", str(HOLES)]


@pytest.mark.parametrize("ranges", ["2", "0"])
def test_thp_readahead_reads_ranges_it_cannot_read_whole_in_pages(
        ranges: str, builds: dict[str, Build], repo_matrix: Matrix,
        tmp_path: Path) -> None:
    """thp-ra-4k: THP readahead reads a range of 4 KiB swap entries ahead
    in 4 KiB pages, so that the re-read faults a few times on it; with THP
    readahead off, 4 KiB readahead's window of 8 pages makes up to 64
    major faults per such range."""
    result = boot_result(repo_matrix, builds["beyond"], "nvme", tmp_path,
                         {"kernel/mm/swap/thp_swapin_readahead": ranges},
                         argv=THP_SEQ_HOLES)
    vm = collections.defaultdict(int, result["delta"]["vmstat"])
    task = result["workload"]["result"]["tasks"][0]
    holes = task["size_bytes"] // (2 << 20) // HOLES
    assert result["workload"]["result"]["config"]["thp_holes"] == HOLES
    assert vm["thp_swpin"] + vm["thp_swpin_cached"] > 0, dict(vm)
    # The task's own major faults, its re-read pass included (the final
    # sweep and other processes are not in it). Measured on this kernel:
    # at 2 ranges 79 faults and 41,780 pages read ahead this way; at 0
    # ranges 2,748 faults.
    if ranges == "0":
        assert vm["thp_swpin_ra_pages"] == 0, dict(vm)
        assert task["majflt"] > 16 * holes, (task["majflt"], dict(vm))
    else:
        assert vm["thp_swpin_ra_pages"] > 128 * holes, dict(vm)
        assert task["majflt"] < 8 * holes, (task["majflt"], dict(vm))


# backend -> (its class's counter, the algorithm that class uses by default)
RA_CLASS = {"rotational": ("swap_ra_rotational", "cluster"),
            "nvme": ("swap_ra_ssd", "vma61")}


@pytest.mark.parametrize("backend", list(RA_CLASS))
def test_ra_by_device_picks_the_class_policy(backend: str,
                                             builds: dict[str, Build],
                                             repo_matrix: Matrix,
                                             tmp_path: Path) -> None:
    """ra-by-device: the rotational disk reads ahead by cluster and the
    SSD by 6.1's VMA window, each counted under its own class."""
    vm = boot(repo_matrix, builds["beyond"], backend, tmp_path,
              NO_THP_SWAPIN)
    counter, algorithm = RA_CLASS[backend]
    assert vm[counter] > 0, dict(vm)
    others = {c for c, _ in RA_CLASS.values()} - {counter}
    assert all(vm[c] == 0 for c in others | {"swap_ra_sync"}), dict(vm)
    assert vm[f"swap_ra_{algorithm}_pages"] > 0, dict(vm)
    unused = {"cluster", "vma61", "vma_rfc"} - {algorithm}
    # shmem (the workload's result area) always reads by cluster, as in 6.1
    unused.discard("cluster")
    assert all(vm[f"swap_ra_{a}"] == 0 for a in unused), dict(vm)


def test_ra_by_device_sync_class_and_global_mode(builds: dict[str, Build],
                                                repo_matrix: Matrix,
                                                tmp_path: Path) -> None:
    """pmem with the bypass off: its class (sync) decides, no readahead;
    a global mode instead (readahead_mode cluster, as variant ra-cluster
    sets it; issue 24, item 5 removed the per-class files) reads ahead
    from it too, with vm.page-cluster's window, and no class decides."""
    bypass_off = {"kernel/mm/swap/sync_io_bypass": "0", **NO_THP_SWAPIN}
    vm = boot(repo_matrix, builds["beyond"], "dax-pmem", tmp_path,
              bypass_off)
    assert vm["swap_ra_sync"] > 0 and vm["swap_ra_none"] > 0, dict(vm)
    assert vm["swap_ra_vma61"] == vm["swap_ra_vma_rfc"] == 0, dict(vm)
    vm = boot(repo_matrix, builds["beyond"], "dax-pmem",
              tmp_path / "global",
              {**bypass_off, "kernel/mm/swap/readahead_mode": "cluster"})
    assert vm["swap_ra_none"] == vm["swap_ra_sync"] == 0, dict(vm)
    assert vm["swap_ra_cluster_pages"] > vm["swap_ra_cluster"], dict(vm)


def knob_cell(matrix: Matrix, build: Build, tmp: Path,
              sysfs: dict[str, str]) -> cellspec.CellResult:
    """A short boot on NVMe with `sysfs` set by the agent."""
    spec = cellspec.CellSpec(
        cell_id=f"proof-{build.variant}-knobs", build=build,
        backend=matrix.backends["nvme"], guest=GUEST,
        argv=["swapbench", "--size", "4M", "--passes", "1", "-q"],
        out_dir=tmp, timeout_s=300, sysfs=sysfs)
    return runner.run_cell(dilation.prepared(spec, cache_root()),
                           cache_root())


# The knobs the series of issue 10 add, each with a value its write must
# refuse: not a readahead mode, THP readahead beyond 8 ranges.
BAD_KNOBS = {
    "kernel/mm/swap/readahead_mode": "foo",
    "kernel/mm/swap/thp_swapin_readahead": "9",
}
# Those with named choices as they read back once set (the one set in
# brackets; readahead_mode then the algorithm each device class runs,
# test_safety.py), and a number as written.
SHOWN_KNOBS = {
    "kernel/mm/swap/readahead_mode":
    "cluster vma-rfc vma-6.1 none [by-device]\n"
    "rotational: cluster\nssd: vma-6.1\nsync: none",
    "kernel/mm/swap/thp_swapin": "never madvise [always]",
    "kernel/mm/swap/thp_swpout_pte_mapped": "[split] whole",
    "kernel/mm/swap/thp_swapin_readahead": "3",
}


def test_knobs_reject_bad_values(builds: dict[str, Build],
                                 repo_matrix: Matrix,
                                 tmp_path: Path) -> None:
    """Each bad write fails with EINVAL, which the agent reports."""
    res = knob_cell(repo_matrix, builds["beyond"], tmp_path, BAD_KNOBS)
    assert res.reason == "agent-error", res.detail
    for path, value in BAD_KNOBS.items():
        assert f"/sys/{path} <- {value}: Invalid argument" in res.detail


# The per-class files an earlier ra-by-device added (issue 24, item 5:
# ABI a maintainer would refuse; the class policies are fixed now).
GONE = [f"/sys/kernel/mm/swap/ra_by_device/{cls}_{knob}"
        for cls in ("rotational", "ssd", "sync")
        for knob in ("algorithm", "max_order")]


def test_ra_by_device_has_no_class_files(builds: dict[str, Build],
                                         repo_matrix: Matrix,
                                         tmp_path: Path) -> None:
    """None of the six ra_by_device/ files exists, nor their directory;
    readahead_mode and vma_ra_max_order still do."""
    build = builds["beyond"]
    paths = [*GONE, "/sys/kernel/mm/swap/ra_by_device",
             "/sys/kernel/mm/swap/readahead_mode",
             "/sys/kernel/mm/swap/vma_ra_max_order"]
    script = "; ".join(f"if [ -e {p} ]; then echo {p} yes; "
                       f"else echo {p} no; fi" for p in paths)
    spec = cellspec.CellSpec(
        cell_id=f"proof-{build.variant}-no-class-files", build=build,
        backend=repo_matrix.backends["nvme"], guest=GUEST,
        argv=["sh", "-c", script], out_dir=tmp_path, timeout_s=120,
        output="none")
    res = runner.run_cell(dilation.prepared(spec, cache_root()),
                          cache_root())
    assert res.ok, f"{res.reason}: {res.detail} ({res.console_log})"
    text = res.result["workload"]["stdout_text"]
    seen = dict(line.split() for line in text.splitlines()
                if len(line.split()) == 2)
    assert seen == {**{p: "no" for p in paths[:-2]},
                    paths[-2]: "yes", paths[-1]: "yes"}, text


def test_knobs_read_back_their_choices(builds: dict[str, Build],
                                      repo_matrix: Matrix,
                                      tmp_path: Path) -> None:
    """Every swap knob with named choices lists them all, the one in
    effect in brackets, after the agent set it (its readback); a number
    reads back as written."""
    wanted = {path: text[text.index("[") + 1:text.index("]")]
              if "[" in text else text for path, text in SHOWN_KNOBS.items()}
    res = knob_cell(repo_matrix, builds["beyond"], tmp_path, wanted)
    assert res.ok, f"{res.reason}: {res.detail} ({res.console_log})"
    readback = {s["name"]: s["readback"] for s in res.result["settings"]}
    for path, text in SHOWN_KNOBS.items():
        assert readback[path] == text, readback
