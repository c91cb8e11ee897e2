"""Tests for swaprace (workloads/swaprace.c): the race of swap-in against
page-table changes, every page verified.

Host only, tiny areas, short runs, no swap needed: without swap the
mutators still zap, remap, mprotect and fork under the faulters, and every
page is still checked (MADV_PAGEOUT does nothing, or is refused, then).
Run with
    /usr/bin/python3 -m pytest tests/workloads
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "workloads"
BINARY = WORKLOADS / "build" / "swaprace"
SCHEMA = "swaprace/1"
PAGE = os.sysconf("SC_PAGE_SIZE")
OPS = ["dontneed", "remap", "mprotect", "pageout", "fork"]

TOP_KEYS = {"schema", "status", "exit_code", "config", "system", "total",
            "processes", "mismatches"}
CONFIG_KEYS = {"seed", "procs", "faulters", "mutators", "size_per_proc_bytes",
               "size_frac_mem", "runtime_s", "thp", "walk", "write_pct",
               "sub_max_bytes", "ops", "fork_sample_pages", "corrupt_page"}
SYSTEM_KEYS = {"page_size", "mem_total_bytes", "swap_total_bytes", "cpus",
               "kernel"}
OPS_KEYS = {"dontneed", "dontneed_sub", "remap", "remap_sub", "mprotect",
            "mprotect_sub", "pageout", "pageout_sub", "fork"}
COUNT_KEYS = {"verified_pages", "written_pages", "busy_skips",
              "final_verify_pages", "fork_verified_pages",
              "fork_written_pages", "errors", "ops", "mismatches",
              "fork_mismatches", "minflt", "majflt", "pageout_supported",
              "anon_huge_kb_filled", "anon_huge_kb_end", "rss_kb_end",
              "swap_kb_end"}
TOTAL_KEYS = COUNT_KEYS | {"status", "procs", "pages", "race_s"}
PROC_KEYS = COUNT_KEYS | {"index", "pid", "status", "exit_code", "signal",
                          "error", "base", "size_bytes", "pages", "fill_s",
                          "race_s", "final_verify_s"}
MIS_KEYS = {"proc", "who", "fork", "page", "addr", "offset", "gen", "zero",
            "expected", "found", "bad_words"}
SUMMED = ("verified_pages", "written_pages", "busy_skips",
          "final_verify_pages", "fork_verified_pages", "fork_written_pages",
          "errors", "mismatches", "fork_mismatches", "pages")


@pytest.fixture(scope="session")
def swaprace():
    res = subprocess.run(["make", "-C", str(WORKLOADS)], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stderr.lower(), res.stderr
    return str(BINARY)


def run(binary, *args, timeout=60):
    return subprocess.run([binary, *args], capture_output=True, text=True,
                          timeout=timeout)


def check_schema(doc):
    assert set(doc) == TOP_KEYS
    assert doc["schema"] == SCHEMA
    assert set(doc["config"]) == CONFIG_KEYS
    assert set(doc["system"]) == SYSTEM_KEYS
    total = doc["total"]
    assert set(total) == TOTAL_KEYS
    assert set(total["ops"]) == OPS_KEYS
    assert len(doc["processes"]) == doc["config"]["procs"] == total["procs"]
    for p in doc["processes"]:
        assert set(p) == PROC_KEYS
        assert set(p["ops"]) == OPS_KEYS
    for key in SUMMED:
        assert total[key] == sum(p[key] for p in doc["processes"]), key
    for op in OPS_KEYS:
        assert total["ops"][op] == sum(p["ops"][op]
                                       for p in doc["processes"])
    for m in doc["mismatches"]:
        assert set(m) == MIS_KEYS
        assert m["fork"] is (m["who"] == "fork-child")
    assert len(doc["mismatches"]) <= \
        total["mismatches"] + total["fork_mismatches"]


def run_json(binary, *args, rc=0):
    res = run(binary, *args)
    assert res.returncode == rc, res.stderr
    doc = json.loads(res.stdout)
    check_schema(doc)
    assert doc["exit_code"] == rc
    return doc, res.stderr


TINY = ["-s", "8M", "--runtime", "2", "--fork-sample", "64", "-q"]


def test_help(swaprace):
    res = run(swaprace, "-h")
    assert res.returncode == 0 and res.stdout.startswith("usage: swaprace")
    for opt in ("--procs", "--faulters", "--mutators", "--size-frac-mem",
                "--runtime", "--thp", "--walk", "--ops", "--sub-max",
                "--corrupt-page"):
        assert opt in res.stdout


@pytest.mark.parametrize("args,message", [
    (["--procs", "0"], "bad process count"),
    (["--procs", "65"], "bad process count"),
    (["--faulters", "x"], "bad --faulters"),
    (["--mutators", "-1"], "bad --mutators"),
    (["-s", "1M"], "2 MiB range"),
    (["-s", "12Q"], "bad size"),
    (["--size-frac-mem", "0"], "bad --size-frac-mem"),
    (["--runtime", "0"], "bad runtime"),
    (["--thp", "always"], "unknown --thp"),
    (["--walk", "backwards"], "unknown --walk"),
    (["--write-pct", "101"], "bad --write-pct"),
    (["--sub-max", "3K"], "bad --sub-max"),
    (["--sub-max", "2M"], "bad --sub-max"),
    (["--ops", "dontneed,bogus"], "bad --ops"),
    (["--ops", "fork,fork"], "bad --ops"),
    (["--ops", ""], "bad --ops"),
    (["--corrupt-page", "512", "-s", "2M"], "must be a page of the area"),
    (["--corrupt-page", "5", "-s", "2M"], "needs a second one"),
    (["extra"], "unexpected argument"),
    (["--nope"], "unrecognized option"),
])
def test_bad_options(swaprace, args, message):
    res = run(swaprace, *args)
    assert res.returncode == 2
    assert res.stdout == ""
    assert message in res.stderr
    assert "usage: swaprace" in res.stderr


def test_tiny_run_all_ops(swaprace):
    """8 MiB per process, 2 s: every operation runs, every page is
    checked, nothing mismatches (a correct kernel never makes one)."""
    doc, _ = run_json(swaprace, *TINY)
    total = doc["total"]
    assert doc["status"] == "ok" and total["status"] == "ok"
    assert doc["config"]["ops"] == OPS
    assert doc["config"]["size_per_proc_bytes"] == 8 << 20
    assert total["pages"] == 2 * (8 << 20) // PAGE
    assert total["mismatches"] == total["fork_mismatches"] == 0
    assert doc["mismatches"] == []
    assert total["errors"] == 0
    # the final sweep reads every page once
    assert total["final_verify_pages"] == total["pages"]
    assert total["verified_pages"] > total["final_verify_pages"]
    assert total["written_pages"] > 0
    ops = total["ops"]
    for op in ("dontneed", "remap", "mprotect", "fork"):
        assert ops[op] + ops.get(f"{op}_sub", 0) > 0, op
    assert total["fork_verified_pages"] > 0
    assert total["fork_written_pages"] > 0
    for p in doc["processes"]:
        assert p["status"] == "ok" and p["exit_code"] == 0
        assert p["error"] is None
        assert int(p["base"], 16) % (2 << 20) == 0
        assert p["race_s"] >= 2.0


def test_one_op_at_a_time(swaprace):
    for op in OPS:
        doc, _ = run_json(swaprace, *TINY, "--procs", "1", "--ops", op,
                          "--thp", "nohuge", "--runtime", "1")
        ops = doc["total"]["ops"]
        others = [k for k, n in ops.items() if n and
                  k.removesuffix("_sub") != op]
        assert others == [], op
        if op != "pageout":     # refused where there is no swap
            assert ops[op] + ops.get(f"{op}_sub", 0) > 0, op
        assert doc["total"]["mismatches"] == 0


def test_walk_seq_races_as_random_does(swaprace):
    """--walk seq (faulters take the ranges in order) is in the config,
    and races every operation with every page checked."""
    doc, _ = run_json(swaprace, *TINY, "--walk", "seq")
    total = doc["total"]
    assert doc["config"]["walk"] == "seq"
    assert doc["status"] == "ok" and total["mismatches"] == 0
    assert total["verified_pages"] > total["final_verify_pages"]
    assert all(total["ops"][op] + total["ops"].get(f"{op}_sub", 0) > 0
               for op in ("dontneed", "remap", "mprotect", "fork"))
    default, _ = run_json(swaprace, *TINY, "--procs", "1", "--runtime", "1")
    assert default["config"]["walk"] == "random"


def test_no_mutators_only_faults(swaprace):
    doc, _ = run_json(swaprace, *TINY, "--procs", "1", "--mutators", "0",
                      "--write-pct", "100")
    total = doc["total"]
    assert all(n == 0 for n in total["ops"].values())
    assert total["written_pages"] > 0 and total["mismatches"] == 0


def test_corrupt_page_is_caught(swaprace):
    """The negative test: one flipped byte in one page of process 0 must
    be reported once, with its address, and fail the run (exit 3)."""
    doc, err = run_json(swaprace, *TINY, "--corrupt-page", "700", rc=3)
    total = doc["total"]
    assert doc["status"] == "mismatch" and total["status"] == "mismatch"
    assert total["mismatches"] == 1
    assert total["fork_mismatches"] == 0
    [m] = doc["mismatches"]
    p0 = doc["processes"][0]
    assert (m["proc"], m["page"], m["offset"]) == (0, 700, 0)
    assert int(m["addr"], 16) == int(p0["base"], 16) + 700 * PAGE
    # the lowest byte of the head word flipped
    assert int(m["expected"], 16) ^ int(m["found"], 16) == 1
    assert m["who"] in ("faulter", "final") and m["zero"] is False
    assert p0["status"] == "mismatch" and p0["mismatches"] == 1
    assert doc["processes"][1]["mismatches"] == 0
    assert "MISMATCH proc 0" in err


def test_same_seed_same_stamps(swaprace):
    """The stamps and the choices come from the seed; the config says so."""
    a, _ = run_json(swaprace, *TINY, "--procs", "1", "--seed", "7")
    assert a["config"]["seed"] == 7
    assert a["system"]["page_size"] == PAGE
