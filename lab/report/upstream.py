"""Upstream first: which of our patch series to send first, and why.

Candidates are the series a run's variants add on top of the baseline's
that upstream has not merged (matrix `merged`; the baseline's own series
are scaffolding). A series is judged on the pairs of variants that differ
only by it (readahead vs base, thp-swapin vs thp-stage2), the same build
otherwise; an A/A twin (`same_as`) never makes a pair of its own. A
series that no pair separates is judged together with the others of the
smallest pair that holds it, and only when none of those is judged
alone, merged or scaffolding: a bundle never stands beside its parts.

Each workload is judged on one primary metric: the metric of the run's
question on that workload, else swapbench's throughput. All primary
comparisons of a ranking form one Benjamini-Hochberg family: a win or a
loss needs q <= 5 % and the interval on the same side of 0. Risks
(lab.report.upstreamrisk) are listed beside, never netted against wins.

Ranking, best first: no blocking risk (data corrupted, new kernel
complaints), more wins minus losses, the larger guaranteed gain (the
lower CI bound of the best win), fewer kinds of risk, fewer code lines.
Two neighbours are "separated" only when the data says so; otherwise
their order is by cost, and said so. A series sits on the ones every
variant of matrix.yaml applies before it (`needs`): the send order is
the ranking with those constraints. "Send X first" is said only when X
has a win, no loss and no blocking risk; else "No recommendation".

The merged series are ranked alike, as their own family, for the
backtest against what upstream did (lab.report.backtest).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

from lab.report.analysis import Results
from lab.report.effect import Effect, gain, pct_text, what
from lab.report.upstreamrisk import Risks, flags, pair_effects, risks
from lab.results.answers import ALPHA, bh
from lab.report.patchseries import added, lines_changed, needs
from lab.spec.model import Matrix

# The backtest's candidates, in words (lab.report.verdict's `pool`).
MERGED = "merged series"


@dataclass
class Candidate:
    series: tuple[str, ...]             # several: no pair separates them
    tree: str
    pairs: list[tuple[str, str]]        # (with, without)
    effects: list[Effect]               # primary metrics, q-judged
    lines: int
    risks: Risks
    needs: tuple[str, ...] = ()         # series applied before it
    interactions: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " + ".join(self.series)

    def judged(self) -> list[tuple[Effect, tuple[float, float, float]]]:
        return [(e, g) for e in self.effects if (g := gain(e))]

    @property
    def wins(self) -> int:
        return sum(1 for e, g in self.judged()
                   if e.change.significant and g[0] > 0)

    @property
    def losses(self) -> int:
        return sum(1 for e, g in self.judged()
                   if e.change.significant and g[0] < 0)

    @property
    def unjudged(self) -> bool:
        """No comparison had 3 repeats a side: nothing can rank it."""
        return all(e.change.verdict == "n<3" for e in self.effects)

    @property
    def assured(self) -> float:
        """The largest lower CI bound among significant improvements."""
        return max([g[1] for e, g in self.judged()
                    if e.change.significant and g[0] > 0], default=0.0)

    @property
    def recommendable(self) -> bool:
        return self.wins > 0 and not self.losses and not self.risks.blocking


@dataclass
class Ranking:
    ranked: list[Candidate]
    separation: list[str]               # ranked[i] vs ranked[i + 1]
    unranked: dict[str, str]            # series -> why not ranked
    order: list[Candidate]              # the send order

    def find(self, series: str) -> Candidate | None:
        return next((c for c in self.ranked if series in c.series), None)


@dataclass
class Recommendation(Ranking):
    baseline: str = ""
    metrics: str = ""                   # what the effects were measured on
    merged: Ranking | None = None       # the series upstream has merged

    def find(self, series: str) -> Candidate | None:
        """A candidate of either ranking that holds `series`."""
        return super().find(series) or (self.merged.find(series)
                                        if self.merged else None)


# --------------------------------------------------------------- effects

def primary_metric(res: Results, matrix: Matrix, workload: str) -> str | None:
    """The metric a workload is judged on: its question's, else the
    throughput of swapbench's measured group."""
    sub = matrix.matrices.get(res.source.submatrix)
    for name in sub.questions if sub else ():
        q = matrix.questions[name]
        if q.workload == workload and q.metric in res.samples.info:
            return q.metric
    return res.throughput(workload)


