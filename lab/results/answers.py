"""Answers: every (question, backend) of a run ends in one verdict.

    better / worse by X % [95 % CI]   the difference is significant
    equivalent                          the change lies within +-delta
    undecided                           neither, at the n reached
    no data                             a side has fewer than MIN_N cells

How a verdict is reached, and why each step is valid:

  * The estimate is the ratio of the arms' means, tested by Welch's t on
    its log (lab.results.stats; a %change never reaches -100 %). Samples
    with zeros or negatives use the difference of means over the
    reference mean instead.
  * Looks. With adaptive repeats a question is examined at planned
    looks: at `min_n`, then every `step` repeats, and at `max_n` (the
    data at look n are each arm's first n repeats). Examining the data
    often inflates false positives, so alpha is spent over the looks
    with the Pocock-type function alpha * ln(1 + (e - 1) * n / max_n) of
    Lan and DeMets, and look k tests at its increment w_k * alpha only.
    The sequential p-value min_k(p_k / w_k) is then valid whatever the
    stopping (a union bound over the planned looks: P(p <= u) <=
    sum_k w_k * u = u), so a question may stop the moment it is decided.
    Fewer looks leave more alpha to each: with 10 looks (step 1, n 3 to
    12) the last gets 5.4 % of alpha, with 4 (step 3) 17.2 %. Data that
    stop between two looks (a failed cell, the budget) are tested once in
    that slot, at the n reached, with the slot's weight. A run of fixed
    repeats has one look.
  * Equivalence: two one-sided Welch t tests (TOST) against the margins
    -delta and +delta, each at the look's level, combined like the
    difference test: "equivalent" when p_equiv <= alpha.
  * False discoveries: the primary tests of a run (one per question and
    backend; A/A rows excluded) are controlled together by
    Benjamini-Hochberg at alpha, and q-values are shown. A difference is
    called only when q <= alpha and the last look's 95 % interval
    excludes 0 in the same direction.
  * A/A: a question whose candidate is the reference's own kernel under a
    second name (matrix `same_as`) is a calibration row, judged at alpha
    alone (stricter than BH); "different" there flags the whole run.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from scipy import stats as sps

from lab.results import stats
from lab.spec.decisions import Question

ALPHA = 0.05
MIN_N = stats.MIN_N
NO_DATA = "no data"
UNDECIDED = "undecided"
EQUIVALENT = "equivalent"


@dataclass(frozen=True)
class Design:
    """When a run looks at its data: at min_n, every step repeats after
    it, and at max_n (one look when min_n and max_n are equal)."""
    min_n: int
    max_n: int
    alpha: float = ALPHA
    step: int = 1

    @property
    def looks(self) -> list[int]:
        """The planned looks, in order."""
        return list(range(self.min_n, self.max_n, self.step)) + \
            [self.max_n]

    def next_look(self, n: int) -> int:
        """The first planned look after n values (max_n past the last)."""
        return next((k for k in self.looks if k > n), self.max_n)

    def slots(self, reach: int) -> list[tuple[int, float]]:
        """(n, weight) of each look that data of `reach` values a side
        take: each planned look, or the n reached when the data stop
        before it (once per slot, so the weights still sum to at most
        1)."""
        out = []
        before = 0
        for k in self.looks:
            if reach < self.min_n or reach <= before:
                break
            out.append((min(reach, k), self.weight(k)))
            before = k
        return out

    def spent(self, n: int) -> float:
        """Alpha spent up to and including look n (Pocock type)."""
        if n >= self.max_n:
            return self.alpha
        if n < self.min_n:
            return 0.0
        return self.alpha * math.log(1 + (math.e - 1) * n / self.max_n)

    def weight(self, n: int) -> float:
        """The share of alpha of the slot n falls in (the planned look at
        or after n; the weights of all looks sum to 1)."""
        n = min(n, self.max_n)
        if n < self.min_n:
            return 0.0
        k = n if n in self.looks else self.next_look(n)
        prev = [j for j in self.looks if j < k]
        before = self.spent(prev[-1]) if prev else 0.0
        return (self.spent(k) - before) / self.alpha


@dataclass(frozen=True)
class Look:
    """The comparison at one look."""
    n: int
    pct: float              # %change of the mean, candidate vs reference
    low: float              # 95 % interval of pct
    high: float
    p: float                # two-sided, difference
    p_equiv: float          # TOST against +-delta
    log_ratio: float | None     # estimate and standard error on the
    se: float | None            # log scale (None: not all positive)


def look(ref: Sequence[float], cand: Sequence[float],
         delta_pct: float) -> Look:
    """Candidate against reference (at least 2 values a side)."""
    n = min(len(ref), len(cand))
    t95 = 0.5 + stats.CONFIDENCE / 2
    positive = min(ref) > 0 and min(cand) > 0
    if positive:
        est, se, df = stats.log_ratio_terms(ref, cand)
        lo_m, hi_m = math.log(1 - delta_pct / 100), \
            math.log(1 + delta_pct / 100)
        to_pct = _pct_of_log
    else:
        r, c = stats.summarize(ref), stats.summarize(cand)
        if r.mean == 0:
            raise ValueError("the reference mean is 0: no relative change")
        scale = abs(r.mean)
        se, df = stats.welch_se_df((r.stddev or 0.0) ** 2 / r.n,
                                   (c.stddev or 0.0) ** 2 / c.n, r.n, c.n)
        est, se = (c.mean - r.mean) / scale, se / scale
        lo_m, hi_m = -delta_pct / 100, delta_pct / 100
        to_pct = _pct_of_fraction
    if se == 0:
        # Both sides constant (deterministic counters): exact answers.
        p = 0.0 if est != 0 else 1.0
        p_eq = 0.0 if lo_m < est < hi_m else 1.0
        half = 0.0
    else:
        p = float(2 * sps.t.sf(abs(est) / se, df))
        p_eq = float(max(sps.t.sf((est - lo_m) / se, df),
                         sps.t.cdf((est - hi_m) / se, df)))
        half = float(sps.t.ppf(t95, df)) * se
    return Look(n, to_pct(est), to_pct(est - half), to_pct(est + half), p,
                p_eq, est if positive else None, se if positive else None)


def _pct_of_log(x: float) -> float:
    return 100.0 * math.expm1(x)


def _pct_of_fraction(x: float) -> float:
    return 100.0 * x


@dataclass(frozen=True)
class Answer:
    question: Question
    backend: str
    n_ref: int
    n_cand: int
    last: Look | None           # None: no data
    p: float | None             # sequential, difference
    p_equiv: float | None       # sequential, equivalence
    q: float | None = None      # Benjamini-Hochberg (primary tests only)
    verdict: str = UNDECIDED
    note: str = ""

    @property
    def decided(self) -> bool:
        return self.verdict not in (UNDECIDED, NO_DATA)

    @property
    def nearness(self) -> float:
        """How near a decision (smaller is nearer): the smaller of the
        sequential p-values over alpha."""
        if self.p is None or self.p_equiv is None:
            return math.inf
        return min(self.p, self.p_equiv) / ALPHA

    @property
    def flagged(self) -> bool:
        """An A/A row that found a difference."""
        return self.question.is_aa and self.verdict in ("better", "worse")


def sequential(ref: Sequence[float], cand: Sequence[float],
               delta_pct: float, design: Design
               ) -> tuple[Look, float, float]:
    """(the last look, sequential p, sequential p_equiv) over the looks
    the data reach."""
    reach = min(len(ref), len(cand), design.max_n)
    p_seq = p_eq_seq = 1.0
    last = None
    for n, w in design.slots(reach):
        last = look(ref[:n], cand[:n], delta_pct)
        p_seq = min(p_seq, last.p / w)
        p_eq_seq = min(p_eq_seq, last.p_equiv / w)
    if last is None:
        raise ValueError(f"fewer than {design.min_n} values a side")
    return last, min(p_seq, 1.0), min(p_eq_seq, 1.0)


def first_look_differs(a: Sequence[float], b: Sequence[float],
                       delta_pct: float, design: Design,
                       every_look_at_alpha: bool = False) -> bool:
    """Looking at the design's looks and stopping at the first decision,
    is a difference called? (For A/A checks: the two samples come from
    one kernel.) every_look_at_alpha tests each look at the full alpha,
    the unprotected design the spending replaces, and never stops
    early."""
    for n, w in design.slots(min(len(a), len(b), design.max_n)):
        lk = look(a[:n], b[:n], delta_pct)
        level = ALPHA if every_look_at_alpha else ALPHA * w
        if lk.p <= level:
            return True
        if not every_look_at_alpha and lk.p_equiv <= level:
            return False            # decided: equivalent
    return False


Samples = Mapping[tuple[str, str, str, str], Sequence[float]]


def answer(q: Question, backend: str, values: Samples,
           design: Design) -> Answer:
    """One (question, backend), before false-discovery control."""
    ref = list(values.get((q.workload, backend, q.metric, q.reference), ()))
    cand = list(values.get((q.workload, backend, q.metric, q.candidate),
                           ()))
    if min(len(ref), len(cand)) < max(MIN_N, design.min_n):
        note = "metric not measured" if not ref and not cand else \
            f"n={len(ref)}/{len(cand)}, below {max(MIN_N, design.min_n)}"
        return Answer(q, backend, len(ref), len(cand), None, None, None,
                      verdict=NO_DATA, note=note)
    try:
        last, p, p_eq = sequential(ref, cand, q.delta_pct, design)
    except ValueError as exc:
        return Answer(q, backend, len(ref), len(cand), None, None, None,
                      verdict=NO_DATA, note=str(exc))
    return Answer(q, backend, len(ref), len(cand), last, p, p_eq)


def bh(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg q-values, in the order given."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        q[i] = min(running, 1.0)
    return q


def _verdict(a: Answer, significant: bool) -> str:
    if a.last is None:
        return NO_DATA
    up = a.last.low > 0
    down = a.last.high < 0
    if significant and (up or down):
        if a.question.better == "higher":
            return "better" if up else "worse"
        return "better" if down else "worse"
    if a.p_equiv is not None and a.p_equiv <= ALPHA:
        return EQUIVALENT
    return UNDECIDED


def decide(raw: Sequence[Answer]) -> list[Answer]:
    """Verdicts with Benjamini-Hochberg over the primary tests."""
    primary = [i for i, a in enumerate(raw)
               if not a.question.is_aa and a.p is not None]
    qs = dict(zip(primary, bh([raw[i].p or 0.0 for i in primary])))
    out = []
    for i, a in enumerate(raw):
        if a.question.is_aa:
            q = None
            significant = a.p is not None and a.p <= ALPHA
        else:
            q = qs.get(i)
            significant = q is not None and q <= ALPHA
        out.append(dataclasses.replace(a, q=q,
                                       verdict=_verdict(a, significant)))
    return out


def answer_all(questions: Sequence[Question], values: Samples,
               design: Design) -> list[Answer]:
    """Every (question, backend), decided together."""
    return decide([answer(q, be, values, design)
                   for q in questions for be in q.backends])
