"""Metrics from stored cell results (fixtures in tests/data)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab.guest import frame
from lab.paths import REPO
from lab.results.metrics import HIGHER, LOWER, NEUTRAL, cell_metrics, gather
from lab.results.record import CellRecord
from lab.spec.model import Cell

DATA = Path(__file__).resolve().parent.parent / "data"
RUN = DATA / "results" / "fixture-run"


def result(name: str) -> dict:
    return json.loads((RUN / f"{name}.json").read_text())["result"]


def test_swapbench_metrics():
    res = result("readahead-nvme-seq-r1")
    m = cell_metrics(res)
    group = res["workload"]["result"]["groups"][0]
    tp = m["swapbench.main.bytes_per_s"]
    assert (tp.value, tp.unit, tp.better, tp.headline) == \
        (group["bytes_per_s"], "B/s", HIGHER, True)
    assert m["swapbench.main.wall_s"].better == LOWER
    assert m["swapbench.main.majflt"].value == group["majflt"]
    # 120444 major faults over 3 GiB touched: 2.25 GiB in the passes
    # and 196608 pages (0.75 GiB) read back after them
    per_gib = m["swapbench.main.majflt_per_gib"]
    assert per_gib.value == pytest.approx(40148.0)
    assert (per_gib.unit, per_gib.better) == ("faults/GiB", LOWER)
    p99 = m["swapbench.main.latency.p99_us"]
    assert (p99.value, p99.unit, p99.better) == \
        (group["latency"]["p99_us"], "us", LOWER)
    assert m["swapbench.main.latency.samples"].better == NEUTRAL
    # One group: `total` would only repeat it.
    assert not any(k.startswith("swapbench.total.") for k in m)


def test_combined_mode_keeps_total():
    res = copy.deepcopy(result("base-nvme-seq-r1"))
    doc = res["workload"]["result"]
    fg = doc["groups"][0]
    doc["groups"] = [dict(fg, name="fg"), dict(fg, name="bg",
                                               pattern="random")]
    m = cell_metrics(res)
    assert {"swapbench.fg.bytes_per_s", "swapbench.bg.bytes_per_s",
            "swapbench.total.bytes_per_s"} <= set(m)


def test_vmstat_deltas_and_ratio():
    res = result("readahead-nvme-seq-r2")
    before, after = res["before"]["vmstat"], res["after"]["vmstat"]
    m = cell_metrics(res)
    for name in ("pswpin", "pswpout", "swap_ra", "swap_ra_hit",
                 "pgmajfault", "thp_swpout", "thp_swpout_fallback",
                 "thp_split_page"):
        assert m[f"vmstat.{name}"].value == after[name] - before[name]
    assert "vmstat.nr_free_pages" not in m          # a level, not counted
    ratio = m["vmstat.swap_ra_hit_ratio"]
    assert ratio.value == pytest.approx(
        100 * m["vmstat.swap_ra_hit"].value / m["vmstat.swap_ra"].value)
    assert ratio.better == HIGHER
    assert m["vmstat.pgmajfault"].better == LOWER
    # 121559 major faults, 510077 pages (1.946 GiB) swapped in
    per_gib = m["vmstat.pgmajfault_per_gib_in"]
    assert per_gib.value == pytest.approx(62472.85, abs=0.01)
    assert per_gib.better == LOWER
    reads = res["delta"]["diskstats"]["reads"]
    assert m["diskstats.reads_per_gib_in"].value == pytest.approx(
        reads / (510077 * 4096 / (1 << 30)))


def test_prefixed_counters_are_kept():
    res = copy.deepcopy(result("base-nvme-seq-r1"))
    res["before"]["vmstat"]["swap_ra_future"] = 5
    res["after"]["vmstat"]["swap_ra_future"] = 9
    res["after"]["vmstat"]["thp_swpout_new"] = 3
    m = cell_metrics(res)
    assert m["vmstat.swap_ra_future"].value == 4
    assert m["vmstat.thp_swpout_new"].value == 3


def test_thp_swapin_counters_from_a_real_faults_cell():
    # thp-swapin met fork-shared entries here: it fell back, and why
    doc = json.loads((DATA / "results" / "faults-real" /
                      "thp-swapin-nvme-faulty-faults-thp-r1.json").read_text())
    m = cell_metrics(doc["result"])
    assert m["vmstat.thp_swpin_fallback"].value == 207128
    assert m["vmstat.thp_swpin_fallback"].info.better == LOWER
    assert m["vmstat.thp_swpin_fallback_entries"].value == 207065
    assert m["vmstat.thp_swpin_fallback_alloc"].value == 63


def test_diskstats_and_meminfo():
    res = result("thp-stage2-nvme-thp-swpout-r1")
    d = res["delta"]["diskstats"]
    m = cell_metrics(res)
    assert m["diskstats.writes"].value == d["writes"]
    assert m["diskstats.kib_per_write"].value == pytest.approx(
        d["sectors_written"] / 2 / d["writes"])
    assert m["diskstats.ms_per_write"].value == pytest.approx(
        d["write_ms"] / d["writes"])
    assert "rusage.stime_us_per_page_out" not in m     # no rusage kept
    assert m["meminfo.SwapCached"].value == \
        res["after"]["meminfo_kb"]["SwapCached"]
    assert m["swapbench.fill.bytes_per_s"].headline


def test_trace_from_a_real_guest_frame():
    payload = frame.parse((DATA / "guest-nvme.frame").read_bytes())
    res = copy.deepcopy(result("base-nvme-seq-r1"))
    res["trace"] = payload["trace"]
    m = cell_metrics(res)
    t = payload["trace"]
    assert m["trace.do_swap_page.count"].value == t["count"]
    assert m["trace.do_swap_page.avg_us"].value == pytest.approx(
        t["sum_ns"] / t["count"] / 1000)
    assert m["trace.do_swap_page.p99_us"].value == \
        t["percentiles_ns"]["p99"] / 1000


def test_other_workloads_and_failures():
    res = copy.deepcopy(result("base-nvme-seq-r1"))
    res["workload"]["result"] = {"schema": "swaplab-memtest/1"}
    m = cell_metrics(res)
    assert m and not any(k.startswith("swapbench.") for k in m)
    assert cell_metrics(result("readahead-rotational-seq-r3")) == {}


def record_of(path: Path, doc: dict) -> CellRecord:
    c = doc["cell"]
    return CellRecord(path, Cell(c["repeat"], c["variant"], c["backend"],
                                 c["workload"]),
                      doc["inputs_hash"], doc["provenance"], doc["result"])


def test_gather_groups_by_key_and_lists_failures():
    records = []
    for path in sorted(RUN.glob("*-seq-r*.json")):
        doc = json.loads(path.read_text())
        records.append(record_of(path, doc))
    s = gather(records)
    assert s.failed == {"readahead-rotational-seq-r3": "hang"}
    key = ("seq", "rotational", "swapbench.main.bytes_per_s", "readahead")
    assert len(s.values[key]) == 2
    assert len(s.values[("seq", "nvme", "swapbench.main.bytes_per_s",
                         "base")]) == 3
    first = json.loads((RUN / "base-nvme-seq-r1.json").read_text())
    assert s.values[("seq", "nvme", "swapbench.main.bytes_per_s",
                     "base")][0] == \
        first["result"]["workload"]["result"]["groups"][0]["bytes_per_s"]
    assert s.info["swapbench.main.bytes_per_s"].better == HIGHER


def test_cells_measured_on_a_busy_host_are_set_aside():
    """A cell whose host_load says other work took 35 % of the host's
    CPU is listed with the failed ones, not measured; 2 % is measured;
    a result from before the load was recorded is measured."""
    records = []
    for rep, share in ((1, 0.35), (2, 0.02), (3, None)):
        path = RUN / f"base-nvme-seq-r{rep}.json"
        doc = json.loads(path.read_text())
        if share is not None:
            doc["result"].setdefault("timing", {})["host_load"] = {
                "window_s": 30.0, "cpus": 2, "busy_cpu_s": 60.0,
                "own_cpu_s": 60.0 - 60.0 * share,
                "foreign_cpu_s": 60.0 * share, "foreign_share": share}
        records.append(record_of(path, doc))
    s = gather(records)
    assert s.failed == {"base-nvme-seq-r1": "host-busy: other work took "
                        "35% of the host's CPU (over 10%)"}
    assert len(s.values[("seq", "nvme", "swapbench.main.bytes_per_s",
                         "base")]) == 2


def test_later_pass_time_leaves_out_the_first_pass():
    quick = DATA / "results" / "quick-real"
    res = json.loads((quick / "base-nvme-seq-r1.json").read_text())["result"]
    # two tasks of two passes: (8.190948 - 1.631825) and
    # (8.408966 - 1.652439) seconds for their second passes
    later = cell_metrics(res)["swapbench.main.later_pass_s"]
    assert later.value == pytest.approx(6.657825)
    assert (later.unit, later.better, later.headline) == ("s", LOWER, True)
    # a task that made one pass only has no later pass
    res["workload"]["result"]["tasks"][1]["passes"] = 1
    assert "swapbench.main.later_pass_s" not in cell_metrics(res)


def test_no_later_pass_time_under_a_runtime_limit():
    # --runtime may cut the last pass short: its time is not a pass's
    faults = DATA / "results" / "faults-real"
    res = json.loads((faults / "base-nvme-faulty-faults-thp-r1.json")
                     .read_text())["result"]
    assert res["workload"]["result"]["config"]["runtime_s"] == 120.0
    assert "swapbench.main.later_pass_s" not in cell_metrics(res)


def test_mthp_statistics_of_enabled_sizes_from_a_real_6_12_cell() -> None:
    # Stock 6.12 filling on NVMe (seeds study, piece 1): THPs of 2 MiB
    # only ("inherit" from madvise), 222 of them written out whole.
    path = (REPO / "reports" / "20261206-061104-seeds" / "raw" /
            "upstream-6.12-nvme-thp-swpout-rate-r1.json")
    got = cell_metrics(json.loads(path.read_text())["result"])
    mthp = {k: m.value for k, m in got.items() if k.startswith("mthp.")}
    assert {k.split(".")[1] for k in mthp} == {"2048kB"}
    assert mthp["mthp.2048kB.swpout"] == 222
    assert mthp["mthp.2048kB.anon_fault_alloc"] == 224
    assert mthp["mthp.2048kB.swpout_fallback"] == 0
    assert len(mthp) == 13
    # 6.1 has no per-size statistics: no mthp metrics at all.
    base = path.with_name("base-nvme-thp-swpout-rate-r1.json")
    assert not any(k.startswith("mthp.") for k in cell_metrics(
        json.loads(base.read_text())["result"]))


def test_kernel_cpu_per_page_swapped_out_from_a_real_seeds_cell():
    # Stage 2 against base on NVMe in the seeds study's second run: the
    # fill's system time per page written to swap.
    raw = REPO / "reports" / "20261206-114034-seeds" / "raw"
    per_page = {}
    for variant in ("base", "thp-stage2"):
        res = json.loads((raw / f"{variant}-nvme-thp-swpout-rate-r1.json")
                         .read_text())["result"]
        m = cell_metrics(res)
        stime = res["workload"]["rusage"]["stime_s"]
        assert m["rusage.stime_us_per_page_out"].value == pytest.approx(
            stime * 1e6 / m["vmstat.pswpout"].value)
        assert m["rusage.stime_us_per_page_out"].better == LOWER
        per_page[variant] = m["rusage.stime_us_per_page_out"].value
        assert m["rusage.kernel_cpus"].value == pytest.approx(
            stime / res["workload"]["wall_s"])
    assert per_page["thp-stage2"] < per_page["base"] / 2


def test_zram_compressibility_at_its_fullest():
    res = copy.deepcopy(result("thp-stage2-nvme-thp-swpout-r1"))
    res["workload"]["zram_peak"] = {
        "samples": 12, "orig_data_size": 300 << 20,
        "compr_data_size": 100 << 20, "mem_used_total": 110 << 20,
        "same_pages": 25600, "huge_pages": 0, "mem_used_max": 120 << 20}
    m = cell_metrics(res)
    assert m["zram.compression_ratio"].value == pytest.approx(3.0)
    # 100 MiB of same-filled pages beside 300 MiB stored: a quarter.
    assert m["zram.same_filled_pct"].value == pytest.approx(25.0)
    assert m["zram.mem_used_max_mib"].value == pytest.approx(120.0)
    del res["workload"]["zram_peak"]
    assert not any(k.startswith("zram.") for k in cell_metrics(res))