def _effects(res: Results, matrix: Matrix, with_: str,
             without: str) -> list[Effect]:
    # A workload without a primary metric (faults, swapalign) is judged
    # on nothing: it counts only as risks.
    return pair_effects(res, with_, without,
                        lambda wl: [primary_metric(res, matrix, wl)])


def controlled(effects: Sequence[Effect]) -> list[Effect]:
    """The effects with Benjamini-Hochberg q-values over the family; an
    effect whose q exceeds ALPHA is not significant whatever its own
    interval says."""
    tested = [i for i, e in enumerate(effects) if e.change.p is not None]
    qs = dict(zip(tested, bh([effects[i].change.p or 0.0
                              for i in tested])))
    out = []
    for i, e in enumerate(effects):
        q = qs.get(i)
        change = e.change
        if q is not None and q > ALPHA and change.significant:
            change = dataclasses.replace(change, verdict="ns")
        out.append(dataclasses.replace(e, change=change, q=q))
    return out


def _disjoint(a: tuple[float, float, float],
              b: tuple[float, float, float]) -> bool:
    return a[1] > b[2] or b[1] > a[2]


def _interactions(effects: Sequence[Effect]) -> list[str]:
    """Where the same candidate's effect differs by device or by the
    variant it is added to (CIs that do not overlap)."""
    out = []
    # (workload, metric) -> each effect with its gain and its %change
    keyed: dict[tuple[str, str],
                list[tuple[Effect, tuple[float, float, float], float]]] = {}
    for e in effects:
        g = gain(e)
        if g and e.change.pct is not None:
            keyed.setdefault((e.workload, e.metric), []).append(
                (e, g, e.change.pct))
    for (wl, metric), items in keyed.items():
        for i, (e1, g1, pct1) in enumerate(items):
            for e2, g2, pct2 in items[i + 1:]:
                # One difference at a time: another device and another
                # starting variant together would not say which it was.
                if (e1.backend == e2.backend) == (e1.without == e2.without) \
                        or not _disjoint(g1, g2):
                    continue
                how = (f"by device ({e1.backend} vs {e2.backend})"
                       if e1.without == e2.without else
                       f"with what it is added to ({e1.without} vs "
                       f"{e2.without})")
                out.append(f"{what(e1)} on {wl} differs {how}: "
                           f"{pct_text(pct1)} vs "
                           f"{pct_text(pct2)}, CIs do not overlap")
        backends = {e.backend for e, _, _ in items}
        if len(backends) > 1 and not any(f"on {wl} differs" in t and
                                         what(items[0][0]) in t
                                         for t in out):
            out.append(f"{what(items[0][0])} on {wl}: no evidence the "
                       f"effect depends on the device (CIs overlap across "
                       f"{', '.join(sorted(backends))})")
    return out


# --------------------------------------------------------------- ranking

def _key(c: Candidate) -> tuple[bool, int, float, int, int]:
    return (c.risks.blocking, -(c.wins - c.losses), -c.assured,
            c.risks.count, c.lines)


def _separated(a: Candidate, b: Candidate) -> str | None:
    """Why the data ranks `a` above `b`; None when it cannot tell."""
    if a.risks.blocking != b.risks.blocking:
        return (f"{a.name} ranks above {b.name}: {b.name}'s runs show "
                f"{'; '.join(b.risks.lines()[:2])}")
    ga = {(e.workload, e.backend, e.metric): (e, g) for e, g in a.judged()}
    for e, gb in b.judged():
        hit = ga.get((e.workload, e.backend, e.metric))
        if hit and hit[1][1] > gb[2]:
            return (f"{a.name} ranks above {b.name}: on {e.workload}/"
                    f"{e.backend} its {what(e)} gain "
                    f"{pct_text(hit[1][0])} [{hit[1][1]:+.1f}, "
                    f"{hit[1][2]:+.1f}] lies wholly above "
                    f"{pct_text(gb[0])} [{gb[1]:+.1f}, {gb[2]:+.1f}]")
    if a.wins - a.losses != b.wins - b.losses:
        return (f"{a.name} ranks above {b.name}: {a.wins} significant "
                f"improvements and {a.losses} regressions against "
                f"{b.wins} and {b.losses}")
    return None


