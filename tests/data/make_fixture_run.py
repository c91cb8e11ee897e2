"""Writes tests/data/results/fixture-run: a small synthetic run in the
store's layout, for the table and statistics tests.

Cell results follow the runner's swaplab-cell/1 layout and swapbench/1
(shapes taken from a real host run of swapbench, values scaled to what a
512 MiB guest swapping to an emulated device does); per-cell arrays
(tasks, processes) and unused counters are left out to keep them small.
Planted effects, 3 repeats each: readahead is +14 % throughput on nvme
and +8 % on rotational with far fewer major faults and lower latency;
thp-stage2 writes THPs as 2 MiB IOs, +12 % fill throughput. One cell
(readahead-rotational-seq-r3) hung, leaving that comparison at n=2.
It exists for what one real quick run cannot show (repeats, planted
effects, a failed cell); real guest results are in results/quick-real
(capture_run.py).

    /usr/bin/python3 tests/data/make_fixture_run.py
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "fixture-run"
VARIANTS = ("base", "readahead", "thp-stage2")
BACKENDS = ("nvme", "rotational")
WORKLOADS = ("seq", "thp-swpout")
REPEATS = 3
HUNG = "readahead-rotational-seq-r3"
PAGES = 589824                              # 3 passes x 2 tasks x 384 MiB

# (workload, backend, variant) -> throughput factor against base
SEQ_BPS = {"nvme": 210e6, "rotational": 48e6}
FILL_BPS = {"nvme": 300e6, "rotational": 95e6}
FACTOR = {("seq", "nvme", "readahead"): 1.14,
          ("seq", "rotational", "readahead"): 1.08,
          ("thp-swpout", "nvme", "thp-stage2"): 1.12,
          ("thp-swpout", "rotational", "thp-stage2"): 1.10}
LAT_BASE = dict(avg_us=40.08, min_us=0.2, max_us=16200, p50_us=1, p60_us=1,
                p70_us=1, p80_us=3, p90_us=158, p95_us=181, p99_us=254,
                p999_us=900)
LAT_RA = dict(avg_us=12.04, min_us=0.2, max_us=17420, p50_us=1, p60_us=2,
              p70_us=2, p80_us=2, p90_us=8, p95_us=11, p99_us=42,
              p999_us=610)
LAT_FILL = dict(avg_us=3.1, min_us=0.3, max_us=2100, p50_us=0.9, p60_us=1,
                p70_us=1.1, p80_us=1.3, p90_us=2.2, p95_us=4, p99_us=35,
                p999_us=240)


def jitter(rng: random.Random, value: float, cv: float) -> float:
    return value * rng.gauss(1.0, cv)


def latency(rng: random.Random, template: dict, samples: int) -> dict:
    # One factor for the whole distribution keeps the percentiles ordered.
    factor = jitter(rng, 1.0, 0.03)
    out = {"samples": samples}
    out.update({k: round(v * factor, 2) for k, v in template.items()})
    return out


def swapbench(rng, wl, be, var):
    factor = FACTOR.get((wl, be, var), 1.0)
    if wl == "seq":
        bps = jitter(rng, SEQ_BPS[be] * factor, 0.03 if be == "nvme" else 0.05)
        pages = PAGES
        lat = latency(rng, LAT_RA if var == "readahead" else LAT_BASE,
                      pages * 2 // 3)
        majflt = int(jitter(rng, 120000 if var == "readahead" else 380000,
                            0.02))
        group = {"name": "main", "pattern": "seq"}
        fill = None
        mode, thp = "access", "default"
    else:
        bps = jitter(rng, FILL_BPS[be] * factor, 0.025)
        pages = 164000
        lat = latency(rng, LAT_FILL, pages)
        majflt = 0
        group = {"name": "fill", "pattern": "seq"}
        mode, thp = "fill", "madvise"
    wall = pages * 4096 / bps
    agg = {"status": "ok", "tasks": 2, "passes_min": 3, "passes_max": 3,
           "pages": pages, "bytes": pages * 4096, "wall_s": round(wall, 3),
           "pages_per_s": round(bps / 4096, 1), "bytes_per_s": round(bps, 1),
           "minflt": int(jitter(rng, 410000, 0.01)), "majflt": majflt,
           "mismatches": 0, "verified_pages": pages,
           "final_verify_pages": 196608, "final_verify_s": 1.9,
           "anon_huge_kb_first_pass": 0, "anon_huge_kb_end": 0,
           "rss_kb_end": 190000, "swap_kb_end": 200000, "latency": lat}
    if wl == "thp-swpout":
        fill = {"target_frac": 0.8, "target_bytes": pages * 4096,
                "written_bytes": pages * 4096, "wall_s": round(wall, 3),
                "write_bytes_per_s": round(bps, 1)}
    return {
        "schema": "swapbench/1", "status": "ok", "exit_code": 0,
        "mode": mode,
        "config": {"seed": 1, "passes": 3 if wl == "seq" else 1,
                   "runtime_s": 0.0, "warmup_passes": 1 if wl == "seq" else 0,
                   "step_pages": 1, "verify": True, "final_verify": True,
                   "latency": True, "thp": thp,
                   "work": "loop" if wl == "seq" else "none",
                   "work_us": 24.0 if wl == "seq" else 0.0,
                   "work_loop_iterations": 5210,
                   "work_calibration": "/etc/swaplab/calibration",
                   "corrupt_page": -1, "kill_page": -1},
        "system": {"page_size": 4096, "mem_total_bytes": 503316480,
                   "swap_total_bytes": 1073737728, "cpus": 2,
                   "kernel": f"6.1.158-{var}-0123456789ab"},
        "groups": [dict(group, procs=2, threads=1,
                        size_per_task_bytes=402653184, **agg)],
        "total": agg, "fill": fill, "tasks": [], "processes": [],
        "mismatches": []}


def counters(rng, wl, var, doc):
    pswpout = doc["total"]["pages"] * (0.9 if wl == "seq" else 0.55)
    seq = wl == "seq"
    ra = var == "readahead"
    before = {"pswpin": 0, "pswpout": 0, "pgmajfault": 12, "swap_ra": 0,
              "swap_ra_hit": 0, "thp_swpout": 0, "thp_swpout_fallback": 0,
              "thp_split_page": 0, "nr_free_pages": 57737}
    delta = {
        "pswpin": int(jitter(rng, pswpout * 0.95, 0.01)) if seq else 0,
        "pswpout": int(jitter(rng, pswpout, 0.01)),
        "pgmajfault": doc["total"]["majflt"],
        "swap_ra": int(jitter(rng, 430000 if ra else 300000, 0.02))
        if seq else 0,
        "swap_ra_hit": int(jitter(rng, 410000 if ra else 190000, 0.02))
        if seq else 0,
        "thp_swpout": int(jitter(rng, 170, 0.03))
        if var == "thp-stage2" and not seq else 0,
        "thp_swpout_fallback": 0,
        "thp_split_page": 0 if var == "thp-stage2" or seq
        else int(jitter(rng, 175, 0.03)),
    }
    after = {k: before[k] + delta.get(k, 0) for k in before}
    after["nr_free_pages"] = 1210
    return before, after


def diskstats(rng, wl, var, vm_after):
    kib_per_write = 1024 if var == "thp-stage2" and wl != "seq" else 252
    written = vm_after["pswpout"] * 8
    return {"reads": vm_after["pswpin"] // 16, "reads_merged": 0,
            "sectors_read": vm_after["pswpin"] * 8, "read_ms": 60000,
            "writes": int(written / 2 / kib_per_write), "writes_merged": 0,
            "sectors_written": written, "write_ms": 98000, "in_flight": 0,
            "io_ms": 79000, "weighted_io_ms": 148000}


def cell_file(rng, wl, be, var, rep):
    cid = f"{var}-{be}-{wl}-r{rep}"
    key = {"base": "1a2b3c4d5e6f", "readahead": "2b3c4d5e6f70",
           "thp-stage2": "3c4d5e6f7081"}[var]
    release = f"6.1.158-{var}-{key}"
    doc = swapbench(rng, wl, be, var)
    vb, va = counters(rng, wl, var, doc)
    disk = diskstats(rng, wl, var, va)
    argv = ["qemu-system-x86_64", "-name", cid, "-accel", "kvm", "-m",
            "512M", "-smp", "2", "-kernel", f"builds/{var}-{key}/bzImage"]
    hung = cid == HUNG
    result = {
        "schema": "swaplab-cell/1",
        "cell": {"id": cid, "variant": var, "backend": be, "workload": wl,
                 "repeat": rep},
        "outcome": "failed" if hung else "ok",
        "reason": "hang" if hung else None,
        "detail": "no result within 960 s; QEMU killed" if hung else "",
        "kernel": {"variant": var, "key": key, "release": release},
        "accel": {"kind": "kvm"},
        "backend": {"name": be, "kind": be},
        "device": {"name": "nvme0n1" if be == "nvme" else "sda",
                   "rotational": "0" if be == "nvme" else "1"},
        "before": {"vmstat": vb, "meminfo_kb": {"SwapCached": 0,
                                                "AnonHugePages": 0}},
        "after": {"vmstat": va,
                  "meminfo_kb": {"SwapCached": int(jitter(rng, 5400, 0.05)),
                                 "AnonHugePages": 0}},
        "delta": {"vmstat": {k: va[k] - vb[k] for k in va if va[k] != vb[k]},
                  "diskstats": disk},
        "workload": None if hung else {"argv": ["swapbench"], "exit_code": 0,
                                       "result": doc},
        "trace": None,
    }
    prov = {
        "tree": {"package": "linux-source-6.1", "version": "6.1.158-1"},
        "patches": [{"series": "baseline", "file": "0001-baseline.patch",
                     "sha256": "ab" * 32}],
        "config_sha256": "cd" * 32, "build_key": key,
        "kernel_release": None if hung else release,
        "qemu_version": "7.2.15", "qemu_argv": argv, "accel": "kvm",
        "dilation": 1.0,
        "backend": {"name": be, "kind": be, "params": {}},
        "guest_device": None if hung else result["device"],
        "workload": {"name": wl, "argv": ["swapbench"], "seed": 1},
        "matrix_sha256": "ef" * 32,
        "started": "2026-12-03T12:00:00Z", "ended": "2026-12-03T12:02:00Z",
    }
    return cid, {"schema": "swaplab-result/1", "cell": result["cell"],
                 "inputs_hash": f"{cid}-inputs", "provenance": prov,
                 "result": result}


def main() -> None:
    rng = random.Random(7)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    cells = [(wl, be, var, rep) for rep in range(1, REPEATS + 1)
             for wl in WORKLOADS for be in BACKENDS for var in VARIANTS]
    for wl, be, var, rep in cells:
        cid, doc = cell_file(rng, wl, be, var, rep)
        (OUT / f"{cid}.json").write_text(json.dumps(doc) + "\n")
    manifest = {
        "schema": "swaplab-run/1", "id": OUT.name,
        "matrix": {"file": "matrix.yaml", "sha256": "ef" * 32,
                   "submatrix": "fixture", "baseline": "base",
                   "repeats": REPEATS, "variants": list(VARIANTS),
                   "backends": list(BACKENDS), "workloads": list(WORKLOADS)},
        "cells": [f"{v}-{b}-{w}-r{r}" for w, b, v, r in cells],
        "started": "2026-12-03T12:00:00Z", "ended": "2026-12-03T13:12:00Z",
        "host": {"cpu_model": "Fixture CPU", "kernel": "6.1.0",
                 "node": "fixture"},
    }
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
