"""How the lab reads swaprace (issue 24's race workload): the verdict, the
metrics, the session's sanity check, the reliability rows and the race
sub-matrix, on real output captured from workloads/build/swaprace on the
host with tiny sizes (tests/data/swaprace/, made by
tests/data/swaprace/capture.sh):

  host-ok.json       swaprace -s 8M --runtime 2 --fork-sample 64 -q
                     (exit 0, every operation, no mismatch)
  host-corrupt.json  ... --corrupt-page 700 (exit 3, one mismatch)

The guest side is tests/data/guest-nvme.frame, a real TCG boot, with the
workload's output replaced by these documents.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab.guest import cellspec, frame, verdict
from lab.kernel.build import Build
from lab.results.faults import VariantFaults, add_cell
from lab.results.metrics import LOWER, NEUTRAL, cell_metrics
from lab.session.cellrun import sanity
from lab.spec.matrix import load_matrix
from lab.spec.model import Backend, Guest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
RACE = DATA / "swaprace"
ARGV = ["swaprace", "--procs", "2", "--size-frac-mem", "0.6"]


def doc(name: str) -> dict:
    return json.loads((RACE / f"{name}.json").read_text())


@pytest.fixture(scope="module")
def real() -> dict:
    return frame.parse((DATA / "guest-nvme.frame").read_bytes())


def classify(tmp_path: Path, payload: dict, argv: list[str] = ARGV):
    release = payload["kernel"]["release"]
    build = Build("dev", "000000000000", release, "linux-source-6.1", "",
                  "", [], "", "", 0.0, str(tmp_path))
    spec = cellspec.CellSpec(payload["cell"], build,
                             Backend("nvme", "nvme", {"mdts": 9}),
                             Guest(256, 2, 512, "seabios", ""), argv,
                             tmp_path, expect_suffix=release)
    return verdict.classify(spec, None, frame.encode(payload), "", False, 0,
                            "", True)


def with_workload(real: dict, wl_doc: dict, exit_code: int) -> dict:
    p = copy.deepcopy(real)
    p["workload"].update(stdout=json.dumps(wl_doc), exit_code=exit_code,
                         signal=None, stderr="")
    return p


def cell_result(wl_doc: dict, outcome: str = "ok") -> dict:
    return {"outcome": outcome, "workload": {"result": wl_doc},
            "before": {"vmstat": {"pswpin": 10}},
            "after": {"vmstat": {"pswpin": 25}},
            "delta": {"vmstat": {"pswpin": 15, "pswpout": 40}}}


def test_captured_documents_are_what_they_claim():
    ok, bad = doc("host-ok"), doc("host-corrupt")
    assert (ok["schema"], ok["exit_code"], ok["status"]) == \
        ("swaprace/1", 0, "ok")
    assert (bad["schema"], bad["exit_code"], bad["status"]) == \
        ("swaprace/1", 3, "mismatch")
    assert bad["total"]["mismatches"] == 1
    assert bad["mismatches"][0]["page"] == 700


def test_ok_run_is_ok(tmp_path, real):
    reason, detail, _ = classify(tmp_path, with_workload(real, doc("host-ok"),
                                                         0))
    assert reason is None, detail


def test_mismatch_exit_is_integrity_error(tmp_path, real):
    reason, detail, _ = classify(
        tmp_path, with_workload(real, doc("host-corrupt"), 3))
    assert reason == "integrity-error", detail


def test_counted_mismatch_fails_even_with_exit_0(tmp_path, real):
    """Belt and braces: a document that counts mismatches fails the cell
    whatever the exit code (by the processes or by fork children)."""
    for key in ("mismatches", "fork_mismatches"):
        d = doc("host-ok")
        d["total"][key] = 2
        reason, detail, _ = classify(tmp_path, with_workload(real, d, 0))
        assert reason == "integrity-error" and "2 mismatched" in detail
    assert verdict.mismatched_pages({"total": {"mismatches": True}}) == 0
    assert verdict.mismatched_pages({"total": None}) == 0
    assert verdict.mismatched_pages(doc("host-corrupt")) == 1


def test_schema_checked_for_swaprace(tmp_path, real):
    p = with_workload(real, {"schema": "swapbench/4"}, 0)
    reason, detail, _ = classify(tmp_path, p)
    assert reason == "workload-error" and "swaprace/1" in detail
    # under a wrapper too
    p = with_workload(real, doc("host-ok"), 0)
    reason, _, _ = classify(tmp_path, p, ["swapcycle", "--", *ARGV])
    assert reason is None


def test_metrics():
    d = doc("host-ok")
    m = cell_metrics(cell_result(d))
    total = d["total"]
    v = m["swaprace.total.verified_pages"]
    assert (v.value, v.unit, v.better, v.headline) == \
        (total["verified_pages"], "pages", NEUTRAL, True)
    mis = m["swaprace.total.mismatches"]
    assert (mis.value, mis.better) == (0, LOWER)
    assert m["swaprace.total.fork_verified_pages"].value == \
        total["fork_verified_pages"] > 0
    for op, n in total["ops"].items():
        assert m[f"swaprace.total.ops.{op}"].value == n
    assert m["vmstat.pswpin"].value == 15
    assert not any(k.startswith("swapbench.") for k in m)
    assert cell_metrics(cell_result(d, "failed")) == {}


def test_sanity_and_reliability_read_the_totals():
    bad = doc("host-corrupt")
    assert sanity(cell_result(doc("host-ok"))) == []
    assert sanity(cell_result(bad)) == ["1 data mismatches"]
    row = VariantFaults("beyond-debug")
    add_cell(row, cell_result(bad))
    total = bad["total"]
    assert row.mismatches == 1 and not row.clean
    assert row.verified_pages == total["verified_pages"] + \
        total["fork_verified_pages"]
    assert row.lost_pages == row.procs_io_killed == 0


def test_race_submatrix():
    """`race` runs race-thp on every variant of `faults` but the debug
    ones, race-thp-debug on the debug builds (plain NVMe: read errors
    would kill swaprace by design), and debug-beyond runs it too."""
    m = load_matrix(ROOT / "matrix.yaml")
    faults, race = m.matrices["faults"], m.matrices["race"]
    assert set(race.variants) == set(faults.variants) | {"everything-debug"}
    assert race.backends == ("nvme",)
    cells = m.cells("race")
    debug = {"beyond-debug", "everything-debug"}
    for c in cells:
        want = "race-thp-debug" if c.variant in debug else "race-thp"
        assert c.workload == want, c
    assert {c.variant for c in cells} == set(race.variants)
    assert "race-thp-debug" in m.matrices["debug-beyond"].workloads
    for name in ("race-thp", "race-thp-debug"):
        wl = m.workloads[name]
        assert wl.program == "swaprace"
        assert (ROOT / "workloads" / "swaprace.c").is_file()
        assert wl.sysfs["kernel/mm/transparent_hugepage/enabled"] == \
            "madvise"