def separation(a: Candidate, b: Candidate) -> str:
    """Why `a` ranks above `b`, or that the data cannot tell them apart."""
    reason = _separated(a, b)
    if reason:
        return reason
    if a.unjudged and b.unjudged:
        why = "too few repeats (every comparison has fewer than 3 a side)"
    elif not (a.wins or a.losses or b.wins or b.losses):
        why = "neither changes any measured cell significantly"
    else:
        why = ("their confidence intervals overlap wherever both were "
               "measured")
    return (f"The data cannot separate {a.name} and {b.name}: {why}; "
            f"the order between them is by cost only ({a.lines} vs "
            f"{b.lines} lines changed)")


def send_order(ranked: Sequence[Candidate]) -> list[Candidate]:
    """The ranking, each candidate preceded by the candidates it is
    built on (in the order they are applied)."""
    holder = {s: c for c in ranked for s in c.series}
    out: list[Candidate] = []

    def place(c: Candidate) -> None:
        if c in out:
            return
        for n in c.needs:
            if n in holder and holder[n] is not c:
                place(holder[n])
        out.append(c)
    for c in ranked:
        place(c)
    return out


def verdict(rec: Ranking, pool: str = "series that upstream lacks") -> str:
    """The recommendation in one sentence, no stronger than the data;
    `pool` names the candidates in words."""
    if not rec.ranked and not rec.unranked:
        return f"No recommendation: this run measures no {pool}"
    if not rec.ranked:
        return (f"No recommendation: no pair of variants in this run "
                f"measures one of the {pool} on its own")
    if all(c.unjudged for c in rec.ranked):
        return ("No recommendation: too few repeats to rank (no "
                "comparison has 3 repeats a side)")
    best = rec.ranked[0]
    if not best.recommendable:
        why = ("no series wins significantly on its primary metric "
               "(false-discovery controlled)" if best.wins == 0 else
               f"{best.name}, the best ranked, also "
               + ("regresses" if best.losses else
                  f"shows {best.risks.lines()[0]}"))
        return f"No recommendation: {why}"
    if len(rec.ranked) > 1 and rec.ranked[1].recommendable and \
            _separated(best, rec.ranked[1]) is None:
        return (f"No clear first: the data cannot separate {best.name} and "
                f"{rec.ranked[1].name}, in order of cost only")
    first = rec.order[0]
    if first is best:
        return f"Send {best.name} first"
    return (f"Send {first.name} first: {best.name}, the best ranked, is "
            "built on it")


# ------------------------------------------------------------- candidates

