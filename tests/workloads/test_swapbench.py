"""Tests for the guest workloads (workloads/): swapbench and swapcycle.

Host only, tiny areas, no swap needed.  swapcycle turns the swap area off
and on: here it only ever runs into a usage error or --help, which end
before it looks for a swap area.  Run with
    /usr/bin/python3 -m pytest tests/workloads
"""
import json
import math
import os
import random
import struct
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "workloads"
BINARY = WORKLOADS / "build" / "swapbench"
SWAPCYCLE = WORKLOADS / "build" / "swapcycle"
SCHEMA = "swapbench/4"
HOOK_ENV = ("SWAPBENCH_CORRUPT_PAGE", "SWAPBENCH_KILL_PAGE",
            "SWAPBENCH_SIGBUS_PAGE")
PAGE = os.sysconf("SC_PAGE_SIZE")
PCTS = [("p50", 50), ("p60", 60), ("p70", 70), ("p80", 80), ("p90", 90),
        ("p95", 95), ("p99", 99), ("p999", 99.9)]

TOP_KEYS = {"schema", "status", "exit_code", "procs_io_killed", "mode",
            "config", "system", "groups", "total", "fill", "tasks",
            "processes", "mismatches"}
CONFIG_KEYS = {"seed", "passes", "runtime_s", "warmup_passes", "step_pages",
               "verify", "final_verify", "serial_final_verify", "reread",
               "latency", "thp", "thp_holes", "page_fill_words", "work",
               "work_us",
               "work_loop_iterations", "work_calibration", "survive_sigbus",
               "fork_share", "fork_after_pass", "corrupt_page", "kill_page",
               "sigbus_page", "lost_page"}
SYSTEM_KEYS = {"page_size", "mem_total_bytes", "swap_total_bytes", "cpus",
               "kernel"}
AGG_KEYS = {"status", "tasks", "passes_min", "passes_max", "pages", "bytes",
            "wall_s", "pages_per_s", "bytes_per_s", "minflt", "majflt",
            "mismatches", "verified_pages", "lost_pages", "procs_io_killed",
            "fork_mismatches", "fork_verified_pages", "final_verify_pages",
            "final_verify_s", "anon_huge_kb_first_pass", "anon_huge_kb_end",
            "rss_kb_end", "swap_kb_end", "latency"}
GROUP_KEYS = AGG_KEYS | {"name", "pattern", "procs", "threads",
                         "size_per_task_bytes"}
TASK_KEYS = {"index", "group", "proc", "thread", "pid", "status", "error",
             "base", "size_bytes", "passes", "pages", "bytes", "elapsed_s",
             "first_pass_s", "cpu_s", "first_pass_cpu_s",
             "pages_per_s", "bytes_per_s", "minflt", "majflt", "mismatches",
             "verified_pages", "fork_mismatches", "fork_verified_pages",
             "lost_pages", "fork_lost_pages", "fork_verify_s",
             "final_verify_pages", "final_verify_s",
             "final_verify_start_mono_s",
             "anon_huge_kb_first_pass", "anon_huge_kb_end", "rss_kb_end",
             "swap_kb_end", "latency"}
PROC_KEYS = {"group", "index", "pid", "status", "exit_code", "signal",
             "minflt", "majflt", "fork_pid", "fork_status", "fork_signal"}
LAT_KEYS = {"samples", "avg_us", "min_us", "max_us"} | \
    {name + "_us" for name, _ in PCTS}
MIS_KEYS = {"task", "group", "fork", "page", "addr", "offset", "pass",
            "expected", "found"}
FILL_KEYS = {"target_frac", "target_bytes", "written_bytes", "wall_s",
             "write_bytes_per_s", "swapout"}
SWAPOUT_KEYS = {"interval_ms", "samples", "truncated", "realtime", "error",
                "pages",
                "start_s", "window_samples", "steady_s",
                "steady_pages_per_s"}


