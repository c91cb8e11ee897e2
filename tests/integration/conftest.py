"""Session fixtures for the slow tests: one private lab cache, one build.

The private cache shares `trees` and `ccache` with the lab's own cache (a
warm machine does not extract the tree twice); its worktree, build
directories, state and results are its own, so the tests that break
builds or kill runs leave the lab's cache alone. The one real build of
`base` is the lab's own (made there if missing, as `make run` would): a
second one in the private cache cost 3 min 7 s even from a warm ccache.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

import pytest

from lab.cache import cache_root, locked
from lab.kernel.build import Build, Builder
from lab.progress import Progress
from lab.spec.matrix import load_matrix
from lab.spec.model import Matrix

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


def shared_build(matrix: Matrix, lab_root: Path, name: str) -> Build:
    """Variant `name` of the repository's matrix, from the lab's own
    cache (built there if missing, as `make run` would), and the private
    cache's build of it too."""
    shared = Builder(matrix, cache_root())
    with locked(shared.root):
        build = shared.build(matrix.variants[name], Progress(name))
    # The state file names the build's directory in the lab's cache.
    state = shared.state_file(name)
    private = lab_root / state.relative_to(shared.root)
    private.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(state, private)
    return build


@pytest.fixture(scope="session")
def base_build(repo_matrix: Matrix, lab_root: Path) -> Build:
    """The `base` variant, in the lab's cache and the private one."""
    return shared_build(repo_matrix, lab_root, "base")


@pytest.fixture(scope="session")
def variant_build(repo_matrix: Matrix,
                  lab_root: Path) -> Callable[[str], Build]:
    """Any variant of the repository's matrix, as base_build gives base."""
    return lambda name: shared_build(repo_matrix, lab_root, name)


def cell_session(matrix: Path, lab_root: Path, *args: str,
                 timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """A pytest session over `matrix`'s cells in the cache `lab_root`, as
    `lab run` starts it (extra pytest arguments in `args`)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "lab/cells", "-p",
         "no:cacheprovider", "--matrix", str(matrix), "--lab-cache",
         str(lab_root), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout)
