"""Build performance figures for issue 2's targets; prints numbers.

  cold:    every variant of the quick matrix from an empty cache
           (tree extraction, no ccache)            target <= 15 min
           beyond-6.12 alone from another empty cache (linux-source-6.12
           extracted, the 6.12 series)             target <= 12 min
  rebuild: one variant after its mm/ patch series changes
           (an extra one-line mm/ patch)           target <= 2 min
  no-op:   `lab build` again with nothing changed  target < 5 s

Usage: /usr/bin/python3 tests/bench/bench_build.py [--cold [WHICH]] [--cache DIR]
Without --cold the cache given (default: the lab's) is used as it is, so
the cold figures are only measured on request (they take a while);
`--cold quick` or `--cold beyond-6.12` times one of the two alone.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lab.cache import cache_root  # noqa: E402
from lab.kernel.build import Builder  # noqa: E402
from lab.progress import Progress  # noqa: E402
from lab.spec.matrix import load_matrix  # noqa: E402


def build_all(matrix_file: Path, root: Path, names: list[str]) -> float:
    matrix = load_matrix(matrix_file)
    builder = Builder(matrix, root)
    start = time.monotonic()
    for name in names:
        progress = Progress(name)
        build = builder.build(matrix.variants[name], progress)
        progress.finish(f"built {build.release}")
    return time.monotonic() - start


def extra_patch_copy(tmp: Path, variant: str, root: Path) -> Path:
    """A copy of matrix + patches where `variant`'s last series has one
    more mm/ patch (a comment line), as if a patch had been edited; the
    pristine tree it patches is looked up in the cache `root`."""
    shutil.copytree(ROOT / "kernels", tmp / "kernels")
    shutil.copytree(ROOT / "patches", tmp / "patches")
    shutil.copy(ROOT / "matrix.yaml", tmp / "matrix.yaml")
    matrix = load_matrix(tmp / "matrix.yaml")
    v = matrix.variants[variant]
    series_dir = matrix.series_dir(v.tree, v.series[-1])
    stamp = time.strftime("%Y%m%d%H%M%S")
    patch = f"""\
From: swaplab <swaplab@example.org>
Subject: [PATCH] mm, swap: benchmark edit {stamp}

Signed-off-by: swaplab <swaplab@example.org>
---
diff --git a/mm/swap_state.c b/mm/swap_state.c
--- a/mm/swap_state.c
+++ b/mm/swap_state.c
@@ -1,2 +1,3 @@
+/* swaplab build benchmark {stamp} */
"""
    head = subprocess.run(
        ["git", "show", "pristine:mm/swap_state.c"], capture_output=True,
        text=True, cwd=next((root / "trees").glob(
            f"{v.tree}/*/pristine"))).stdout.splitlines()[:2]
    patch += "".join(f" {line}\n" for line in head)
    (series_dir / "9999-bench.patch").write_text(patch)
    with open(series_dir / "series", "a") as listing:
        listing.write("9999-bench.patch\n")
    return tmp / "matrix.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", nargs="?", const="all",
                        choices=["all", "quick", "beyond-6.12"],
                        help="also time builds from an empty cache")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--variant", default="readahead",
                        help="variant for the rebuild figure")
    args = parser.parse_args()
    root = cache_root(str(args.cache) if args.cache else None)
    names = list(load_matrix(ROOT / "matrix.yaml").sub("quick").variants)
    figures = []
    if args.cold in ("all", "quick"):
        with tempfile.TemporaryDirectory(prefix="swaplab-cold.") as cold:
            secs = build_all(ROOT / "matrix.yaml", Path(cold), names)
            figures.append(("cold build, quick variants", secs, 15 * 60))
    if args.cold in ("all", "beyond-6.12"):
        with tempfile.TemporaryDirectory(prefix="swaplab-cold.") as cold:
            secs = build_all(ROOT / "matrix.yaml", Path(cold),
                             ["beyond-6.12"])
            figures.append(("cold build, beyond-6.12", secs, 12 * 60))
    build_all(ROOT / "matrix.yaml", root, names)  # warm up, uncounted
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "lab", "--cache", str(root),
                    "build"], cwd=ROOT, check=True, capture_output=True)
    figures.append(("no-op lab build", time.monotonic() - start, 5))
    with tempfile.TemporaryDirectory(prefix="swaplab-edit.") as tmp:
        edited = extra_patch_copy(Path(tmp), args.variant, root)
        secs = build_all(edited, root, [args.variant])
        figures.append((f"rebuild {args.variant} after an mm/ patch edit",
                        secs, 120))
    print(f"\n{'figure':48} {'seconds':>9} {'target':>8}")
    for name, secs, target in figures:
        mark = "ok" if secs <= target else "OVER"
        print(f"{name:48} {secs:9.1f} {target:8.0f}  {mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
