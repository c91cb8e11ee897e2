"""How often the answers' sequential design decides, by simulation.

Lognormal cells at a given CV; for each design (first look, last look,
looks every `step` repeats) and true change, the share of simulated
questions decided (better, worse or equivalent within +-10 %) and the
mean n at which they stopped. A true change of 0 is the A/A row: there
"decided" should be "equivalent", and a "better" or "worse" is a false
positive (printed apart; the target is at most 5 %).

    /usr/bin/python3 tests/bench/bench_design.py [--cv 0.18] [--runs 600]
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lab.results import answers as ans  # noqa: E402

DESIGNS = {
    "every repeat 3..12": ans.Design(3, 12),
    "4 looks 3..12": ans.Design(3, 12, step=3),
    "6 looks 3..18": ans.Design(3, 18, step=3),
}
CHANGES = (0.0, -0.10, -0.18, 1.0)


def simulate(design: ans.Design, change: float, cv: float, runs: int,
             seed: int) -> tuple[float, float, float]:
    """(share decided, share called different, mean n at the stop)."""
    rng = random.Random(seed)
    decided = called = 0
    n_sum = 0
    for _ in range(runs):
        ref = [rng.lognormvariate(0, cv) for _ in range(design.max_n)]
        cand = [rng.lognormvariate(math.log1p(change), cv)
                for _ in range(design.max_n)]
        stop = design.max_n
        for n, w in design.slots(design.max_n):
            lk = ans.look(ref[:n], cand[:n], 10.0)
            if lk.p <= ans.ALPHA * w or lk.p_equiv <= ans.ALPHA * w:
                decided += 1
                called += lk.p <= ans.ALPHA * w
                stop = n
                break
        n_sum += stop
    return decided / runs, called / runs, n_sum / runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cv", type=float, default=0.18)
    ap.add_argument("--runs", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"CV {args.cv:.0%}, {args.runs} simulated questions per cell, "
          "delta 10 %")
    print(f"{'design':22s}" + "".join(f"{c:+8.0%} decided/n" for c in
                                      CHANGES) + "   A/A called")
    for name, design in DESIGNS.items():
        row = [simulate(design, c, args.cv, args.runs, args.seed)
               for c in CHANGES]
        print(f"{name:22s}" + "".join(f"{d:10.0%} /{n:5.1f}"
                                      for d, _, n in row)
              + f"{row[0][1]:12.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
