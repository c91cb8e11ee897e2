"""Tests for the swapbench guest workload (workloads/).

Host only, tiny areas, no swap needed.  Run with
    /usr/bin/python3 -m pytest tests/workloads
"""
import json
import math
import os
import random
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "workloads"
BINARY = WORKLOADS / "build" / "swapbench"
PAGE = os.sysconf("SC_PAGE_SIZE")
PCTS = [("p50", 50), ("p60", 60), ("p70", 70), ("p80", 80), ("p90", 90),
        ("p95", 95), ("p99", 99), ("p999", 99.9)]

TOP_KEYS = {"schema", "status", "exit_code", "mode", "config", "system",
            "groups", "total", "fill", "tasks", "processes", "mismatches"}
CONFIG_KEYS = {"seed", "passes", "runtime_s", "warmup_passes", "step_pages",
               "verify", "final_verify", "latency", "thp", "work", "work_us",
               "work_loop_iterations", "work_calibration", "corrupt_page",
               "kill_page"}
SYSTEM_KEYS = {"page_size", "mem_total_bytes", "swap_total_bytes", "cpus",
               "kernel"}
AGG_KEYS = {"status", "tasks", "passes_min", "passes_max", "pages", "bytes",
            "wall_s", "pages_per_s", "bytes_per_s", "minflt", "majflt",
            "mismatches", "verified_pages", "final_verify_pages",
            "final_verify_s", "anon_huge_kb_first_pass", "anon_huge_kb_end",
            "rss_kb_end", "swap_kb_end", "latency"}
GROUP_KEYS = AGG_KEYS | {"name", "pattern", "procs", "threads",
                         "size_per_task_bytes"}
TASK_KEYS = {"index", "group", "proc", "thread", "pid", "status", "error",
             "base", "size_bytes", "passes", "pages", "bytes", "elapsed_s",
             "first_pass_s", "cpu_s", "first_pass_cpu_s",
             "pages_per_s", "bytes_per_s", "minflt", "majflt", "mismatches",
             "verified_pages", "final_verify_pages", "final_verify_s",
             "anon_huge_kb_first_pass", "anon_huge_kb_end", "rss_kb_end",
             "swap_kb_end", "latency"}
PROC_KEYS = {"group", "index", "pid", "status", "exit_code", "signal",
             "minflt", "majflt"}
LAT_KEYS = {"samples", "avg_us", "min_us", "max_us"} | \
    {name + "_us" for name, _ in PCTS}
MIS_KEYS = {"task", "group", "page", "addr", "offset", "pass", "expected",
            "found"}
FILL_KEYS = {"target_frac", "target_bytes", "written_bytes", "wall_s",
             "write_bytes_per_s"}


