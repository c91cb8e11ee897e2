"""Real kernel builds: Debian tree + patch series + config -> bzImage."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from lab.kernel import tree
from lab.kernel.build import (Build, Builder, BuildFailed, patches_of,
                       read_bzimage_release)
from lab.progress import Progress
from lab.spec.matrix import load_matrix
from lab.spec.model import Matrix

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_variant_builds_with_release_naming_it(repo_matrix: Matrix,
                                              base_build: Build) -> None:
    matrix, build = repo_matrix, base_build
    assert build.bzimage.is_file()
    assert build.release == read_bzimage_release(build.bzimage)
    assert build.release.startswith("6.1.")
    assert build.release.endswith(f"-base-{build.key}")
    series = [p["series"] for p in build.patches]
    assert series and set(series) == set(matrix.variants["base"].series)
    config = build.config.read_text()
    for option in ("CONFIG_SWAP=y", "CONFIG_PCI_MSI=y",
                   "CONFIG_VM_EVENT_COUNTERS=y", "CONFIG_BLK_DEV_PMEM=y",
                   "CONFIG_FUNCTION_GRAPH_TRACER=y", "CONFIG_THP_SWAP=y"):
        assert option in config.splitlines()


def test_unchanged_variant_is_not_rebuilt(repo_matrix: Matrix,
                                         base_build: Build,
                                         lab_root: Path) -> None:
    matrix, build = repo_matrix, base_build
    start = time.monotonic()
    again = Builder(matrix, lab_root).build(matrix.variants["base"],
                                            Progress("base"))
    assert again == build
    assert time.monotonic() - start < 5


def test_every_variant_stack_applies(repo_matrix: Matrix, base_build: Build,
                                     lab_root: Path) -> None:
    """Every variant of base's tree has a series stack that applies in
    order, including those no slow test builds (`beyond`, the debug
    variants): a conflict between two series shows here, in seconds."""
    pristine = tree.prepare(base_build.tree, lab_root)
    for variant in repo_matrix.variants.values():
        if variant.tree == base_build.tree and variant.series:
            # raises LabError naming the patch that does not apply
            tree.apply_series(pristine, patches_of(repo_matrix, variant))


def _write_matrix(tmp: Path, series_files: dict[str, str],
                  fragment: str) -> Path:
    (tmp / "kernels").mkdir(parents=True)
    (tmp / "kernels" / "lab-base.config").write_text(
        (ROOT / "kernels" / "lab-base.config").read_text() + fragment)
    series_dir = tmp / "patches" / "linux-source-6.1" / "s"
    series_dir.mkdir(parents=True)
    for name, text in series_files.items():
        (series_dir / name).write_text(text)
    (series_dir / "series").write_text("\n".join(series_files) + "\n")
    path = tmp / "matrix.yaml"
    path.write_text("""\
trees: {linux-source-6.1: {}}
fragments: {lab-base: kernels/lab-base.config}
variants:
  base: {tree: linux-source-6.1, series: [s], fragments: [lab-base]}
backends: {nvme: {kind: nvme}}
workloads: {seq: {program: swapbench}}
guest: {memory: 512M, vcpus: 2, swap: 1G}
baseline: base
matrices: {quick: {}, full: {}}
""")
    return path


BROKEN = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: swaplab <swaplab@example.org>
Subject: [PATCH] mm, swap: a patch whose context is not in the tree

---
 mm/swap_state.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/mm/swap_state.c b/mm/swap_state.c
--- a/mm/swap_state.c
+++ b/mm/swap_state.c
@@ -10,3 +10,3 @@
 #include <linux/mm.h>
-#include <linux/no-such-header.h>
+#include <linux/another-header.h>
 #include <linux/kernel_stat.h>
"""


def test_broken_patch_fails_and_leaves_tree_pristine(
        base_build: Build, lab_root: Path, tmp_path: Path) -> None:
    good = base_build
    path = _write_matrix(tmp_path, {"0001-broken.patch": BROKEN}, "")
    matrix = load_matrix(path)
    with pytest.raises(BuildFailed) as info:
        Builder(matrix, lab_root).build(matrix.variants["base"],
                                        Progress("base"))
    msg = str(info.value)
    assert "series 's'" in msg and "0001-broken.patch" in msg
    assert "mm/swap_state.c" in msg
    pristine = next((lab_root / "trees").glob("*/*/pristine"))
    status = subprocess.run(["git", "-C", str(pristine), "status",
                             "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""
    assert good.bzimage.is_file(), "another variant's build is intact"


# Breaks init/main.c, which Kbuild compiles early: the build fails
# within a minute or two instead of after the whole tree.
COMPILE_ERROR = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: swaplab <swaplab@example.org>
Subject: [PATCH] init: a patch that applies but does not compile

---
 init/main.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/init/main.c b/init/main.c
--- a/init/main.c
+++ b/init/main.c
@@ -11,3 +11,4 @@
  */
 
+#error "swaplab test: a deliberate compile error"
 #define DEBUG\t\t/* Enable initcall_debug */
"""


def test_compile_error_names_file_and_log(repo_matrix: Matrix,
                                          base_build: Build, lab_root: Path,
                                          tmp_path: Path) -> None:
    good = base_build
    path = _write_matrix(tmp_path, {"0001-no-compile.patch": COMPILE_ERROR},
                         "")
    matrix = load_matrix(path)
    with pytest.raises(BuildFailed) as info:
        Builder(matrix, lab_root).build(matrix.variants["base"],
                                        Progress("base"))
    msg, log = str(info.value), info.value.log
    assert "compile failed; last errors:" in msg
    assert "init/main.c" in msg and "deliberate compile error" in msg
    assert log is not None and "deliberate compile error" in \
        log.read_text(errors="replace")
    pristine = next((lab_root / "trees").glob("*/*/pristine"))
    status = subprocess.run(["git", "-C", str(pristine), "status",
                             "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""
    assert good.bzimage.is_file(), "another variant's build is intact"
    # and the real variant still builds (a no-op: its key is unchanged)
    again = Builder(repo_matrix, lab_root).build(
        repo_matrix.variants["base"], Progress("base"))
    assert again.bzimage == good.bzimage and again.bzimage.is_file()


def test_option_that_does_not_stick_is_named(lab_root: Path,
                                             tmp_path: Path) -> None:
    path = _write_matrix(tmp_path, {},
                         "CONFIG_ZONE_DEVICE=y\n"
                         "# CONFIG_MEMORY_HOTREMOVE is not set\n")
    matrix = load_matrix(path)
    with pytest.raises(BuildFailed) as info:
        Builder(matrix, lab_root).build(matrix.variants["base"],
                                        Progress("base"))
    msg = str(info.value)
    assert "CONFIG_ZONE_DEVICE=y did not stick" in msg
    assert "unmet: MEMORY_HOTREMOVE=n" in msg
