"""Session fixtures for the slow tests: one private lab cache, one build;
the lab's own builds of the repository's variants and the THP workload
boot that test_variants.py and test_safety.py prove kernel paths with.

The private cache shares `trees` and `ccache` with the lab's own cache (a
warm machine does not extract the tree twice); its worktree, build
directories, state and results are its own, so the tests that break
builds or kill runs leave the lab's cache alone. The one real build of
`base` is the lab's own (made there if missing, as `make run` would): a
second one in the private cache cost 3 min 7 s even from a warm ccache.
"""
from __future__ import annotations

import collections
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from lab.cache import cache_root, locked
from lab.calibrate import dilation
from lab.guest import cellspec
from lab.guest import runner
from lab.kernel.build import Build, Builder
from lab.progress import Progress
from lab.spec.matrix import load_matrix
from lab.spec.model import Guest, Matrix

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    shared = cache_root()
    root = tmp_path_factory.mktemp("cache")
    for name in ("trees", "ccache"):
        (shared / name).mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(shared / name)
    yield root
    # Forget the worktree this cache registered in the shared repository.
    shutil.rmtree(root / "work", ignore_errors=True)
    for repo in (shared / "trees").glob("*/*/pristine"):
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"])


@pytest.fixture(scope="session")
def repo_matrix() -> Matrix:
    return load_matrix(ROOT / "matrix.yaml")


@pytest.fixture(scope="session")
def base_build(repo_matrix: Matrix, lab_root: Path) -> Build:
    """The `base` variant of the repository's matrix, from the lab's own
    cache, and the private cache's build of `base` too."""
    shared = Builder(repo_matrix, cache_root())
    with locked(shared.root):
        build = shared.build(repo_matrix.variants["base"], Progress("base"))
    # The state file names the build's directory in the lab's cache.
    state = shared.state_file("base")
    private = lab_root / state.relative_to(shared.root)
    private.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(state, private)
    return build


def cell_session(matrix: Path, lab_root: Path, *args: str,
                 timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """A pytest session over `matrix`'s cells in the cache `lab_root`, as
    `lab run` starts it (extra pytest arguments in `args`)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "lab/cells", "-p",
         "no:cacheprovider", "--matrix", str(matrix), "--lab-cache",
         str(lab_root), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout)


GUEST = Guest(memory_mib=256, vcpus=2, swap_mib=512, firmware="seabios",
              cmdline="")
# A MADV_HUGEPAGE area of 1.3x RAM written and read in order.
_THP_SEQ_AREA = ["swapbench", "--pattern", "seq", "--thp", "madvise",
                 "--size-frac-mem", "1.3"]
THP_SEQ = [*_THP_SEQ_AREA, "--passes", "2", "-q"]


def thp_seq_surviving_sigbus(passes: int) -> list[str]:
    """THP_SEQ over `passes` passes on a drive with media errors: the THPs
    rewritten each pass (swapbench does not combine --reread with
    --survive-sigbus), a page the drive cannot read counted as lost."""
    return [*_THP_SEQ_AREA, "--passes", str(passes), "--warmup-passes",
            "1", "--survive-sigbus", "-q"]


# Below 512 MiB of RAM the kernel starts with THP off: ask for it, and let
# madvised faults compact memory to get huge pages.
THP_ON = {"kernel/mm/transparent_hugepage/enabled": "madvise",
          "kernel/mm/transparent_hugepage/defrag": "madvise"}
# On `beyond`: the mechanisms of thp-swapin and thp-keep-whole without the
# THP readahead stacked on them; the readahead classes of ra-by-device on
# 4 KiB swap-ins (THPs brought back whole read nothing ahead by class).
NO_THP_RA = {"kernel/mm/swap/thp_swapin_readahead": "0"}
NO_THP_SWAPIN = {"kernel/mm/swap/thp_swapin": "never"}


class _Builds(dict[str, Build]):
    """The lab cache's build of each variant a test names, made there on
    first use if missing, as `make run` would."""

    def __init__(self, matrix: Matrix) -> None:
        super().__init__()
        self.matrix = matrix

    def __missing__(self, name: str) -> Build:
        root = cache_root()
        with locked(root):
            build = Builder(self.matrix, root).build(
                self.matrix.variants[name], Progress(name))
        self[name] = build
        return build


@pytest.fixture(scope="session")
def builds(repo_matrix: Matrix) -> dict[str, Build]:
    return _Builds(repo_matrix)


def boot_result(matrix: Matrix, build: Build, backend: str, tmp: Path,
                sysfs: dict[str, str] | None = None, guest: Guest = GUEST,
                argv: list[str] = THP_SEQ,
                sysctl: dict[str, str] | None = None,
                timeout_s: int = 600) -> dict:
    """The result of one THP workload boot that ran clean (within
    `timeout_s` of workload time)."""
    spec = cellspec.CellSpec(
        cell_id=f"proof-{build.variant}-{backend}", build=build,
        backend=matrix.backends[backend], guest=guest, argv=argv,
        out_dir=tmp / f"{build.variant}-{backend}", timeout_s=timeout_s,
        sysfs={**THP_ON, **(sysfs or {})}, sysctl=sysctl or {})
    res = runner.run_cell(dilation.prepared(spec, cache_root()),
                          cache_root())
    assert res.ok, f"{res.reason}: {res.detail} ({res.console_log})"
    assert res.result["workload"]["result"]["total"]["mismatches"] == 0
    return res.result


def boot(matrix: Matrix, build: Build, backend: str, tmp: Path,
         sysfs: dict[str, str] | None = None,
         guest: Guest = GUEST) -> dict[str, int]:
    result = boot_result(matrix, build, backend, tmp, sysfs, guest)
    # The delta lists only the counters that moved.
    vm = collections.defaultdict(int, result["delta"]["vmstat"])
    # THPs were allocated at fault. Not AnonHugePages after pass 1: by
    # then reclaim may have split the PMD of every resident THP (seen:
    # 154 THPs allocated, 154 PMDs split, 0 kB after pass 1).
    assert vm["thp_fault_alloc"] > 0, "no THP at all"
    return vm
