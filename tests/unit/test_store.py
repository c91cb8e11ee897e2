"""The result store: atomic cell files, resume, bad files, provenance."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lab.errors import LabError
from lab.results import store as store_mod
from lab.spec.matrix import load_matrix
from lab.spec.model import Cell
from lab.results.store import (PROVENANCE, Store, StoreWarning, check_provenance,
                       host_cpu_model, inputs_hash)

ROOT = Path(__file__).resolve().parent.parent.parent

MATRIX = """\
version: 1
trees:
  linux-source-6.1: {}
fragments:
  lab-base: kernels/lab-base.config
variants:
  base: {tree: linux-source-6.1, fragments: [lab-base]}
  readahead:
    tree: linux-source-6.1
    series: [readahead]
    fragments: [lab-base]
    sysctl: {vm.page-cluster: 0}
backends:
  nvme: {kind: nvme, mdts: 9}
  rotational: {kind: rotational, throttle_iops: 150}
workloads:
  seq: {program: swapbench, args: [--pattern, seq]}
guest: {memory: 512M, vcpus: 2, swap: 1G}
repeats: 2
baseline: base
matrices:
  quick: {backends: [nvme], repeats: 2}
  full: {}
  ra: {variants: [base, readahead], baseline: readahead}
"""


@pytest.fixture
def matrix(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "lab-base.config").write_text("CONFIG_SWAP=y\n")
    series = tmp_path / "patches" / "linux-source-6.1" / "readahead"
    series.mkdir(parents=True)
    (series / "series").write_text("")
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX)
    return load_matrix(path)


def provenance(**change):
    prov = {
        "tree": {"package": "linux-source-6.1", "version": "6.1.158-1"},
        "patches": [], "config_sha256": "c" * 64, "build_key": "0123abcd",
        "kernel_release": "6.1.158-base-0123abcd", "qemu_version": "7.2.15",
        "qemu_argv": ["qemu-system-x86_64"], "accel": "kvm", "dilation": 1.0,
        "backend": {"name": "nvme", "kind": "nvme", "params": {"mdts": 9}},
        "guest_device": {"name": "nvme0n1"},
        "workload": {"name": "seq", "argv": ["swapbench"], "seed": 1},
        "matrix_sha256": "m" * 64, "started": "2026-12-03T12:00:00Z",
        "ended": "2026-12-03T12:01:00Z"}
    prov.update(change)
    return prov


def ok_result(cell: Cell, reason=None) -> dict:
    return {"schema": "swaplab-cell/1", "cell": {"id": cell.id},
            "outcome": "failed" if reason else "ok", "reason": reason}


@pytest.fixture
def run(tmp_path, matrix):
    return Store(tmp_path / "cache").create(matrix, "quick",
                                            matrix.cells("quick"))


def test_create_writes_manifest_and_matrix_copy(run, matrix):
    m = json.loads((run.root / "manifest.json").read_text())
    assert m == run.manifest
    # repeat 2 starts with the other variant (Matrix.cells)
    assert m["cells"] == ["base-nvme-seq-r1", "readahead-nvme-seq-r1",
                          "readahead-nvme-seq-r2", "base-nvme-seq-r2"]
    assert m["matrix"]["sha256"] == store_mod.sha256_file(matrix.file)
    assert (run.root / "matrix.yaml").read_text() == MATRIX
    assert m["matrix"]["submatrix"] == "quick"
    assert m["matrix"]["baseline"] == "base"
    assert m["ended"] is None and m["started"].endswith("Z")
    assert m["host"]["cpu_model"]
    run.finish()
    assert json.loads((run.root / "manifest.json").read_text())["ended"]


def test_a_sub_matrix_baseline_is_the_run_baseline(tmp_path, matrix):
    run = Store(tmp_path / "cache").create(matrix, "ra", [])
    assert run.manifest["matrix"]["baseline"] == "readahead"


def test_save_and_load(run, matrix):
    cell = matrix.cells("quick")[0]
    path = run.save(cell, "h1", provenance(), ok_result(cell))
    assert path == run.root / "base-nvme-seq-r1.json"
    rec = run.records()["base-nvme-seq-r1"]
    assert rec.cell == cell and rec.inputs_hash == "h1"
    assert rec.outcome == "ok" and rec.provenance == provenance()
    assert run.log_dir(cell.id) == run.root / "base-nvme-seq-r1"


def test_provenance_required(run, matrix):
    cell = matrix.cells("quick")[0]
    prov = provenance()
    del prov["qemu_argv"], prov["matrix_sha256"]
    with pytest.raises(LabError, match="missing 'qemu_argv'.*missing "
                       "'matrix_sha256'"):
        run.save(cell, "h", prov, ok_result(cell))
    assert not run.cell_file(cell.id).exists()
    with pytest.raises(LabError, match="'accel' is null"):
        check_provenance(provenance(accel=None))
    with pytest.raises(LabError, match="'dilation' is a str"):
        check_provenance(provenance(dilation="1.0"))
    # What only the guest can say may be missing when it never booted.
    check_provenance(provenance(kernel_release=None, guest_device=None))
    assert set(provenance()) == set(PROVENANCE)


def test_failed_write_leaves_nothing(run, matrix, monkeypatch):
    cell = matrix.cells("quick")[0]

    def broken(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(LabError, match="base-nvme-seq-r1.json: no space "
                       "left on device"):
        run.save(cell, "h", provenance(), ok_result(cell))
    assert sorted(p.name for p in run.root.iterdir()) == \
        ["manifest.json", "matrix.yaml"]


KILLER = """\
import os, signal, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from lab.results.store import Run
from lab.spec.model import Cell
import json
root = Path({run!r})
run = Run(root, json.loads((root / "manifest.json").read_text()))
def die(src, dst):               # killed between write and rename
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = die
cell = Cell(2, "base", "nvme", "seq")
run.save(cell, "h", json.loads({prov!r}), {{"outcome": "ok"}})
"""


def test_killed_run_resumes(run, matrix):
    cells = matrix.cells("quick")
    for cell in cells[:2]:
        run.save(cell, f"inputs-{cell.id}", provenance(), ok_result(cell))
    child = subprocess.run(
        [sys.executable, "-c", KILLER.format(
            root=str(ROOT), run=str(run.root),
            prov=json.dumps(provenance()))], capture_output=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert not run.cell_file("base-nvme-seq-r2").exists()
    with pytest.warns(StoreWarning, match=r"\.base-nvme-seq-r2\.json\.tmp.*"
                      "partial"):
        done, todo = run.status()
    assert done == ["base-nvme-seq-r1", "readahead-nvme-seq-r1"]
    assert todo == ["readahead-nvme-seq-r2", "base-nvme-seq-r2"]
    assert run.is_done(cells[0], "inputs-base-nvme-seq-r1")
    assert not run.is_done(cells[0], "other-inputs")
    assert not run.is_done(cells[3], "inputs-base-nvme-seq-r2")


def test_lab_error_is_not_finished(run, matrix):
    cell = matrix.cells("quick")[0]
    run.save(cell, "h", provenance(kernel_release=None, guest_device=None),
             ok_result(cell, reason="lab-error"))
    assert not run.is_done(cell, "h")
    run.save(cell, "h", provenance(), ok_result(cell, reason="panic"))
    assert run.is_done(cell, "h")          # a failure is still a result


def test_a_cell_measured_on_a_busy_host_is_measured_again(run, matrix):
    cell = matrix.cells("quick")[0]
    busy = ok_result(cell)
    busy["timing"] = {"host_load": {"foreign_share": 0.21}}
    run.save(cell, "h", provenance(), busy)
    assert not run.is_done(cell, "h")
    busy["timing"]["host_load"]["foreign_share"] = 0.03
    run.save(cell, "h", provenance(), busy)
    assert run.is_done(cell, "h")


@pytest.mark.parametrize("content,why", [
    ('{"schema": "swaplab-result/1", "cell": {"id"', "unusable"),
    ("", "unusable"),
    ('{"schema": "other/1"}', "not a swaplab-result/1"),
    ('[1, 2]', "not a swaplab-result/1"),
])
def test_corrupt_file_ignored_with_warning(run, matrix, content, why):
    good = matrix.cells("quick")[0]
    run.save(good, "h", provenance(), ok_result(good))
    bad = run.cell_file("readahead-nvme-seq-r1")
    bad.write_text(content)
    with pytest.warns(StoreWarning, match="readahead-nvme-seq-r1.json"):
        records = run.records()
    assert list(records) == ["base-nvme-seq-r1"]
    assert len(run.problems) == 1 and why in run.problems[0]
    with pytest.warns(StoreWarning):
        assert not run.is_done(matrix.cells("quick")[1], "h")


def test_file_must_hold_its_own_cell(run, matrix):
    cells = matrix.cells("quick")
    path = run.save(cells[0], "h", provenance(), ok_result(cells[0]))
    path.rename(run.cell_file(cells[1].id))
    with pytest.warns(StoreWarning, match="holds cell base-nvme-seq-r1"):
        assert run.records() == {}


def test_file_without_provenance_ignored(run, matrix):
    cell = matrix.cells("quick")[0]
    path = run.save(cell, "h", provenance(), ok_result(cell))
    doc = json.loads(path.read_text())
    del doc["provenance"]["build_key"]
    path.write_text(json.dumps(doc))
    with pytest.warns(StoreWarning, match="missing 'build_key'"):
        assert run.records() == {}


def test_runs_by_id_latest_and_prefix(tmp_path, matrix, monkeypatch):
    store = Store(tmp_path / "cache")
    with pytest.raises(LabError, match="no runs"):
        store.open()
    monkeypatch.setattr(time, "gmtime", lambda *a: time.struct_time(
        (2026, 12, 3, 12, 0, 0, 3, 337, 0)))
    a = store.create(matrix, "quick", [])
    b = store.create(matrix, "quick", [])     # same second: a new id
    c = store.create(matrix, "full", [])
    assert (a.id, b.id, c.id) == ("20261203-120000-quick",
                                  "20261203-120000-quick-2",
                                  "20261203-120000-full")
    assert store.ids() == sorted([a.id, b.id, c.id])
    assert store.open("latest").id == b.id
    assert store.open("20261203-120000-full").id == c.id
    assert store.open(a.id).id == a.id          # exact beats prefix
    with pytest.raises(LabError, match="several runs matching '2026'"):
        store.open("2026")
    with pytest.raises(LabError, match="no run matching 'nope'"):
        store.open("nope")


def test_inputs_hash(matrix):
    def plan(repeat: int = 1, variant: str = "base",
             backend: str = "nvme"):
        return matrix.plan(Cell(repeat, variant, backend, "seq"))

    h = inputs_hash(plan(), "key1")
    assert h == inputs_hash(plan(), "key1")
    assert len({h, inputs_hash(plan(), "key2"),
                inputs_hash(plan(repeat=2), "key1"),
                inputs_hash(plan(backend="rotational"), "key1"),
                inputs_hash(plan(), "key1", {"swapbench": "abc"}),
                # same build key, different runtime settings
                inputs_hash(plan(variant="readahead"), "key1")}) == 6


def test_host_cpu_model(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(textwrap.dedent("""\
        processor\t: 0
        vendor_id\t: GenuineIntel
        model name\t: Intel(R) Xeon(R) CPU E5-2699 v3 @ 2.30GHz
        """))
    assert host_cpu_model(info) == \
        "Intel(R) Xeon(R) CPU E5-2699 v3 @ 2.30GHz"
    assert host_cpu_model(tmp_path / "missing")


def test_inputs_hash_tells_a_traced_workload_apart(matrix):
    """Tracing slows every fault: flipping `trace: true` must not reuse
    untraced results; an untraced cell keeps its hash."""
    base = Cell(1, "base", "nvme", "seq")
    before = inputs_hash(matrix.plan(base), "key1")
    traced = dataclasses.replace(matrix.workloads["seq"], trace=True)
    matrix.workloads["seq"] = traced
    try:
        assert inputs_hash(matrix.plan(base), "key1") != before
    finally:
        matrix.workloads["seq"] = dataclasses.replace(traced, trace=False)
    assert inputs_hash(matrix.plan(base), "key1") == before


def test_inputs_hash_counts_a_workload_swap_size(matrix):
    """A workload that boots with its own swap size measures something
    else; one that keeps the guest's keeps its hash."""
    base = Cell(1, "base", "nvme", "seq")
    before = inputs_hash(matrix.plan(base), "key1")
    seq = matrix.workloads["seq"]
    matrix.workloads["seq"] = dataclasses.replace(seq, swap_mib=2048)
    try:
        assert inputs_hash(matrix.plan(base), "key1") != before
    finally:
        matrix.workloads["seq"] = seq
    assert inputs_hash(matrix.plan(base), "key1") == before
