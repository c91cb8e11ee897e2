"""One stored cell result -> a flat dict of named metrics.

Names are dotted, lkp style: `swapbench.main.bytes_per_s`,
`swapbench.fg.latency.p99_us`, `vmstat.pswpin`, `diskstats.kib_per_write`.
Each metric carries its unit and which way is better, so tables can say
"better"/"worse" without knowing the metric. Only `observed` knows where
the runner puts things in its result; everything else reads `Observed`.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from lab.results import record
from lab.results.metricinfo import (GIB, HIGHER, LOWER, NEUTRAL, PAGE, Key,
                                    MetricInfo)
from lab.results.record import CellRecord

# Aggregate fields of a swapbench group (or `total`): unit, better, headline
# (pages_per_s is left out: it is bytes_per_s over the page size).
# Headline metrics are the ones every table shows; the rest appear when a
# change is significant or when all metrics are asked for.
GROUP_FIELDS: dict[str, tuple[str, str, bool]] = {
    "bytes_per_s": ("B/s", HIGHER, True),
    "wall_s": ("s", LOWER, False),
    "majflt": ("faults", LOWER, False),
    "minflt": ("faults", NEUTRAL, False),
    "mismatches": ("pages", LOWER, False),
}
# swapbench's schemas read here: /2 and /3 only added keys
# (workloads/README.md), but /2's data check writes 8 stamp words per page
# where /1 wrote 2, so CPU-bound figures of the two are not compared (runs
# differ in inputs)
SWAPBENCH = ("swapbench/1", "swapbench/2", "swapbench/3", "swapbench/4")
# swaprace (workloads/README.md): the race of swap-in against page-table
# changes. Its figures say how much was raced and checked, not how fast:
# counts of the `total` object, and of each mutator operation in
# `total.ops`; a mismatch has already failed the cell (integrity-error).
SWAPRACE = ("swaprace/1",)
RACE_FIELDS: dict[str, tuple[str, str, bool]] = {
    "verified_pages": ("pages", NEUTRAL, True),
    "fork_verified_pages": ("pages", NEUTRAL, False),
    "written_pages": ("pages", NEUTRAL, False),
    "busy_skips": ("pages", NEUTRAL, False),
    "mismatches": ("pages", LOWER, True),
    "fork_mismatches": ("pages", LOWER, False),
    "errors": ("errors", LOWER, False),
    "majflt": ("faults", NEUTRAL, False),
    "race_s": ("s", NEUTRAL, False),
}
LATENCY_FIELDS = ("avg_us", "min_us", "max_us", "p50_us", "p60_us",
                  "p70_us", "p80_us", "p90_us", "p95_us", "p99_us",
                  "p999_us")
LATENCY_HEADLINE = ("avg_us", "p99_us")

# vmstat counters whose before/after delta is kept, and which way is
# better for the swap patches under study (fewer major faults means
# readahead worked; fewer fallbacks/splits means THPs swapped out whole).
VMSTAT: dict[str, str] = {
    "pswpin": NEUTRAL, "pswpout": NEUTRAL, "swap_ra": NEUTRAL,
    "swap_ra_hit": NEUTRAL, "pgmajfault": LOWER, "thp_swpout": NEUTRAL,
    "thp_swpout_fallback": LOWER, "thp_split_page": LOWER,
    "swap_sync_bypass": NEUTRAL, "thp_swpin": NEUTRAL,
    "thp_swpin_fallback": LOWER, "thp_swpin_cached": NEUTRAL,
    "thp_swpin_ra": NEUTRAL, "thp_swpin_ra_pages": NEUTRAL,
    "thp_swpin_retry": NEUTRAL,
}
# (thp_swpin_fallback_* are the reasons of the thp-swapin series)
VMSTAT_PREFIXES = ("swap_ra_", "thp_swpout_", "thp_swpin_fallback_")
MEMINFO_AFTER = ("SwapCached", "AnonHugePages")


@dataclass(frozen=True)
class Metric:
    value: float
    unit: str
    better: str
    headline: bool = False

    @property
    def info(self) -> MetricInfo:
        return MetricInfo(self.unit, self.better, self.headline)


@dataclass(frozen=True)
class Observed:
    """What a cell measured, independent of the result file's layout."""
    workload: dict[str, Any] | None          # swapbench or swaprace document
    vmstat_before: dict[str, int]
    vmstat_after: dict[str, int]
    meminfo_after: dict[str, int]            # kB
    diskstats_delta: dict[str, int]          # swap device, runner's names
    trace: dict[str, Any] | None             # do_swap_page durations
    # a text-output workload's figures (lab.guest.textout), by metric
    parsed: dict[str, Any] = dataclasses.field(default_factory=dict)
    # /sys/kernel/mm files the agent read before and after (path: text)
    sysfs_before: dict[str, str] = dataclasses.field(default_factory=dict)
    sysfs_after: dict[str, str] = dataclasses.field(default_factory=dict)
    # the workload processes' getrusage (children): CPU seconds, faults
    rusage: dict[str, float] = dataclasses.field(default_factory=dict)
    wall_s: float | None = None     # the workload process, start to exit
    # zram's mm_stat when it held the most (the agent samples it)
    zram_peak: dict[str, int] = dataclasses.field(default_factory=dict)


