"""cellrun.inputs(): what makes a stored result reusable for a cell."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lab.guest import qemu
from lab.kernel.build import Build
from lab.session import cellrun
from lab.spec.matrix import load_matrix
from lab.spec.model import Cell

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache holding a calibration for the built swapbench, so that
    inputs() does not measure one."""
    if not cellrun.SWAPBENCH.is_file():
        pytest.skip("swapbench not built (make -C workloads)")
    digest = hashlib.sha256(cellrun.SWAPBENCH.read_bytes()).hexdigest()[:16]
    cal = tmp_path / "calibration" / f"swapbench-{digest}.txt"
    cal.parent.mkdir(parents=True)
    cal.write_text("loops_per_us 100\n")
    return tmp_path


def inputs(cache: Path) -> str:
    matrix = load_matrix(REPO / "matrix.yaml")
    build = Build(variant="base", key="0123456789ab", release="6.1-base",
                  tree="linux-source-6.1", tree_version="", commit="",
                  patches=[], config_sha256="", compiler="", seconds=0.0,
                  directory=str(cache))
    return cellrun.inputs(matrix.plan(Cell(1, "base", "nvme", "seq")), build,
                          cache)


def test_inputs_follow_the_base_cmdline(cache, monkeypatch):
    ramfs = inputs(cache)
    assert inputs(cache) == ramfs
    monkeypatch.setattr(qemu, "BASE_CMDLINE", tuple(
        w for w in qemu.BASE_CMDLINE if w != "rootfstype=ramfs"))
    assert inputs(cache) != ramfs


def test_inputs_follow_the_calibration(cache):
    before = inputs(cache)
    cal = next((cache / "calibration").glob("swapbench-*.txt"))
    cal.write_text("loops_per_us 101\n")
    assert inputs(cache) != before


def test_inputs_follow_the_cells_own_programs_only(cache, monkeypatch,
                                                  tmp_path):
    """A rebuilt swaprace, or a new program dropped into workloads/build,
    leaves a swapbench cell's stored result reusable; a rebuilt
    swapbench does not."""
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    for name in ("swapbench", "swaprace", "swapcycle"):
        (build_dir / name).write_bytes(name.encode())
    monkeypatch.setattr(cellrun.cellspec, "WORKLOADS_BUILD", build_dir)
    matrix = load_matrix(REPO / "matrix.yaml")
    assert [p.name for p in cellrun.programs(
        matrix.plan(Cell(1, "base", "nvme", "swapoff-load")))] == \
        ["swapcycle", "swapbench"]
    before = inputs(cache)
    (build_dir / "swaprace").write_bytes(b"rebuilt")
    (build_dir / "usemem").write_bytes(b"new")
    assert inputs(cache) == before
    (build_dir / "swapbench").write_bytes(b"rebuilt")
    assert inputs(cache) != before


def test_a_swap_file_that_damaged_its_file_system_is_not_trusted():
    ok = {"swap_file_check": {"files": 2000, "bad": 0, "unreadable": 0}}
    assert cellrun.sanity(ok) == []
    bad = {"swap_file_check": {"files": 2000, "bad": 3, "unreadable": 0,
                               "first_bad": "/run/swapfs/fill/000012"}}
    [problem] = cellrun.sanity(bad)
    assert "3 of 2000 filler files changed" in problem
    assert "/run/swapfs/fill/000012" in problem
