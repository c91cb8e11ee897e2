"""A/A false positives of the answers' sequential design, resampled from
real stored cells.

For every arm of a run's questions (kernel, backend, workload, primary
metric; an A/A twin's cells count with its reference's, one kernel) with
at least 6 measured cells, the cells are split into two pseudo-arms of
the same kernel, up to --resamples different splits per arm (a small arm
has fewer: each split counts once); the split is answered like a
question (looks from 3 repeats on, alpha spent over them, stopping at
the first decision). Every "better" or "worse" is a false positive.
Prints the rate over all splits (target: at most 5 % over at least
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
from lab.results.runmatrix import run_matrix  # noqa: E402
from lab.results.store import Store, open_results_dir  # noqa: E402


Split = tuple[tuple[int, ...], tuple[int, ...]]


def distinct_splits(n: int, wanted: int, rng: random.Random) -> list[Split]:
    """Up to `wanted` different A/A splits of n cells into two halves of
    n // 2 (cell indices, in repeat order within each half). A small arm
    has few: 6 cells split 3/3 only 10 ways, and drawing 100 of them
    would count each split ten times as if they were independent runs."""
    k = n // 2
    seen: set[frozenset[frozenset[int]]] = set()
    out: list[Split] = []
    for _ in range(50 * wanted):
        order = list(range(n))
        rng.shuffle(order)
        a, b = tuple(sorted(order[:k])), tuple(sorted(order[k:2 * k]))
        key = frozenset((frozenset(a), frozenset(b)))
        if key not in seen:
            seen.add(key)
            out.append((a, b))
            if len(out) == wanted:
                break
    return out


def differs(values: list[float], split: Split, delta: float, step: int,
            naive: bool) -> bool:
    """One A/A split of `values`: did it call a difference? (Looks every
    `step` repeats, as the run's sub-matrix plans them.)"""
    a, b = ([values[i] for i in half] for half in split)
    design = ans.Design(3, len(a), step=min(step, max(len(a) - 3, 1)))
    return ans.first_look_differs(a, b, delta, design, naive)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", default="latest")
    ap.add_argument("--results", type=Path)
    ap.add_argument("--resamples", type=int, default=100,
                    help="distinct splits per arm, at most")
    args = ap.parse_args()
    try:
        run = open_results_dir(args.results) if args.results else \
            Store(cache_root()).open(args.run)
        ra = RunAnswers.of(run, run_matrix(run))
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
    print(f"run {run.id}: {len(arms)} arms with at least 6 cells, "
          f"looks every {ra.design.step} repeats")
    for (v, be, wl, metric), (vals, delta) in sorted(arms.items()):
        splits = distinct_splits(len(vals), args.resamples, rng)
        h = sum(differs(vals, sp, delta, ra.design.step, False)
                for sp in splits)
        nh = sum(differs(vals, sp, delta, ra.design.step, True)
                 for sp in splits)
        total += len(splits)
        hits += h
        naive_hits += nh
        print(f"  {v} {be} {wl} {metric}: n={len(vals)}, "
              f"false positives {h}/{len(splits)} distinct splits "
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
