"""swapalign (workloads/swapalign.c) on the host: its steps, its report
and its usage errors. Never with memory pressure here (--push-frac-mem 0:
the guest's pressure is as much as its RAM) and with no swap on the
host, so nothing leaves RAM and every page must read back right."""
import json
import subprocess
from pathlib import Path

import pytest

BINARY = Path(__file__).resolve().parents[2] / "workloads" / "build" / \
    "swapalign"


def swapalign(*args: str) -> subprocess.CompletedProcess[str]:
    if not BINARY.is_file():
        pytest.skip("swapalign not built (make -C workloads)")
    return subprocess.run([str(BINARY), *args], capture_output=True,
                          text=True, timeout=60)


def test_steps_and_report():
    proc = swapalign("--ranges", "3", "--rounds", "2", "--push-frac-mem",
                     "0")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["schema"] == "swapalign/1" and doc["error"] is None
    assert doc["config"] == {"ranges": 3, "rounds": 2,
                             "range_bytes": 2 << 20, "push_bytes": 0,
                             "pinned": doc["config"]["pinned"]}
    steps = [(s["step"], s["round"]) for s in doc["steps"]]
    assert steps == [("nohugepage", 0), ("pageout", 0), ("hugepage", 0),
                     ("read", 0), ("pressure", 1), ("pageout", 1),
                     ("read", 1), ("pressure", 2), ("pageout", 2),
                     ("read", 2), ("pageout", 2), ("write", 3),
                     ("read", 3)]
    # smaps and meminfo are read after the steps that move pages, and
    # only then
    for key in ("swap_kb", "swap_used_kb"):
        measured = {s["step"] for s in doc["steps"] if key in s}
        assert measured == {"pageout", "read", "pressure", "write"}
        assert all(s[key] >= 0 for s in doc["steps"] if key in s)
    assert all(s["bad_pages"] == 0 for s in doc["steps"])
    page = doc["system"]["page_size"]
    assert doc["total"] == {"pages": 3 * (2 << 20) // page,
                            "mismatches": 0}


@pytest.mark.parametrize("args", [
    ["--rounds", "20"], ["--rounds", "0"], ["--ranges", "x"],
    ["--push-frac-mem", "3"], ["--push-frac-mem", "-1"], ["--ranges"],
    ["--bogus"]])
def test_bad_arguments_are_usage_errors(args):
    proc = swapalign(*args)
    assert proc.returncode == 2 and "usage: swapalign" in proc.stderr
    assert proc.stdout == ""
