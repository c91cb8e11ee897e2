"""A real key-value store in a guest (issue 26): the repository matrix's
`redis` workload on `beyond` with the `net` fragment its workload adds,
on NVMe. Debian's Redis and redis-benchmark come into the guest with
their libraries (`needs`), load 1.3x the guest's RAM, are queried, and
every value is read back; the figures come from the parse rules."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.cache import cache_root, locked
from lab.calibrate import dilation
from lab.guest import cellspec, runner
from lab.kernel.build import Builder
from lab.progress import Progress
from lab.spec.model import Cell, Matrix

pytestmark = pytest.mark.slow


def test_redis_swaps_and_reads_every_value_back(repo_matrix: Matrix,
                                               tmp_path: Path) -> None:
    plan = repo_matrix.plan(Cell(1, "beyond", "nvme", "redis"))
    assert plan.variant.fragments == ("lab-base", "net")
    root = cache_root()
    with locked(root):
        build = Builder(repo_matrix, root).build(plan.variant,
                                                 Progress("beyond+net"))
    assert build.release.endswith(build.key) and "beyond" in build.release
    assert "CONFIG_UNIX=y" in (Path(build.directory) / "config").read_text()
    spec = cellspec.cell_spec(plan, build, tmp_path / "cell")
    res = runner.run_cell(dilation.prepared(spec, root), root)
    assert res.ok, f"{res.reason}: {res.detail} ({res.console_log})"
    # The guest says which kernel it ran.
    assert res.result["kernel"]["release"] == build.release
    parsed = {k: v["value"] for k, v in
              res.result["workload"]["parsed"].items()}
    mem = res.result["before"]["meminfo_kb"]["MemTotal"] * 1024
    assert parsed["kvstore.keys"] == int(1.3 * mem) // 4000
    assert parsed["kvstore.mismatched"] == parsed["kvstore.missing"] == 0
    for phase in ("uniform", "hot"):
        assert parsed[f"kvstore.{phase}_rps"] > 0
    # A dataset larger than RAM went to swap and came back.
    vm = res.result["delta"]["vmstat"]
    assert vm["pswpout"] > 0 and vm["pswpin"] > 0
    print(f"redis cell on nvme: {res.result['workload']['wall_s']:.1f} s "
          f"in the guest, {parsed['kvstore.uniform_rps']:.0f} GET/s "
          f"uniform, {parsed['kvstore.hot_rps']:.0f} hot")
