"""Adaptive repeats: after the sub-matrix's minimum, each further repeat
goes to the questions still undecided, nearest a decision first, until
every question is decided, reaches max_repeats, or the budget is spent.

The stopping rule is the one lab.results.answers makes valid: alpha is
spent over the looks, so stopping a question when it is decided keeps
its false-positive rate at alpha. A/A rows come last: they calibrate,
they do not compete for the budget with the questions.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable

from lab.results.replication import RunAnswers
from lab.results.record import CellRecord
from lab.results.store import Run
from lab.spec.model import Cell, Matrix

# A cell whose kind has never run yet is budgeted at this (a TCG NVMe
# cell takes 15 to 35 s; the next round measures it).
UNKNOWN_CELL_S = 60.0


@dataclass(frozen=True)
class Round:
    cells: list[Cell]
    estimate_s: float
    decided: int
    questions: int          # (question, backend) pairs, A/A rows aside
    capped: int             # undecided at max_repeats


def cell_seconds(records: Iterable[CellRecord]) -> dict[tuple[str, str],
                                                        float]:
    """Median host seconds per (backend, workload) of the stored cells."""
    times: dict[tuple[str, str], list[float]] = {}
    for rec in records:
        total = (rec.result.get("timing") or {}).get("host_total_s")
        if isinstance(total, (int, float)):
            times.setdefault((rec.cell.backend, rec.cell.workload),
                             []).append(float(total))
    return {k: statistics.median(v) for k, v in times.items()}


def next_round(matrix: Matrix, sub_name: str, run: Run,
               budget_left_s: float | None) -> Round:
    """Each arm of every undecided question up to its next look, the
    nearest to a decision first, cut to what the budget still allows."""
    sub = matrix.sub(sub_name)
    ra = RunAnswers.of(run, matrix)
    primary = ra.primary
    undecided = [a for a in ra.answers if not a.decided]
    todo = sorted((a for a in undecided
                   if min(a.n_ref, a.n_cand) < sub.max_repeats),
                  key=lambda a: (a.question.is_aa, a.nearness))
    last: dict[tuple[str, str, str], int] = {}
    for rec in ra.records.values():
        c = rec.cell
        key = (c.variant, c.backend, c.workload)
        last[key] = max(last.get(key, 0), c.repeat)
    seconds = cell_seconds(ra.records.values())
    counted: dict[tuple[str, str, str], int] = {}   # values, with planned
    picked: list[Cell] = []
    estimate = 0.0
    for a in todo:
        q = a.question
        # Below the minimum (cells failed, or a first session cut short
        # by the budget) fill up to it; beyond it, up to the next look.
        target = max(sub.repeats,
                     ra.design.next_look(min(a.n_ref, a.n_cand)))
        add: list[Cell] = []
        reached: dict[tuple[str, str, str], int] = {}
        for variant, have in ((q.reference, a.n_ref),
                              (q.candidate, a.n_cand)):
            key = (variant, a.backend, q.workload)
            count = max(counted.get(key, 0), have)
            repeat = last.get(key, 0)
            # An arm whose cells keep failing gets no further repeats
            # past twice the cap: the question stays undecided.
            while count < target and repeat < 2 * sub.max_repeats:
                repeat += 1
                count += 1
                add.append(Cell(repeat, *key))
            reached[key] = count
        cost = sum(seconds.get((c.backend, c.workload), UNKNOWN_CELL_S)
                   for c in add)
        if budget_left_s is not None and estimate + cost > budget_left_s:
            continue
        picked += add
        counted.update(reached)
        last.update({(c.variant, c.backend, c.workload): c.repeat
                     for c in add})
        estimate += cost
    cells = sorted(picked, key=lambda c: (
        c.repeat, c.workload, c.backend,
        matrix.order(sub_name, c.repeat, c.workload,
                     c.backend).index(c.variant)))
    return Round(cells, estimate, sum(a.decided for a in primary),
                 len(primary), sum(1 for a in undecided
                                   if not a.question.is_aa and
                                   min(a.n_ref, a.n_cand)
                                   >= sub.max_repeats))
