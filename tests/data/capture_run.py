"""Copies a few cells of a real lab run into tests/data/results, as the
store wrote them (cell JSON verbatim; logs left out), with a manifest
listing only those cells. The table, statistics and expectation tests
read them as real guest data.

    /usr/bin/python3 tests/data/capture_run.py RUN_DIR NAME CELL...
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results"


def main(run_dir: Path, name: str, cells: list[str]) -> None:
    dest = OUT / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["cells"] = [c for c in manifest["cells"] if c in cells]
    manifest["captured_from"] = manifest["id"]
    manifest["id"] = name
    for dim in ("variants", "backends", "workloads"):
        manifest["matrix"][dim] = [v for v in manifest["matrix"][dim]
                                   if any(f"-{v}-" in f"-{c}" for c in cells)]
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1)
                                        + "\n")
    shutil.copyfile(run_dir / "matrix.yaml", dest / "matrix.yaml")
    for cell in cells:
        shutil.copyfile(run_dir / f"{cell}.json", dest / f"{cell}.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