def observed(result: Mapping[str, Any]) -> Observed:
    """The adapter from the runner's result (swaplab-cell/1) to Observed:
    the only place that knows the runner's field names."""
    run = result.get("workload") or {}
    wl = run.get("result")
    if not isinstance(wl, dict) or \
            wl.get("schema") not in SWAPBENCH + SWAPRACE:
        wl = None
    before = result.get("before") or {}
    after = result.get("after") or {}
    return Observed(
        workload=wl,
        vmstat_before=before.get("vmstat") or {},
        vmstat_after=after.get("vmstat") or {},
        meminfo_after=after.get("meminfo_kb") or {},
        diskstats_delta=(result.get("delta") or {}).get("diskstats") or {},
        trace=result.get("trace"),
        parsed=run.get("parsed") or {},
        sysfs_before=before.get("sysfs") or {},
        sysfs_after=after.get("sysfs") or {},
        rusage=run.get("rusage") or {},
        wall_s=run.get("wall_s"),
        zram_peak=run.get("zram_peak") or {})


def cell_metrics(result: Mapping[str, Any]) -> dict[str, Metric]:
    """All metrics of one cell result (empty for a failed cell)."""
    if result.get("outcome") != "ok":
        return {}
    obs = observed(result)
    out: dict[str, Metric] = {}
    if obs.workload is not None:
        if obs.workload.get("schema") in SWAPRACE:
            out.update(_swaprace(obs.workload))
        else:
            out.update(_swapbench(obs.workload))
    out.update(_parsed(obs.parsed))
    out.update(_mthp(obs.sysfs_before, obs.sysfs_after))
    out.update(_vmstat(obs.vmstat_before, obs.vmstat_after))
    for name in MEMINFO_AFTER:
        if name in obs.meminfo_after:
            out[f"meminfo.{name}"] = Metric(obs.meminfo_after[name], "KiB",
                                            NEUTRAL)
    out.update(_diskstats(obs.diskstats_delta))
    out.update(_per_page(obs, out))
    out.update(_zram(obs.zram_peak))
    if obs.trace and obs.trace.get("count"):
        out.update(_trace(obs.trace))
    return out


def _parsed(figures: Mapping[str, Any]) -> dict[str, Metric]:
    """A program's figures read by its workload's parse rules: headline
    metrics, as the program's own output is what it was run for."""
    return {name: Metric(float(f["value"]), str(f["unit"]),
                         str(f["better"]), True)
            for name, f in figures.items()
            if isinstance(f, dict) and isinstance(f.get("value"),
                                                  (int, float))}


