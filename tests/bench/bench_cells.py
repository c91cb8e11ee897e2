"""Where a cell's time goes, per workload and backend of a stored run:
boot (host start to the workload), warm-up (the first pass), measured
passes, final verify, and the rest (collecting, guest shutdown, QEMU
exit). Medians over the run's cells, in host seconds.

    /usr/bin/python3 tests/bench/bench_cells.py [--run ID | --results DIR]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lab.cache import cache_root  # noqa: E402
from lab.results.record import workload_doc  # noqa: E402
from lab.results.store import Store, open_results_dir  # noqa: E402

PARTS = ("boot", "warm-up", "measured", "final verify", "rest", "total")


def parts(result: Mapping[str, Any]) -> dict[str, float] | None:
    timing = result.get("timing") or {}
    wl = result.get("workload") or {}
    total, boot = timing.get("host_total_s"), timing.get("host_to_workload_s")
    wall = wl.get("wall_s")
    doc = workload_doc(result)
    tasks = [t for t in doc.get("tasks") or []
             if t.get("elapsed_s") is not None]
    if None in (total, boot, wall) or not tasks:
        return None
    first = max(t.get("first_pass_s") or 0.0 for t in tasks)
    elapsed = max(t["elapsed_s"] for t in tasks)
    # --serial-final-verify sweeps one task after the other
    sweeps = [t.get("final_verify_s") or 0.0 for t in tasks]
    serial = (doc.get("config") or {}).get("serial_final_verify")
    verify = sum(sweeps) if serial else max(sweeps)
    # A fill has one pass, measured whole: no warm-up.
    warm = 0.0 if doc.get("mode") == "fill" else first
    return {"boot": boot, "warm-up": warm, "measured": elapsed - warm,
            "final verify": verify,
            "rest": total - boot - elapsed - verify, "total": total}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", default="latest")
    ap.add_argument("--results", type=Path)
    args = ap.parse_args()
    run = open_results_dir(args.results) if args.results else \
        Store(cache_root()).open(args.run)
    by_kind: dict[tuple[str, str], list[dict[str, float]]] = {}
    for rec in run.records().values():
        p = parts(rec.result) if rec.outcome == "ok" else None
        if p:
            by_kind.setdefault((rec.cell.workload, rec.cell.backend),
                               []).append(p)
    print(f"run {run.id}: median host seconds per cell")
    print(f"{'workload':16} {'backend':10} {'n':>3} " +
          " ".join(f"{p:>12}" for p in PARTS))
    for (wl, be), rows in sorted(by_kind.items()):
        med = {p: statistics.median(r[p] for r in rows) for p in PARTS}
        print(f"{wl:16} {be:10} {len(rows):>3} " +
              " ".join(f"{med[p]:>12.1f}" for p in PARTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
