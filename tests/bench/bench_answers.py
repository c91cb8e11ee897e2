"""A/A false positives of the answers' sequential design, resampled from
real stored cells.

For every arm of a run's questions (kernel, backend, workload, primary
metric; an A/A twin's cells count with its reference's, one kernel) with
at least 6 measured cells, the cells are shuffled and split
into two pseudo-arms of the same kernel; the split is answered like a
question (looks from 3 repeats on, alpha spent over them, stopping at
the first decision). Every "better" or "worse" is a false positive.
Prints the rate over all resamples (target: at most 5 % over at least
200), the same with every look tested at 5 % (what the spending
prevents), and the run's own A/A rows.

    /usr/bin/python3 tests/bench/bench_answers.py [--run ID | --results DIR]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lab.cache import cache_root  # noqa: E402
from lab.errors import LabError  # noqa: E402
from lab.results import answers as ans  # noqa: E402
from lab.results.metrics import gather  # noqa: E402
from lab.results.replication import RunAnswers  # noqa: E402
from lab.results.store import (Store, open_results_dir,  # noqa: E402
                               run_matrix)


def resample(values: list[float], rng: random.Random, delta: float,
             naive: bool) -> bool:
    """One A/A split of `values`: did it call a difference?"""
    shuffled = values[:]
    rng.shuffle(shuffled)
    k = len(shuffled) // 2
    return ans.first_look_differs(shuffled[:k], shuffled[k:2 * k], delta,
                                  ans.Design(3, k), naive)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", default="latest")
    ap.add_argument("--results", type=Path)
    ap.add_argument("--resamples", type=int, default=100,
                    help="splits per arm")
    args = ap.parse_args()
    try:
        run = open_results_dir(args.results) if args.results else \
            Store(cache_root()).open(args.run)
        ra = RunAnswers.of(run)
    except LabError as exc:
        print(f"bench_answers: {exc}", file=sys.stderr)
        return 1
    values = gather(ra.records.values()).values
    kernel_of = {name: v.kernel for name, v in run_matrix(run).variants.items()}
    # An arm is one kernel: an A/A twin's cells (same build, same inputs
    # but the name) join its reference's.
    arms: dict[tuple[str, str, str, str], tuple[list[float], float]] = {}
    for q in ra.questions:
        for be in q.backends:
            for v in (q.reference, q.candidate):
                key = (kernel_of[v], be, q.workload, q.metric)
                vals = [x for name, k in kernel_of.items() if k == key[0]
                        for x in values.get((q.workload, be, q.metric, name),
                                            [])]
                if len(vals) >= 6:
                    arms[key] = (vals, q.delta_pct)
    if not arms:
        print(f"run {run.id}: no arm has 6 cells; nothing to resample")
        return 1
    rng = random.Random(20261205)
    total = hits = naive_hits = 0
    print(f"run {run.id}: {len(arms)} arms with at least 6 cells")
    for (v, be, wl, metric), (vals, delta) in sorted(arms.items()):
        h = sum(resample(vals, rng, delta, False)
                for _ in range(args.resamples))
        nh = sum(resample(vals, rng, delta, True)
                 for _ in range(args.resamples))
        total += args.resamples
        hits += h
        naive_hits += nh
        print(f"  {v} {be} {wl} {metric}: n={len(vals)}, "
              f"false positives {h}/{args.resamples} "
              f"(every look at 5 %: {nh})")
    print(f"A/A false positives, sequential design: {hits}/{total} = "
          f"{100 * hits / total:.1f} % (target <= 5 %)")
    print(f"A/A false positives, every look at 5 %: {naive_hits}/{total} = "
          f"{100 * naive_hits / total:.1f} %")
    aa = [a for a in ra.answers if a.question.is_aa]
    print(f"real A/A rows of the run: {len(aa)}, flagged "
          f"{sum(a.flagged for a in aa)}: " + "; ".join(
              f"{a.question.name}/{a.backend} {a.verdict}" for a in aa))
    return 0


if __name__ == "__main__":
    sys.exit(main())