def _swapbench(doc: Mapping[str, Any]) -> dict[str, Metric]:
    # Fill mode's one group is named "fill" and its bytes_per_s is the
    # `fill` object's write_bytes_per_s, so that object adds nothing.
    groups = [(g["name"], g) for g in doc.get("groups") or []]
    # With one group, `total` repeats it: keep total only when it adds up
    # several groups (combined mode), so tables have no duplicate rows.
    if len(groups) > 1 and doc.get("total"):
        groups.append(("total", doc["total"]))
    page_size = (doc.get("system") or {}).get("page_size") or PAGE
    out: dict[str, Metric] = _swapout(doc.get("fill") or {})
    for name, agg in groups:
        for field, (unit, better, head) in GROUP_FIELDS.items():
            if agg.get(field) is not None:
                out[f"swapbench.{name}.{field}"] = Metric(
                    float(agg[field]), unit, better, head)
        # The processes' major faults include the read-back sweep after
        # the passes, so its pages count among those touched.
        touched = (agg.get("bytes") or 0) + \
            (agg.get("final_verify_pages") or 0) * page_size
        if agg.get("majflt") is not None and touched:
            # Faults per GiB the workload touched: comparable across runs
            # that touch different amounts (issue 10 asks for a 100x cut).
            out[f"swapbench.{name}.majflt_per_gib"] = Metric(
                agg["majflt"] * GIB / touched, "faults/GiB", LOWER)
        later = _later_pass_s(doc, name)
        if later is not None:
            out[f"swapbench.{name}.later_pass_s"] = Metric(later, "s", LOWER,
                                                           True)
        lat = agg.get("latency") or {}
        if lat.get("samples"):
            out[f"swapbench.{name}.latency.samples"] = Metric(
                lat["samples"], "samples", NEUTRAL)
            for field in LATENCY_FIELDS:
                if lat.get(field) is not None:
                    out[f"swapbench.{name}.latency.{field}"] = Metric(
                        float(lat[field]), "us", LOWER,
                        field in LATENCY_HEADLINE)
    return out


def _swaprace(doc: Mapping[str, Any]) -> dict[str, Metric]:
    total = doc.get("total") or {}
    out = {f"swaprace.total.{field}": Metric(float(total[field]), unit,
                                             better, head)
           for field, (unit, better, head) in RACE_FIELDS.items()
           if isinstance(total.get(field), (int, float))}
    for op, n in (total.get("ops") or {}).items():
        if isinstance(n, (int, float)):
            out[f"swaprace.total.ops.{op}"] = Metric(float(n), "ops",
                                                     NEUTRAL)
    return out


# Fill mode's swap-out over the steady part of the fill (10 % to 90 % of
# the pages it wrote to swap): the seeds' vmstat "so" rate.
SWAPOUT_FIELDS: dict[str, tuple[str, str, bool]] = {
    "steady_pages_per_s": ("pages/s", HIGHER, True),
    "steady_s": ("s", NEUTRAL, False),
    "start_s": ("s", NEUTRAL, False),
    "pages": ("pages", NEUTRAL, False),
}


def _swapout(fill: Mapping[str, Any]) -> dict[str, Metric]:
    so = fill.get("swapout") or {}
    if so.get("error") or so.get("truncated"):
        return {}
    return {f"swapbench.fill.swapout.{field}": Metric(float(so[field]), unit,
                                                      better, head)
            for field, (unit, better, head) in SWAPOUT_FIELDS.items()
            if so.get(field) is not None}


def _later_pass_s(doc: Mapping[str, Any], group: str) -> float | None:
    """Mean seconds per pass after the first, over the group's tasks.

    The first pass populates the area and swaps nothing in, so a re-read
    workload is judged per later pass (issue 10: "faster per pass"). Only
    for a fixed number of passes (no --runtime: its last pass may be cut
    short), at least two, in every task of the group."""
    if (doc.get("config") or {}).get("runtime_s"):
        return None
    tasks = [t for t in doc.get("tasks") or []
             if group in (t.get("group"), "total")]
    times = [(t["elapsed_s"] - t["first_pass_s"]) / (t["passes"] - 1)
             for t in tasks if t.get("status") == "ok" and
             (t.get("passes") or 0) >= 2 and t.get("first_pass_s")
             is not None and t.get("elapsed_s") is not None]
    if not times or len(times) != len(tasks):
        return None
    return sum(times) / len(times)


