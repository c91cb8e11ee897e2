"""The run order as a covariate: is the first cell after a change of
workload or backend slower than the rest?

Each cell boots its own guest, but the host's caches (the disk image,
the kernel, QEMU itself) carry over from one cell to the next, and
matrix.py measured the first slot after a change of backend as up to a
third slower on pmem. The order is randomised per block (Matrix.order),
so such an effect adds noise rather than bias; this module makes it
visible. A cell counts as "first" when the cell run before it (by
provenance start time) had another workload or backend, or when it
opened the run or a resumed session (more than a minute after the one
before it ended).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from scipy import stats as sps

from lab.results.metrics import cell_metrics
from lab.results.record import CellRecord
from lab.results.store import seconds

# A gap this long between one cell's end and the next one's start means a
# new session (a resumed run): the host's caches may have gone cold.
SESSION_GAP_S = 60.0


@dataclass(frozen=True)
class OrderEffect:
    """The first slot against the rest: log value = arm mean + beta *
    first, fitted within arms (fixed effects), so an arm that happened to
    run first more often does not lend the effect its level."""
    workload: str
    backend: str
    metric: str
    first: int              # cells in the first slot
    rest: int
    pct: float              # expm1(beta), in %
    low: float              # its 95 % interval
    high: float
    p: float                # two-sided, beta = 0


def first_flags(records: Iterable[CellRecord]) -> dict[str, bool]:
    """Cell id -> whether it ran first after a change (see above); cells
    without start and end times are left out."""
    timed = sorted((r for r in records
                    if r.provenance.get("started") and
                    r.provenance.get("ended")),
                   key=lambda r: (r.provenance["started"], r.cell.id))
    out: dict[str, bool] = {}
    prev: CellRecord | None = None
    for rec in timed:
        out[rec.cell.id] = prev is None or \
            (prev.cell.workload, prev.cell.backend) != \
            (rec.cell.workload, rec.cell.backend) or \
            seconds(rec.provenance["started"]) - \
            seconds(prev.provenance["ended"]) > SESSION_GAP_S
        prev = rec
    return out


def order_effect(records: Sequence[CellRecord], workload: str, backend: str,
                 metric: str) -> OrderEffect | None:
    """The first slot's effect on `metric` in one (workload, backend), or
    None when either group has fewer than 2 cells in arms of 2 or more,
    or a value is not positive (the fit is on the log scale)."""
    flags = first_flags(records)
    arms: dict[str, list[tuple[float, int]]] = {}
    for rec in records:
        c = rec.cell
        if (c.workload, c.backend) != (workload, backend) or \
                c.id not in flags:
            continue
        m = cell_metrics(rec.result).get(metric)
        if m is None:
            continue
        if m.value <= 0:
            return None
        arms.setdefault(c.variant, []).append((math.log(m.value),
                                               int(flags[c.id])))
    # Within each arm: x is 1 for a first cell, y its log value, both
    # centred on the arm's means; beta is the pooled slope.
    centred: list[tuple[float, float]] = []
    n_first = n = 0
    for values in arms.values():
        if len(values) < 2:
            continue            # a lone cell says nothing within its arm
        my = sum(v for v, _ in values) / len(values)
        mx = sum(f for _, f in values) / len(values)
        for v, f in values:
            centred.append((f - mx, v - my))
            n_first += f
            n += 1
    sxx = sum(x * x for x, _ in centred)
    df = n - sum(len(v) >= 2 for v in arms.values()) - 1
    if n_first < 2 or n - n_first < 2 or sxx == 0 or df < 1:
        return None
    sxy = sum(x * y for x, y in centred)
    beta = sxy / sxx
    sse = sum((y - beta * x) ** 2 for x, y in centred)
    se = math.sqrt(sse / df / sxx)
    half = float(sps.t.ppf(0.975, df)) * se
    p = float(2 * sps.t.sf(abs(beta) / se, df)) if se else \
        float(beta == 0)
    return OrderEffect(workload, backend, metric, n_first, n - n_first,
                       100 * math.expm1(beta), 100 * math.expm1(beta - half),
                       100 * math.expm1(beta + half), p)