def _units(res: Results, matrix: Matrix, pool: Sequence[str],
           why_not: dict[str, str]) -> tuple[
               dict[tuple[str, ...], list[tuple[str, str]]], dict[str, str]]:
    """The pairs that judge each series of `pool`: alone where a pair
    adds only it, else in the smallest bundle of pool series none of
    which is judged alone. `why_not` says why a series outside the pool
    cannot share a bundle (merged, scaffolding)."""
    names = [v for v in res.source.variants if v in matrix.variants
             and matrix.variants[v].same_as is None]
    steps: dict[tuple[str, str], tuple[str, ...]] = {}
    for w in names:
        for wo in names:
            extra = added(matrix.variants[w], matrix.variants[wo]) \
                if w != wo else None
            if extra:
                steps[(w, wo)] = extra
    units: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    alone = {s for s in pool if any(d == (s,) for d in steps.values())}
    unranked: dict[str, str] = {}

    def why(x: str) -> str:
        return why_not.get(x) or ("judged alone" if x in alone
                                  else "no pair of its own either")
    for s in pool:
        if s in alone:
            units[(s,)] = [p for p, d in steps.items() if d == (s,)]
            continue
        holding = sorted((len(d), d) for d in steps.values() if s in d)
        fit = [d for _, d in holding
               if all(x in pool and x not in alone for x in d)]
        if fit:
            unit = min(fit, key=len)
            units.setdefault(unit, [p for p, d in steps.items()
                                    if d == unit])
        elif holding:
            unranked[s] = "measured only together with " + ", ".join(
                f"{x} ({why(x)})" for x in holding[0][1] if x != s)
        else:
            unranked[s] = "no pair of variants in this run adds it"
    return units, unranked


def rank(res: Results, matrix: Matrix, pool: Sequence[str],
         why_not: dict[str, str]) -> Ranking:
    units, unranked = _units(res, matrix, pool, why_not)
    cands = []
    for unit, pairs in units.items():
        tree = matrix.variants[pairs[0][0]].tree
        effects = [e for w, wo in pairs for e in _effects(res, matrix, w, wo)]
        deps = [n for s in unit for n in needs(matrix, tree, s)
                if n not in unit]
        cands.append(Candidate(
            unit, tree, pairs, effects,
            sum(lines_changed(matrix, tree, s) for s in unit),
            risks(res, matrix, tree, unit, pairs),
            tuple(dict.fromkeys(deps))))
    family = controlled([e for c in cands for e in c.effects])
    at = 0
    for c in cands:
        c.effects, at = family[at:at + len(c.effects)], at + len(c.effects)
        c.interactions = _interactions(c.effects)
    ranked = sorted(cands, key=_key)
    seps = [separation(a, b) for a, b in zip(ranked, ranked[1:])]
    return Ranking(ranked, seps, unranked, send_order(ranked))


def recommend(res: Results, matrix: Matrix) -> Recommendation:
    # The baseline's series are the starting point even in a run that
    # does not measure the baseline itself.
    base = matrix.variants.get(res.source.baseline)
    scaffolding = set(base.series) if base else set()
    added_series = [s for v in res.source.variants if v in matrix.variants
                    for s in matrix.variants[v].series
                    if s not in scaffolding]
    series = list(dict.fromkeys(added_series))
    merged = {s: m for tree in matrix.merged.values()
              for s, m in tree.items()}
    scaffold = {s: "scaffolding" for s in scaffolding}
    new = rank(res, matrix, [s for s in series if s not in merged], {
        **scaffold, **{s: f"merged upstream in {m.version}"
                       for s, m in merged.items()}})
    old = [s for s in series if s in merged]
    why_not = {**scaffold, **{s: "upstream lacks it" for s in series
                              if s not in merged}}
    return Recommendation(
        new.ranked, new.separation, new.unranked, new.order,
        res.source.baseline,
        "each workload's primary metric (its question's, else throughput)",
        rank(res, matrix, old, why_not) if old else None)


def evidence(c: Candidate) -> list[str]:
    """The lines that justify a candidate's rank."""
    out = []
    if len(c.series) > 1:
        out.append("no pair of variants in this run separates "
                   f"{' and '.join(c.series)}: measured together")
    out.append(f"{c.wins} significant improvements, {c.losses} "
               f"regressions over {len(c.effects)} comparisons "
               "(Benjamini-Hochberg q <= 5 % over the ranking)")
    out += [e.text() for e in c.effects]
    out += c.interactions
    out.append(f"cost: {c.lines} lines changed"
               + (f"; built on {', '.join(c.needs)}" if c.needs else "")
               + f"; kernel complaints in its runs: "
               f"{flags(c.risks.complaints)}"
               + (f" (without it: {flags(c.risks.complaints_without)})"
                  if c.risks.complaints_without else ""))
    return out