def _vmstat(before: Mapping[str, int],
            after: Mapping[str, int]) -> dict[str, Metric]:
    if not after:
        return {}
    names = [n for n in after
             if n in VMSTAT or n.startswith(VMSTAT_PREFIXES)]
    out = {f"vmstat.{n}": Metric(after[n] - before.get(n, 0),
                                 "pages" if n.startswith("pswp") else "events",
                                 VMSTAT.get(n, NEUTRAL))
           for n in names}
    majflt, pswpin = out.get("vmstat.pgmajfault"), out.get("vmstat.pswpin")
    if majflt and pswpin and pswpin.value > 0:
        # The whole guest's major faults per GiB it swapped in: how many
        # stalls a GiB of swap-in costs, whatever the readahead or THP path
        out["vmstat.pgmajfault_per_gib_in"] = Metric(
            majflt.value * GIB / (pswpin.value * PAGE), "faults/GiB", LOWER)
    ra = out.get("vmstat.swap_ra")
    hit = out.get("vmstat.swap_ra_hit")
    if ra and hit and ra.value > 0:
        # The readahead patches are judged by how much of what they read
        # was used; the raw counts depend on how much was swapped at all.
        out["vmstat.swap_ra_hit_ratio"] = Metric(
            100.0 * hit.value / ra.value, "%", HIGHER, True)
    return out


MTHP_RE = re.compile(r"^kernel/mm/transparent_hugepage/hugepages-(\d+kB)/"
                     r"(?:stats/(\w+)|(enabled))$")


def _mthp(before: Mapping[str, str],
          after: Mapping[str, str]) -> dict[str, Metric]:
    """Per-size THP statistics (6.8 and later: hugepages-<size>/stats):
    `mthp.<size>.<stat>`, events in the cell (after - before) or, for
    the nr_ gauges, the count after; only sizes that were enabled, so a
    kernel with nine sizes of which one is on adds 13 metrics, not 117."""
    stats: dict[str, dict[str, str]] = {}
    enabled: set[str] = set()
    for key, text in after.items():
        m = MTHP_RE.match(key)
        if not m:
            continue
        size, stat, is_switch = m.groups()
        if is_switch:
            if "[never]" not in text:
                enabled.add(size)
        else:
            stats.setdefault(size, {})[stat] = key
    out: dict[str, Metric] = {}
    for size in sorted(enabled & set(stats)):
        for stat, key in sorted(stats[size].items()):
            try:
                now = int(after[key])
                was = 0 if stat.startswith("nr_") else int(before.get(key, 0))
            except ValueError:
                continue
            out[f"mthp.{size}.{stat}"] = Metric(
                float(now - was), "folios", NEUTRAL)
    return out


def _diskstats(delta: Mapping[str, int]) -> dict[str, Metric]:
    out: dict[str, Metric] = {}
    for kind, sector_field in (("read", "sectors_read"),
                               ("write", "sectors_written")):
        ios, sectors = delta.get(f"{kind}s"), delta.get(sector_field)
        if ios is None or sectors is None:
            continue
        out[f"diskstats.{kind}s"] = Metric(ios, "IOs", NEUTRAL)
        out[f"diskstats.{kind}_kib"] = Metric(sectors / 2, "KiB", NEUTRAL)
        if ios:
            # Average IO size shows whether a THP went out as one 2 MiB IO.
            out[f"diskstats.kib_per_{kind}"] = Metric(sectors / 2 / ios,
                                                      "KiB", NEUTRAL)
            busy = delta.get(f"{kind}_ms")
            if busy is not None:
                # The device's time per IO, queueing included: a seek
                # model's cost of smaller, interleaved reads shows here.
                out[f"diskstats.ms_per_{kind}"] = Metric(busy / ios, "ms",
                                                         NEUTRAL)
    return out