@pytest.fixture(scope="session")
def swapbench():
    res = subprocess.run(["make", "-C", str(WORKLOADS)], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stderr.lower(), res.stderr
    return str(BINARY)


@pytest.fixture(scope="session")
def swapcycle(swapbench):
    """Built by the same make as swapbench."""
    return str(SWAPCYCLE)


def run(binary, *args, env=None, stdin=None, timeout=20):
    full_env = dict(os.environ)
    for name in HOOK_ENV:
        full_env.pop(name, None)
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
    assert doc["schema"] == SCHEMA
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
    assert doc["procs_io_killed"] == doc["total"]["procs_io_killed"] == \
        sum(g["procs_io_killed"] for g in doc["groups"])
    for key in ("mismatches", "verified_pages", "fork_mismatches",
                "fork_verified_pages"):
        assert doc["total"][key] == sum(t[key] for t in doc["tasks"])
    for fork in (False, True):
        key = "fork_mismatches" if fork else "mismatches"
        listed = [m for m in doc["mismatches"] if m["fork"] is fork]
        assert len(listed) <= doc["total"][key]
    if not doc["config"]["fork_share"]:
        assert doc["total"]["fork_verified_pages"] == 0
        assert all(p["fork_status"] is None and p["fork_pid"] == 0
                   for p in doc["processes"])


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


SECTOR = 512
# the stamp words: the head at 0, one at the start of every middle
# sector, the tail in the last 8 bytes of the page
WORDS = [0] + [i * SECTOR for i in range(1, PAGE // SECTOR - 1)] + [PAGE - 8]


def corrupt_mismatch(binary, page, offset, *args, env=None, fork=False):
    """Run with byte @offset of @page flipped after pass 0; the one
    mismatch listed (of the run, or of the --fork-share child)."""
    if env is None:
        args = ("--corrupt-page", "%d:%d" % (page, offset)) + args
    res = run(binary, "-s", "4M", *args, env=env)
    assert res.returncode == 3, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "mismatch" and doc["exit_code"] == 3
    t = doc["tasks"][0]
    assert t["status"] == "mismatch"
    assert t["fork_mismatches" if fork else "mismatches"] == 1
    found = [m for m in doc["mismatches"] if m["fork"] is fork]
    assert len(found) == 1, doc["mismatches"]
    m = found[0]
    word = offset & ~7
    assert m["page"] == page and m["offset"] == word and m["pass"] == 0
    # the address of the bad word itself, not of its page
    assert int(m["addr"], 16) == int(t["base"], 16) + page * PAGE + word
    # exactly the flipped byte differs (little endian)
    assert int(m["expected"], 16) ^ int(m["found"], 16) == \
        0xff << 8 * (offset - word)
    return res, m


@pytest.mark.parametrize("offset", [2048, 2048 + 3, 512, PAGE - 2 * SECTOR])
@pytest.mark.parametrize("args", [
    [],                                     # pass 1 reads it back
    ["-P", "random", "--passes", "1"],      # the final sweep
    ["-P", "seq-back", "--passes", "3"],
])
def test_middle_sector_corruption_caught(swapbench, offset, args):
    # a torn page: damage in a middle sector, head and tail intact
    res, m = corrupt_mismatch(swapbench, 5, offset, *args)
    assert "offset %d pass 0" % (offset & ~7) in res.stderr
    assert "1 of %d stamp words of the page bad" % len(WORDS) in res.stderr


@pytest.mark.parametrize("offset", [PAGE - 8, PAGE - 1])
@pytest.mark.parametrize("args", [[], ["--passes", "1"]])
def test_tail_corruption_caught(swapbench, offset, args):
    corrupt_mismatch(swapbench, 5, offset, *args)


@pytest.mark.parametrize("offset", WORDS)
def test_every_sector_word_checked(swapbench, offset):
    corrupt_mismatch(swapbench, 9, offset)


def test_corrupt_offset_from_environment(swapbench):
    corrupt_mismatch(swapbench, 7, 1024 + 5, "-P", "random",
                     env={"SWAPBENCH_CORRUPT_PAGE": "7:1029"})


def test_fork_share_child_catches_middle_sector(swapbench):
    # one pass and no final sweep: only the child reads it back
    res, m = corrupt_mismatch(swapbench, 5, 1536, "--fork-share",
                              "--passes", "1", "--no-final-verify",
                              fork=True)
    assert "MISMATCH (fork-share child) task 0 page 5" in res.stderr


@pytest.mark.parametrize("offset", [8, 100, SECTOR + 8])
def test_corrupt_between_words_unnoticed(swapbench, offset):
    # the stamps catch sector-sized damage: a byte outside the stamp
    # words is not checked (and the hook flips that byte only)
    doc = run_json(swapbench, "-q", "-s", "4M", "--corrupt-page",
                   "5:%d" % offset)
    assert doc["status"] == "ok" and doc["mismatches"] == []
    assert doc["config"]["corrupt_page"] == 5


@pytest.mark.parametrize("reread", [[], ["--reread"]])
def test_runtime_partial_pass_verifies_clean(swapbench, reread):
    # 1024 pages x 50 us = 51 ms a pass: 0.13 s ends inside pass 3, unless
    # the deadline happens to fall on a pass boundary (1 in 16): retry
    partial = False
    for _ in range(4):
        doc = run_json(swapbench, "-q", "-s", "4M", "-P", "random",
                       "--runtime", "0.13", "--work-us", "50", *reread)
        t = doc["tasks"][0]
        assert doc["config"]["passes"] == 0
        assert t["mismatches"] == 0 and doc["status"] == "ok"
        assert t["final_verify_pages"] == 1024
        assert t["elapsed_s"] >= 0.12
        if t["pages"] % 1024:
            partial = True
            break
    assert partial


@pytest.mark.parametrize("pattern", ["seq", "random"])
def test_reread_checks_pass_0_stamps(swapbench, pattern):
    doc = run_json(swapbench, "-q", "-s", "4M", "-P", pattern,
                   "--passes", "3", "--reread")
    assert doc["status"] == "ok" and doc["config"]["reread"] is True
    t = doc["tasks"][0]
    assert t["passes"] == 3 and t["mismatches"] == 0
    # passes 2 and 3 read back, plus the final sweep
    assert t["verified_pages"] == 3 * 1024
    assert t["final_verify_pages"] == 1024


def test_reread_writes_nothing_after_pass_0(swapbench):
    # Page 5 flipped after pass 0. A rewriting pass finds it once and
    # writes it anew; with --reread nothing writes it, so each later pass
    # and the final sweep find it again, against pass 0's stamps.
    for args, found in (([], 1), (["--reread"], 3)):
        doc = run_json(swapbench, "-q", "-s", "4M", "--passes", "3",
                       "--corrupt-page", "5", *args, rc=3)
        assert doc["tasks"][0]["mismatches"] == found, args
        assert {(m["page"], m["pass"]) for m in doc["mismatches"]} == \
            {(5, 0)}


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


# ---------------------------------------------------------------- faults

def test_sigbus_without_survive_is_a_crash(swapbench):
    res = run(swapbench, "-s", "4M", "-p", "2", "--test-sigbus-page", "10")
    assert res.returncode == 6, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "crash" and doc["procs_io_killed"] == 0
    assert doc["processes"][0]["status"] == "crash"
    assert doc["processes"][0]["signal"] == 7          # SIGBUS
    assert doc["tasks"][0]["status"] == "crash"


@pytest.mark.parametrize("args", [
    ["-p", "2"],
    ["-p", "3", "-t", "2"],                 # the dead process's sibling
    # a runtime long enough that pass 1 starts on a loaded host (0.2 s
    # failed once while kernels were being built beside it)
    ["-p", "2", "-P", "random", "--runtime", "1"],
    ["-p", "2", "--passes", "1"],           # hook in pass 0
])
def test_sigbus_survived_others_finish(swapbench, args):
    # the survivors must not wait for the dead process at the barrier
    # before the final sweep (a hang would time out here)
    res = run(swapbench, "-s", "4M", "--survive-sigbus",
              "--test-sigbus-page", "10", *args)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "ok" and doc["exit_code"] == 0
    assert doc["config"]["survive_sigbus"] is True
    assert doc["config"]["sigbus_page"] == 10
    assert doc["procs_io_killed"] == 1
    dead, *alive = doc["processes"]
    assert dead["status"] == "io-killed" and dead["signal"] == 7
    assert dead["exit_code"] == -1
    assert all(p["status"] == "ok" for p in alive)
    threads = doc["groups"][0]["threads"]
    assert doc["groups"][0]["status"] == "io-killed"
    one_pass = "--passes" in args
    for t in doc["tasks"]:
        if t["proc"] == 0:
            assert t["status"] == "io-killed"
            continue
        assert t["status"] == "ok" and t["mismatches"] == 0
        assert t["final_verify_pages"] == 1024
        if "--runtime" not in args:
            assert t["passes"] == (1 if one_pass else 2)
    # task 0 died in pass 1 (pass 0 with one pass), after page 10
    assert doc["tasks"][0]["passes"] == (0 if one_pass else 1)
    assert len(doc["tasks"]) == len(doc["processes"]) * threads


@pytest.mark.parametrize("threads", ["1", "2"])
def test_serial_final_verify_one_task_at_a_time(swapbench, threads):
    doc = run_json(swapbench, "-q", "-p", "3", "-t", threads, "-s", "8M",
                   "--serial-final-verify")
    assert doc["config"]["serial_final_verify"] is True
    tasks = doc["tasks"]
    assert all(t["status"] == "ok" and t["final_verify_pages"] == 2048
               for t in tasks)
    # in task order, each sweep starting after the one before ended
    for before, after in zip(tasks, tasks[1:]):
        end = before["final_verify_start_mono_s"] + before["final_verify_s"]
        assert after["final_verify_start_mono_s"] >= end - 1e-6, \
            (before, after)


def test_serial_final_verify_skips_a_dead_process(swapbench):
    # task 0's process is io-killed before its sweep: the turn passes on
    res = run(swapbench, "-s", "4M", "-p", "3", "--survive-sigbus",
              "--test-sigbus-page", "10", "--serial-final-verify")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["procs_io_killed"] == 1
    dead, *alive = doc["tasks"]
    assert dead["status"] == "io-killed"
    assert all(t["status"] == "ok" and t["final_verify_pages"] == 1024
               for t in alive)


def test_sigbus_survived_foreground_stops_background(swapbench):
    # bg runs until fg is done: the io-killed fg process counts as done
    doc = run_json(swapbench, "-q", "--mode", "combined", "-s", "4M",
                   "--bg-procs", "2", "--bg-size", "1M", "--survive-sigbus",
                   env={"SWAPBENCH_SIGBUS_PAGE": "10"})
    fg, bg = doc["groups"]
    assert fg["status"] == "io-killed" and fg["procs_io_killed"] == 1
    assert bg["status"] == "ok" and bg["procs_io_killed"] == 0
    assert bg["passes_min"] >= 1
    assert doc["status"] == "ok" and doc["procs_io_killed"] == 1


def test_sigbus_survived_mismatch_still_wins(swapbench):
    # task 0 finds page 5 bad in pass 1, then dies at page 10
    res = run(swapbench, "-s", "4M", "-p", "2", "--survive-sigbus",
              "--test-sigbus-page", "10", "--corrupt-page", "5")
    assert res.returncode == 3, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "mismatch" and doc["procs_io_killed"] == 1
    assert doc["processes"][0]["status"] == "io-killed"
    assert doc["tasks"][0]["status"] == "mismatch"
    assert doc["tasks"][0]["mismatches"] == 1
    (m,) = doc["mismatches"]
    assert m["page"] == 5 and m["fork"] is False


@pytest.mark.parametrize("args", [
    ["-P", "seq"],
    ["-P", "random", "-p", "2", "-t", "2"],
    ["-P", "seq-back", "--step", "3", "--passes", "3"],
    ["--mode", "combined", "--bg-procs", "2", "--bg-size", "2M"],
    ["-P", "random", "--passes", "3", "--reread"],
])
def test_fork_share_clean(swapbench, args):
    doc = run_json(swapbench, "-q", "-s", "4M", "--fork-share", *args)
    assert doc["status"] == "ok" and doc["config"]["fork_share"] is True
    passes = 3 if "--passes" in args else 2
    for t in doc["tasks"]:
        visited = t["final_verify_pages"]
        assert visited == -(-t["size_bytes"] // PAGE // doc["config"]
                            ["step_pages"])
        # the child checked every page once, against pass 0's stamps
        assert t["fork_verified_pages"] == visited
        assert t["fork_mismatches"] == 0 and t["mismatches"] == 0
        if t["group"] != "bg":
            # passes after the first and the final sweep; the child apart
            assert t["verified_pages"] == passes * visited
            assert t["passes"] == passes
    pids = {t["pid"] for t in doc["tasks"]}
    for p in doc["processes"]:
        assert p["fork_status"] == "ok" and p["fork_signal"] == 0
        assert p["fork_pid"] > 0 and p["fork_pid"] not in pids
    assert doc["total"]["fork_verified_pages"] == \
        sum(t["final_verify_pages"] for t in doc["tasks"])


def test_fork_after_a_later_pass(swapbench):
    # the child forks after pass 2 and checks pass 2's stamps; the parent
    # goes on rewriting (pass 3) and sweeps pass 3's stamps at the end
    doc = run_json(swapbench, "-q", "-s", "4M", "-P", "random", "-p", "2",
                   "--passes", "4", "--fork-share", "--fork-after-pass",
                   "2")
    assert doc["status"] == "ok" and doc["config"]["fork_after_pass"] == 2
    for t in doc["tasks"]:
        assert t["passes"] == 4
        assert t["fork_verified_pages"] == 1024
        assert t["fork_mismatches"] == 0 and t["mismatches"] == 0


def test_fork_after_pass_corruption_before_the_fork(swapbench):
    # page 5 flipped right after pass 0: passes 1 and 2 find it (and
    # rewrite it), so the child, forked after pass 2, sees a good page
    res = run(swapbench, "-s", "4M", "--fork-share", "--passes", "3",
              "--fork-after-pass", "2", "--corrupt-page", "5")
    assert res.returncode == 3, res.stderr
    t = json.loads(res.stdout)["tasks"][0]
    assert t["mismatches"] >= 1 and t["fork_mismatches"] == 0


@pytest.mark.parametrize("args,message", [
    (["--fork-after-pass", "1"], "--fork-after-pass needs --fork-share"),
    (["--fork-share", "--passes", "2", "--fork-after-pass", "2"],
     "--fork-after-pass 2: there are only 2 passes"),
    (["--fork-share", "--fork-after-pass", "x"], "bad --fork-after-pass"),
])
def test_fork_after_pass_rejected(swapbench, args, message):
    res = run(swapbench, "-s", "4M", *args)
    assert res.returncode == 2 and message in res.stderr, res.stderr


def test_fork_share_partial_first_pass(swapbench):
    # the runtime ends inside pass 0: the child checks the pages written
    # before the fork and finds the others still zero
    doc = run_json(swapbench, "-q", "-s", "4M", "-P", "random",
                   "--fork-share", "--runtime", "0.02", "--work-us", "50")
    t = doc["tasks"][0]
    assert t["passes"] == 0 and 0 < t["pages"] < 1024
    assert t["fork_verified_pages"] == 1024
    assert t["mismatches"] == 0 and doc["status"] == "ok"


@pytest.mark.parametrize("passes,run_found", [("1", 0), ("2", 1)])
def test_fork_share_child_catches_corruption(swapbench, passes, run_found):
    # (with two passes pass 1 finds it too, as mismatches, not fork_*)
    # page 5 goes bad right after pass 0 wrote it, before the fork; with
    # one pass and no final sweep only the child reads it back
    res = run(swapbench, "-s", "4M", "--fork-share", "--passes", passes,
              "--no-final-verify", "--corrupt-page", "5")
    assert res.returncode == 3, res.stderr
    assert "MISMATCH (fork-share child) task 0 page 5" in res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["status"] == "mismatch"
    t = doc["tasks"][0]
    assert t["status"] == "mismatch"
    assert t["fork_mismatches"] == 1 and t["fork_verified_pages"] == 1024
    assert t["mismatches"] == run_found
    (p,) = doc["processes"]
    assert p["fork_status"] == "mismatch" and p["status"] == "mismatch"
    assert p["exit_code"] == 3
    fork = [m for m in doc["mismatches"] if m["fork"]]
    assert len(fork) == 1 and len(doc["mismatches"]) == 1 + run_found
    m = fork[0]
    assert m["page"] == 5 and m["offset"] == 0 and m["pass"] == 0
    assert int(m["expected"], 16) ^ int(m["found"], 16) == 0xff


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


@pytest.mark.parametrize("thp", ["madvise", "nohuge"])
def test_thp_area_from_memory_is_whole_huge_pages(swapbench, thp):
    # A partial last 2 MiB of a MADV_HUGEPAGE area is never a THP.
    doc = run_json(swapbench, "-q", "--size-frac-mem", "0.0003",
                   "--thp", thp)
    want = int(doc["system"]["mem_total_bytes"] * 0.0003)
    unit = 2 << 20 if thp == "madvise" else PAGE
    assert doc["groups"][0]["size_per_task_bytes"] == want // unit * unit


def test_thp_reports_anon_huge(swapbench):
    doc = run_json(swapbench, "-q", "-s", "4M", "--thp", "nohuge")
    assert doc["tasks"][0]["anon_huge_kb_first_pass"] == 0
    assert doc["tasks"][0]["rss_kb_end"] == 4096


def test_thp_holes_leave_ranges_without_thp(swapbench):
    """Every second 2 MiB range gets 4 KiB pages at first touch: at most
    half the THPs of the same area without holes, data intact."""
    args = ["-q", "-s", "16M", "--thp", "madvise", "--passes", "2"]
    whole = run_json(swapbench, *args)
    huge_kb = whole["tasks"][0]["anon_huge_kb_first_pass"]
    if huge_kb <= 4 * 2048:
        pytest.skip(f"the host gave {huge_kb} kB of THPs to 16 MiB: "
                    "too few to see holes in")
    holes = run_json(swapbench, *args, "--thp-holes", "2")
    t = holes["tasks"][0]
    assert holes["config"]["thp_holes"] == 2
    assert whole["config"]["thp_holes"] == 0
    assert t["anon_huge_kb_first_pass"] <= 4 * 2048, t
    assert t["mismatches"] == 0 and t["final_verify_pages"] == 4096


def test_fill_mode(swapbench):
    doc = run_json(swapbench, "-q", "--mode", "fill", "-p", "2", "-s", "4M")
    assert doc["mode"] == "fill"
    assert doc["fill"]["written_bytes"] == 2 * 4 * 2 ** 20
    assert doc["fill"]["write_bytes_per_s"] > 0
    # the host run swaps nothing out: sampled, but no steady rate
    swapout = doc["fill"]["swapout"]
    assert set(swapout) == SWAPOUT_KEYS
    assert swapout["samples"] >= 2 and swapout["error"] is None
    assert swapout["steady_pages_per_s"] is None
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


@pytest.mark.parametrize("args", [
    [],
    ["-p", "2", "-t", "2"],
    ["--fork-share", "--passes", "3"],
    ["--passes", "1"],                      # hook in pass 0, no check
    ["--no-verify"],
])
def test_lost_page_survived_in_place(swapbench, args):
    # The SIGBUS of a failed swap-in at page 10 (as the kernel sends it):
    # the page is lost, written anew, and the run goes on with no
    # mismatch, the process alive.
    doc = run_json(swapbench, "-s", "4M", "--survive-sigbus",
                   "--test-lost-page", "10", *args)
    check_schema(doc)
    assert doc["status"] == "ok" and doc["procs_io_killed"] == 0
    assert doc["config"]["lost_page"] == 10
    t0, *others = doc["tasks"]
    assert t0["lost_pages"] == 1 and t0["mismatches"] == 0
    assert all(t["lost_pages"] == 0 for t in others)
    assert doc["total"]["lost_pages"] == 1
    assert all(p["status"] == "ok" for p in doc["processes"])
    if "--no-verify" not in args:
        # every page is checked by each pass that reads (not pass 0) and
        # at the end, but the lost one by the pass that lost it
        checks = {"--fork-share": 3 * 1024 - 1, "--passes": 1024}
        expect = next((n for a, n in checks.items() if a in args),
                      2 * 1024 - 1)
        assert t0["verified_pages"] == expect
        assert t0["final_verify_pages"] == 1024
    if "--fork-share" in args:
        assert t0["fork_lost_pages"] == 0 and t0["fork_mismatches"] == 0
        assert t0["fork_verified_pages"] == 1024


def test_lost_page_next_to_a_real_crash(swapbench):
    # a SIGBUS not at a page of the task's area still io-kills
    res = run(swapbench, "-s", "4M", "-p", "2", "--survive-sigbus",
              "--test-lost-page", "5", "--test-sigbus-page", "10")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["procs_io_killed"] == 1
    assert doc["processes"][0]["status"] == "io-killed"
    assert doc["tasks"][0]["lost_pages"] == 1


# ---------------------------------------------------------------- options

@pytest.mark.parametrize("args", [
    ["--bogus"], ["-p", "0"], ["-s", "12Q"], ["-s", "-4M"],
    ["--pattern", "zigzag"], ["--mode", "nope"], ["--thp", "always"],
    ["--passes", "0"], ["--runtime", "abc"], ["--size-frac-mem", "0"],
    ["--bg-procs", "2"], ["--mode", "fill", "--passes", "3"],
    ["--fill-frac", "0.5"], ["--work-us", "24", "--work-calibration",
                             "/nonexistent/cal"],
    ["-s", "4M", "--corrupt-page", "5000"], ["extra-arg"],
    ["--step", "0"], ["-t", "100000"], ["--test-sigbus-page", "x"],
    ["--test-lost-page", "x"], ["-s", "4M", "--test-lost-page", "10"],
    ["--fork-share", "--no-verify"], ["--survive-sigbus=1"],
    ["--reread", "--survive-sigbus"], ["--mode", "fill", "--reread"],
    ["--thp-holes", "2"], ["--thp", "nohuge", "--thp-holes", "2"],
    ["--thp", "madvise", "--thp-holes", "0"], ["--page-fill", "noise"],
    ["-s", "4M", "--corrupt-page", "5:%d" % PAGE],
    ["-s", "4M", "--corrupt-page", "5:"],
    ["-s", "4M", "--corrupt-page", "5:x"],
    ["-s", "4M", "--corrupt-page", ":5"],
    ["-s", "4M", "--corrupt-page", "5:8:8"],
])
def test_bad_options_exit_2(swapbench, args):
    res = run(swapbench, *args)
    assert res.returncode == 2
    assert res.stdout == ""
    assert "usage: swapbench" in res.stderr
    assert len(res.stderr.splitlines()[0]) > 10


def test_bad_corrupt_offset_in_environment_exit_2(swapbench):
    res = run(swapbench, "-s", "4M",
              env={"SWAPBENCH_CORRUPT_PAGE": "5:%d" % PAGE})
    assert res.returncode == 2 and res.stdout == ""
    assert "offset must be below the page size" in res.stderr


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


# ---------------------------------------------------------------- swapcycle
#
# Never beyond a usage error or --help: anything else turns the host's
# swap off.  A bogus --device comes first where it does not change the
# error, so that a parsing bug would still stop at the device check.

NO_DEVICE = ["--device", "/nonexistent/swapcycle-test"]


@pytest.mark.parametrize("args,message", [
    (NO_DEVICE, "no COMMAND"),
    (NO_DEVICE + ["--"], "no COMMAND"),
    (NO_DEVICE + ["--bogus", "--", "true"], "unknown option '--bogus'"),
    (NO_DEVICE + ["-x", "--", "true"], "unknown option '-x'"),
    (NO_DEVICE + ["--interval-ms", "0", "--", "true"], "--interval-ms"),
    (NO_DEVICE + ["--interval-ms", "1.5", "--", "true"], "--interval-ms"),
    (NO_DEVICE + ["--interval-ms", "-5", "--", "true"], "--interval-ms"),
    (NO_DEVICE + ["--max-cycles", "-1", "--", "true"], "--max-cycles"),
    (NO_DEVICE + ["--max-cycles", "x", "--", "true"], "--max-cycles"),
    (NO_DEVICE + ["--push-frac-mem", "5", "--", "true"], "--push-frac-mem"),
    (NO_DEVICE + ["--push-frac-mem", "x", "--", "true"], "--push-frac-mem"),
    (["--device=", "--", "true"], "empty --device"),
    (NO_DEVICE + ["--max-cycles"], "needs an argument"),
    (["--device"], "needs an argument"),
])
def test_swapcycle_usage_errors_exit_2(swapcycle, args, message):
    res = run(swapcycle, *args, timeout=5)
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    first = res.stderr.splitlines()[0]
    assert first.startswith("swapcycle: ") and message in first
    assert "usage: swapcycle" in res.stderr


def test_swapcycle_help(swapcycle):
    for flag in ("--help", "-h"):
        res = run(swapcycle, flag, timeout=5)
        assert res.returncode == 0 and res.stderr == ""
        assert res.stdout.startswith("usage: swapcycle")
        for opt in ("--interval-ms", "--device", "--max-cycles"):
            assert opt in res.stdout
        assert "swapcycle: cycle=N swapoff=" in res.stdout


def is_static(path):
    """An ELF without a PT_INTERP program header."""
    data = Path(path).read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2      # 64-bit
    end = "<" if data[5] == 1 else ">"
    phoff, = struct.unpack_from(end + "Q", data, 0x20)
    phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
    types = [struct.unpack_from(end + "I", data, phoff + i * phentsize)[0]
             for i in range(phnum)]
    return 3 not in types                               # PT_INTERP


def test_binaries_static(swapbench, swapcycle):
    assert is_static(swapbench) and is_static(swapcycle)


@pytest.mark.parametrize("mode,words", [("zero", 0), ("half", 31),
                                        ("random", 62)])
def test_page_fill_is_echoed_and_pages_still_verify(swapbench, mode, words):
    """The noise between the stamps is never checked, so every page of
    every fill reads back right; the config says how much a page holds.
    (How compressible that makes a page is measured in a guest, on
    zram: tests/integration/test_zram.py.)"""
    doc = run_json(swapbench, "--size", "4M", "--passes", "2",
                   "--page-fill", mode)
    assert doc["config"]["page_fill_words"] == words
    assert doc["status"] == "ok" and doc["total"]["mismatches"] == 0
