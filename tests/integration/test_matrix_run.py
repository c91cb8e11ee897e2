"""End to end: a tiny matrix run as a pytest session on two local xdist
workers, results gathered in the controller's store, a comparison table.

One variant pair on one backend with one short workload: `base` and the
same kernel series with 6.1's VMA readahead selected at run time.
"""
from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from lab.kernel.build import Build
from lab.results.record import host_busy
from lab.results.store import Store
from tests.integration.conftest import cell_session
from tests.integration.test_build import BROKEN

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def tiny_matrix(other: str, workload: str) -> str:
    """`base` and one `other` variant, on NVMe, with one workload."""
    return f"""\
trees: {{linux-source-6.1: {{}}}}
fragments: {{lab-base: kernels/lab-base.config}}
variants:
  base:
    tree: linux-source-6.1
    series: [counters, sync-bypass-switch, baseline]
    fragments: [lab-base]
{other}backends:
  nvme: {{kind: nvme, mdts: 9}}
workloads:
{workload}guest: {{memory: 256M, vcpus: 2, swap: 512M}}
baseline: base
matrices:
  quick: {{}}
  full: {{}}
"""


TINY = tiny_matrix("""\
  base-vma61:
    tree: linux-source-6.1
    series: [counters, sync-bypass-switch, baseline]
    fragments: [lab-base]
    sysfs: {kernel/mm/swap/readahead_mode: vma-6.1}
""", """\
  seq:
    program: swapbench
    args: [--pattern, seq, --size-frac-mem, 1.3, --passes, 2]
    timeout: 300
""")


def test_tiny_matrix_on_xdist_workers(base_build: Build, lab_root: Path,
                                      tmp_path: Path) -> None:
    for name in ("kernels", "patches"):
        (tmp_path / name).symlink_to(ROOT / name)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TINY)
    session = cell_session(matrix, lab_root, "--tx", "2*popen", "--dist",
                           "load", "-q", timeout=1800)
    assert session.returncode == 0, session.stdout[-3000:] + \
        session.stderr[-2000:]
    assert "2 passed" in session.stdout
    run = Store(lab_root).open("latest")
    records = run.records()
    assert set(records) == {"base-nvme-seq-r1", "base-vma61-nvme-seq-r1"}
    for rec in records.values():
        assert rec.outcome == "ok"
        assert rec.provenance["kernel_release"].endswith(
            f"-{rec.cell.variant}-{rec.provenance['build_key']}")
        assert rec.result["device"]["name"] == "nvme0n1"
        # the worker names the machine that booted the guest
        assert rec.provenance["host"]["node"] == platform.node()
    vma = records["base-vma61-nvme-seq-r1"].result
    settings = {s["name"]: s for s in vma["settings"]}
    assert settings["kernel/mm/swap/readahead_mode"]["ok"] is True

    table = subprocess.run(
        [sys.executable, "-m", "lab", "--cache", str(lab_root), "compare",
         "base", "base-vma61", "--run", run.id],
        cwd=ROOT, capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert "%change" in table.stdout and "seq on nvme" in table.stdout
    assert "bytes_per_s" in table.stdout
    # One repeat each: the table must not claim significance.
    assert "n=1" in table.stdout and "%*" not in table.stdout

    # A second session reuses the finished results instead of booting
    # again. A cell measured while other work took the host's CPU is not
    # finished (the statistics set it aside) and is measured again: CI
    # stop 37 met one such cell here.
    unfinished = {cid: host_busy(rec.result) for cid, rec in records.items()
                  if not rec.finished}
    assert all(unfinished.values()), unfinished
    if len(unfinished) == len(records):
        pytest.skip(f"reuse not tested: every cell set aside ({unfinished})")
    again = cell_session(matrix, lab_root, "-q", "-rs", timeout=600)
    assert again.returncode == 0, again.stdout[-2000:]
    reused = len(records) - len(unfinished)
    assert f"{reused} skipped" in again.stdout, (unfinished, again.stdout)
    assert "result reused" in again.stdout
    if unfinished:
        assert f"{len(unfinished)} passed" in again.stdout, again.stdout


TWO_BUILDS = tiny_matrix("""\
  broken:
    tree: linux-source-6.1
    series: [counters, sync-bypass-switch, baseline, broken]
    fragments: [lab-base]
""", """\
  short:
    program: swapbench
    args: [--size, 4M, --passes, 1]
""")


def test_a_failed_build_fails_only_its_cells(base_build: Build,
                                             lab_root: Path,
                                             tmp_path: Path) -> None:
    (tmp_path / "kernels").symlink_to(ROOT / "kernels")
    patches = tmp_path / "patches" / "linux-source-6.1"
    patches.mkdir(parents=True)
    for series in ("counters", "sync-bypass-switch", "baseline"):
        (patches / series).symlink_to(ROOT / "patches" / "linux-source-6.1"
                                      / series)
    (patches / "broken").mkdir()
    (patches / "broken" / "0001-broken.patch").write_text(BROKEN)
    (patches / "broken" / "series").write_text("0001-broken.patch\n")
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TWO_BUILDS)
    session = cell_session(matrix, lab_root, "-q", "--new-run", timeout=600)
    out = session.stdout
    assert session.returncode == 1, out[-3000:] + session.stderr[-2000:]
    assert "1 failed, 1 passed" in out, out[-3000:]
    assert "build failed: broken: series 'broken': patch" in out
    assert "0001-broken.patch does not apply" in out
    records = Store(lab_root).open("latest").records()
    assert list(records) == ["base-nvme-short-r1"]
    assert records["base-nvme-short-r1"].outcome == "ok"