def _per_page(obs: Observed, out: Mapping[str, Metric]
              ) -> dict[str, Metric]:
    """Costs per page swapped, for explaining a result rather than
    judging it: what a swapped page costs in device reads and in the
    workload's kernel CPU time."""
    per: dict[str, Metric] = {}
    pswpin, pswpout = out.get("vmstat.pswpin"), out.get("vmstat.pswpout")
    reads = obs.diskstats_delta.get("reads")
    if pswpin and pswpin.value > 0 and reads is not None:
        # Readahead that overlaps reads rather than saving them leaves
        # this unchanged while major faults fall.
        per["diskstats.reads_per_gib_in"] = Metric(
            reads * GIB / (pswpin.value * PAGE), "IOs/GiB", NEUTRAL)
    stime = obs.rusage.get("stime_s")
    if pswpout and pswpout.value > 0 and isinstance(stime, (int, float)):
        # The workload's system time (its direct reclaim included, not
        # kswapd's) per page it pushed out: under TCG the kernel's CPU
        # work, not the device, bounds a fill's swap-out rate.
        per["rusage.stime_us_per_page_out"] = Metric(
            stime * 1e6 / pswpout.value, "us/page", LOWER)
    if isinstance(stime, (int, float)) and obs.wall_s:
        # How many CPUs the workload's kernel work kept busy: near the
        # guest's vCPU count, the kernel's CPU time bounds the workload.
        per["rusage.kernel_cpus"] = Metric(stime / obs.wall_s, "CPUs",
                                           NEUTRAL)
    return per


def _zram(peak: Mapping[str, int]) -> dict[str, Metric]:
    """How compressible the swapped pages were, at zram's fullest: the
    compression ratio of the stored data, and the share of pages that
    were one byte repeated (zram stores none of them: they flatter any
    result on zram)."""
    orig, compr = peak.get("orig_data_size"), peak.get("compr_data_size")
    same = peak.get("same_pages")
    if not orig or not compr or same is None:
        return {}
    return {"zram.compression_ratio": Metric(orig / compr, "x", NEUTRAL),
            "zram.same_filled_pct": Metric(
                100 * same * PAGE / (orig + same * PAGE), "%", NEUTRAL),
            "zram.mem_used_max_mib": Metric(
                peak.get("mem_used_max", 0) / (1 << 20), "MiB", NEUTRAL)}


def _trace(trace: Mapping[str, Any]) -> dict[str, Metric]:
    pre = f"trace.{trace.get('function', 'do_swap_page')}"
    out = {f"{pre}.count": Metric(trace["count"], "calls", NEUTRAL),
           f"{pre}.avg_us": Metric(trace["sum_ns"] / trace["count"] / 1000,
                                   "us", LOWER)}
    for name, ns in (trace.get("percentiles_ns") or {}).items():
        out[f"{pre}.{name}_us"] = Metric(ns / 1000, "us", LOWER)
    return out


@dataclass
class Samples:
    """The metrics of a run's cells, grouped for the statistics."""
    values: dict[Key, list[float]]          # in repeat order
    info: dict[str, MetricInfo]
    failed: dict[str, str]                  # cell id -> reason


def gather(records: Iterable[CellRecord]) -> Samples:
    """Group the metrics of the successful cells by (workload, backend,
    metric, variant); failed cells, and cells measured on a busy host,
    are listed, not measured."""
    out = Samples({}, {}, {})
    for rec in sorted(records, key=lambda r: r.cell):
        if rec.outcome != "ok":
            out.failed[rec.cell.id] = rec.result.get("reason") or "failed"
            continue
        busy = record.host_busy(rec.result)
        if busy:
            out.failed[rec.cell.id] = busy
            continue
        c = rec.cell
        for name, metric in cell_metrics(rec.result).items():
            out.info.setdefault(name, metric.info)
            out.values.setdefault((c.workload, c.backend, name, c.variant),
                                  []).append(metric.value)
    return out