@pytest.fixture(scope="session")
def swapbench():
    res = subprocess.run(["make", "-C", str(WORKLOADS)], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stderr.lower(), res.stderr
    return str(BINARY)


def run(binary, *args, env=None, stdin=None, timeout=20):
    full_env = dict(os.environ)
    full_env.pop("SWAPBENCH_CORRUPT_PAGE", None)
    full_env.pop("SWAPBENCH_KILL_PAGE", None)
    full_env.update(env or {})
    res = subprocess.run([binary, *args], capture_output=True, text=True,
                         input=stdin, env=full_env, timeout=timeout)
    return res


def run_json(binary, *args, rc=0, **kw):
    res = run(binary, *args, **kw)
    assert res.returncode == rc, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["exit_code"] == rc
    return doc


def check_latency(lat):
    if lat is None:
        return
    assert set(lat) == LAT_KEYS
    if lat["samples"]:
        vals = [lat[name + "_us"] for name, _ in PCTS]
        assert vals == sorted(vals)
        assert lat["min_us"] <= vals[0] and vals[-1] <= lat["max_us"]


def check_schema(doc):
    assert set(doc) == TOP_KEYS
    assert doc["schema"] == "swapbench/1"
    assert set(doc["config"]) == CONFIG_KEYS
    assert set(doc["system"]) == SYSTEM_KEYS
    assert doc["groups"]
    for g in doc["groups"]:
        assert set(g) == GROUP_KEYS
        check_latency(g["latency"])
    assert set(doc["total"]) == AGG_KEYS
    check_latency(doc["total"]["latency"])
    for t in doc["tasks"]:
        assert set(t) == TASK_KEYS
        check_latency(t["latency"])
    for p in doc["processes"]:
        assert set(p) == PROC_KEYS
    for m in doc["mismatches"]:
        assert set(m) == MIS_KEYS
    if doc["mode"] == "fill":
        assert set(doc["fill"]) == FILL_KEYS
    else:
        assert doc["fill"] is None
    assert sum(g["tasks"] for g in doc["groups"]) == len(doc["tasks"])
    assert doc["total"]["pages"] == sum(t["pages"] for t in doc["tasks"])


# ---------------------------------------------------------------- histogram

def exact_pct(values, p):
    s = sorted(values)
    rank = max(1, math.ceil(p * len(s) / 100 - 1e-9))
    return s[rank - 1]


def hist(binary, *sets):
    text = "\n--\n".join("\n".join(str(v) for v in s) for s in sets)
    res = run(binary, "--selftest-hist", stdin=text + "\n")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def assert_close(summary, values):
    assert summary["samples"] == len(values)
    assert summary["min_ns"] == min(values)
    assert summary["max_ns"] == max(values)
    assert summary["avg_ns"] == pytest.approx(sum(values) / len(values),
                                              rel=1e-9, abs=1e-3)
    for name, p in PCTS:
        want = exact_pct(values, p)
        got = summary[name + "_ns"]
        assert abs(got - want) <= 0.01 * want, (name, got, want)


def distributions():
    r = random.Random(42)
    return {
        "uniform": [r.randrange(50, 2_000_000) for _ in range(20000)],
        "lognormal": [max(50, int(r.lognormvariate(9, 2.5)))
                      for _ in range(20000)],
        "exponential": [50 + int(r.expovariate(1 / 80000))
                        for _ in range(20000)],
        "bimodal": [r.choice([r.randrange(100, 300),
                              r.randrange(4_000_000, 6_000_000)])
                    for _ in range(10000)],
        "wide": [int(10 ** r.uniform(math.log10(50), 10))
                 for _ in range(20000)],
        "constant": [24000] * 1000,
        "edges": [50, 51, 255, 256, 257, 10 ** 10 - 1, 10 ** 10] * 10,
    }


@pytest.mark.parametrize("name", sorted(distributions()))
def test_hist_percentiles_within_1pct(swapbench, name):
    values = distributions()[name]
    doc = hist(swapbench, values)
    assert_close(doc["hists"][0], values)


def test_hist_merge_equals_histogram_of_merged_data(swapbench):
    d = distributions()
    sets = [d["lognormal"], d["bimodal"], d["edges"]]
    doc = hist(swapbench, *sets)
    assert doc["merge_equal"] is True
    assert doc["merged"] == doc["direct"]
    merged = [v for s in sets for v in s]
    assert_close(doc["merged"], merged)
    for summary, values in zip(doc["hists"], sets):
        assert_close(summary, values)


# ---------------------------------------------------------------- integrity

@pytest.mark.parametrize("pattern", ["seq", "seq-back", "random"])
def test_clean_run_zero_mismatches(swapbench, pattern):
    doc = run_json(swapbench, "-q", "-s", "4M", "-P", pattern,
                   "--passes", "3")
    pages = 4 * 2 ** 20 // PAGE
    assert doc["status"] == "ok"
    assert doc["mismatches"] == []
    t = doc["tasks"][0]
    assert t["mismatches"] == 0 and t["passes"] == 3
    assert t["pages"] == 3 * pages
    # passes 2 and 3 read back, plus the final sweep
    assert t["verified_pages"] == 3 * pages
    assert t["final_verify_pages"] == pages
    assert t["latency"]["samples"] == 3 * pages


@pytest.mark.parametrize("args,env", [
    (["--corrupt-page", "5"], None),
    (["-P", "random", "--passes", "1"], {"SWAPBENCH_CORRUPT_PAGE": "5"}),
    (["-P", "seq-back", "--passes", "3"], {"SWAPBENCH_CORRUPT_PAGE": "5"}),
])
def test_corruption_caught(swapbench, args, env):
    res = run(swapbench, "-s", "4M", *args, env=env)
    assert res.returncode == 3, res.stderr
    assert "MISMATCH" in res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "mismatch" and doc["exit_code"] == 3
    t = doc["tasks"][0]
    assert t["status"] == "mismatch" and t["mismatches"] == 1
    (m,) = doc["mismatches"]
    assert m["page"] == 5 and m["offset"] == 0 and m["pass"] == 0
    assert int(m["addr"], 16) == int(t["base"], 16) + 5 * PAGE
    assert int(m["expected"], 16) ^ int(m["found"], 16) == 0xff


def test_runtime_partial_pass_verifies_clean(swapbench):
    # 1024 pages x 50 us = 51 ms a pass: 0.13 s ends inside pass 3, unless
    # the deadline happens to fall on a pass boundary (1 in 16): retry
    partial = False
    for _ in range(4):
        doc = run_json(swapbench, "-q", "-s", "4M", "-P", "random",
                       "--runtime", "0.13", "--work-us", "50")
        t = doc["tasks"][0]
        assert doc["config"]["passes"] == 0
        assert t["mismatches"] == 0 and doc["status"] == "ok"
        assert t["final_verify_pages"] == 1024
        assert t["elapsed_s"] >= 0.12
        if t["pages"] % 1024:
            partial = True
            break
    assert partial


def test_enomem_reported(swapbench):
    res = run(swapbench, "-s", "200T")
    assert res.returncode == 4, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "enomem"
    assert doc["tasks"][0]["status"] == "enomem"


def test_sigkill_reported_as_oom(swapbench):
    res = run(swapbench, "-s", "4M", "-p", "2", "--test-kill-page", "10")
    assert res.returncode == 5, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "oom"
    assert [p["status"] for p in doc["processes"]] == ["oom", "ok"]
    assert doc["processes"][0]["signal"] == 9
    assert doc["tasks"][0]["status"] == "oom"
    assert doc["tasks"][1]["status"] == "ok"


# ---------------------------------------------------------------- modes

@pytest.mark.parametrize("args", [
    ["-P", "seq"],
    ["-P", "seq-back", "--step", "4"],
    ["-P", "random", "--thp", "madvise"],
    ["-P", "random", "--thp", "nohuge", "--no-latency"],
    ["-p", "2", "-t", "2", "--warmup-passes", "1"],
    ["--no-verify"],
    ["--size-frac-mem", "0.0002"],
    ["--size-frac-memswap", "0.0002"],
])
def test_access_mode(swapbench, args):
    size = None if args[0].startswith("--size-frac") else "4M"
    extra = ["-s", size] if size else []
    doc = run_json(swapbench, "-q", *extra, *args)
    assert doc["mode"] == "access" and doc["status"] == "ok"
    for t in doc["tasks"]:
        pages = t["size_bytes"] // PAGE
        step = doc["config"]["step_pages"]
        assert t["pages"] == 2 * ((pages + step - 1) // step)
        assert t["status"] == "ok"
    if "--no-latency" in args:
        assert doc["total"]["latency"] is None
    if "--warmup-passes" in args:
        assert doc["total"]["latency"]["samples"] == doc["total"]["pages"] // 2
    if "--no-verify" in args:
        assert doc["total"]["verified_pages"] == 0
    if "-t" in args:
        pids = [t["pid"] for t in doc["tasks"]]
        assert pids[0] == pids[1] != pids[2] == pids[3]
        assert len(doc["processes"]) == 2
    if args[0].startswith("--size-frac"):
        sysd = doc["system"]
        total = sysd["mem_total_bytes"]
        if args[0] == "--size-frac-memswap":
            total += sysd["swap_total_bytes"]
        want = int(total * 0.0002) // PAGE * PAGE
        assert doc["groups"][0]["size_per_task_bytes"] == want


def test_thp_reports_anon_huge(swapbench):
    doc = run_json(swapbench, "-q", "-s", "4M", "--thp", "nohuge")
    assert doc["tasks"][0]["anon_huge_kb_first_pass"] == 0
    assert doc["tasks"][0]["rss_kb_end"] == 4096


def test_fill_mode(swapbench):
    doc = run_json(swapbench, "-q", "--mode", "fill", "-p", "2", "-s", "4M")
    assert doc["mode"] == "fill"
    assert doc["fill"]["written_bytes"] == 2 * 4 * 2 ** 20
    assert doc["fill"]["write_bytes_per_s"] > 0
    assert doc["total"]["passes_max"] == 1
    assert doc["total"]["final_verify_pages"] == 2 * 1024


def test_fill_mode_fraction(swapbench):
    doc = run_json(swapbench, "-q", "--mode", "fill", "-p", "2",
                   "--fill-frac", "0.0004")
    sysd = doc["system"]
    target = 0.0004 * (sysd["mem_total_bytes"] + sysd["swap_total_bytes"])
    assert doc["fill"]["target_frac"] == 0.0004
    assert abs(doc["fill"]["target_bytes"] - target) <= 2 * PAGE


def test_combined_mode(swapbench):
    doc = run_json(swapbench, "--mode", "combined", "-p", "1", "-s", "4M",
                   "--bg-procs", "2", "--bg-size", "2M", "--work-us", "2")
    fg, bg = doc["groups"]
    assert (fg["name"], fg["pattern"], fg["procs"]) == ("fg", "seq", 1)
    assert (bg["name"], bg["pattern"], bg["procs"]) == ("bg", "random", 2)
    assert fg["passes_min"] == 2 and bg["passes_min"] >= 1
    assert doc["total"]["latency"]["samples"] == \
        fg["latency"]["samples"] + bg["latency"]["samples"]
    assert doc["total"]["pages"] == fg["pages"] + bg["pages"]
    assert doc["status"] == "ok"


def test_busy_wait_and_calibrated_loop(swapbench, tmp_path):
    cal = tmp_path / "cal.txt"
    res = run(swapbench, "--calibrate", str(cal), "--work-us", "10")
    assert res.returncode == 0, res.stderr
    c = json.loads(res.stdout)["calibration"]
    assert c["iterations"] > 0 and cal.exists()
    doc = run_json(swapbench, "-q", "-s", "1M", "--work-us", "20",
                   "--work-calibration", str(cal))
    assert doc["config"]["work"] == "loop"
    assert doc["config"]["work_loop_iterations"] == \
        pytest.approx(2 * c["iterations"], abs=1)
    doc = run_json(swapbench, "-q", "-s", "1M", "--work-us", "20")
    assert doc["config"]["work"] == "busy"
    # 2 passes x 256 pages x 20 us at the least
    assert doc["tasks"][0]["elapsed_s"] >= 512 * 20e-6


# ---------------------------------------------------------------- options

@pytest.mark.parametrize("args", [
    ["--bogus"], ["-p", "0"], ["-s", "12Q"], ["-s", "-4M"],
    ["--pattern", "zigzag"], ["--mode", "nope"], ["--thp", "always"],
    ["--passes", "0"], ["--runtime", "abc"], ["--size-frac-mem", "0"],
    ["--bg-procs", "2"], ["--mode", "fill", "--passes", "3"],
    ["--fill-frac", "0.5"], ["--work-us", "24", "--work-calibration",
                             "/nonexistent/cal"],
    ["-s", "4M", "--corrupt-page", "5000"], ["extra-arg"],
    ["--step", "0"], ["-t", "100000"],
])
def test_bad_options_exit_2(swapbench, args):
    res = run(swapbench, *args)
    assert res.returncode == 2
    assert res.stdout == ""
    assert "usage: swapbench" in res.stderr
    assert len(res.stderr.splitlines()[0]) > 10


def test_help(swapbench):
    res = run(swapbench, "--help")
    assert res.returncode == 0 and "usage: swapbench" in res.stdout


# ---------------------------------------------------------------- order

def order(binary, *args):
    res = run(binary, "--dump-order", "-s", "256K", *args)
    assert res.returncode == 0, res.stderr
    return [[int(x) for x in line.split()] for line in
            res.stdout.splitlines()]


def test_random_order_reproducible(swapbench):
    a = order(swapbench, "-P", "random", "--seed", "7", "--passes", "3")
    b = order(swapbench, "-P", "random", "--seed", "7", "--passes", "3")
    c = order(swapbench, "-P", "random", "--seed", "8", "--passes", "3")
    assert a == b
    assert a != c
    for perm in a + c:
        assert sorted(perm) == list(range(64))
    assert a[0] != a[1] != a[2]          # a new order every pass
    assert a[0] != list(range(64))


def test_sequential_orders(swapbench):
    assert order(swapbench, "--passes", "1") == [list(range(64))]
    assert order(swapbench, "-P", "seq-back", "--passes", "1") == \
        [list(range(63, -1, -1))]
    (stepped,) = order(swapbench, "-P", "random", "--step", "3",
                       "--passes", "1")
    assert sorted(stepped) == list(range(0, 64, 3))
