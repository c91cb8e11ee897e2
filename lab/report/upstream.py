"""Upstream first: which patch series to send first, and the evidence.

The baseline variant is the starting point; every series a variant adds
on top of it is a candidate. A candidate's marginal effect comes from a
pair of variants of the run that differ only by it (readahead vs base,
thp-stage2 vs thp-stage1, everything vs thp-stage2 ...). Series that no
pair separates (thp-stage1 when the run has thp-stage2 and base but not
thp-stage1) become one candidate together: the data cannot tell them
apart, and the report says so.

Effects are lab.results.stats.compare of the pair's repeats on each workload's
throughput and p99 fault latency. Ranking, best first:
  1. no kernel complaints (warn, bug, oops ...) the variant without the
     series did not have;
  2. more significant improvements minus significant regressions;
  3. the larger guaranteed gain (lower CI bound of the best improvement);
  4. fewer lines changed.
Two neighbours in the ranking are "separated" only when the data says
so: one has complaints the other lacks, a different count of significant
wins, or an improvement whose CI lies wholly above the other's on the
same workload and backend. Otherwise the order is by cost, and said so.
"""
from __future__ import annotations

import html
import zlib
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from lab.report.analysis import Effect, gain, pct_text, Results, what
from lab.results.record import complaints
from lab.results.stats import Change, compare
from lab.spec.model import Matrix, Variant


@dataclass
class Candidate:
    series: tuple[str, ...]             # several: no pair separates them
    pairs: list[tuple[str, str]]        # (with, without)
    effects: list[Effect]
    lines: int
    complaints: dict[str, int]          # in runs of the `with` variants
    complaints_without: dict[str, int]
    interactions: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return " + ".join(self.series)

    @property
    def new_complaints(self) -> dict[str, int]:
        return {k: v for k, v in self.complaints.items()
                if not self.complaints_without.get(k)}

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


@dataclass
class Recommendation:
    ranked: list[Candidate]
    separation: list[str]               # ranked[i] vs ranked[i + 1]
    unranked: dict[str, str]            # series -> why not ranked
    baseline: str
    metrics: str                        # what the effects were measured on


# --------------------------------------------------------------- pairing

def _same_build_but_series(a: Variant, b: Variant) -> bool:
    return (a.tree, a.fragments, a.cmdline, a.sysfs, a.sysctl) == \
        (b.tree, b.fragments, b.cmdline, b.sysfs, b.sysctl)


def added(with_: Variant, without: Variant) -> tuple[str, ...] | None:
    """The series `with_` adds to `without`, when `without`'s series are
    `with_`'s with some left out (order kept) and nothing else differs."""
    if not _same_build_but_series(with_, without):
        return None
    rest = iter(with_.series)
    if not all(s in rest for s in without.series):
        return None
    extra = tuple(s for s in with_.series if s not in without.series)
    return extra or None


def code_lines(patch: str) -> int:
    """Added plus removed lines of one patch's hunks that hold code: not
    the commit message, the diffstat or a file header, and not a line
    left blank. (A bare `line[:1] in "+-"` also counted every empty line
    of the message: '' is in every string.)"""
    total = 0
    in_hunk = False
    for line in patch.splitlines():
        if line == "-- ":
            break               # the signature: the diff is over
        if line.startswith("diff --git "):
            in_hunk = False
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line[:1] in ("+", "-") and line[1:].strip():
            total += 1
    return total


def lines_changed(matrix: Matrix, tree: str, series: str) -> int:
    """Code lines added and removed by the series' patches."""
    d = matrix.series_dir(tree, series)
    return sum(code_lines((d / name).read_text(errors="replace"))
               for name in (d / "series").read_text().split()
               if not name.startswith("#") and (d / name).is_file())


def _complaints(res: Results, variants: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for rec in res.records.values():
        if rec.cell.variant not in variants:
            continue
        for name, count in complaints(rec.result).items():
            out[name] = out.get(name, 0) + count
    return out


def _effects(res: Results, with_: str, without: str) -> list[Effect]:
    out = []
    for wl in res.source.workloads:
        for metric in filter(None, (res.throughput(wl), res.latency(wl))):
            for be in res.source.backends:
                a = res.samples.values.get((wl, be, metric, without))
                b = res.samples.values.get((wl, be, metric, with_))
                if not a or not b:
                    continue
                info = res.samples.info[metric]
                seed = zlib.crc32(f"{wl}/{be}/{metric}/{with_}/{without}"
                                  .encode())
                out.append(Effect(with_, without, wl, be, metric,
                                  info.better, (len(a), len(b)),
                                  compare(a, b, info.better, seed)))
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

def _key(c: Candidate) -> tuple:
    return (bool(c.new_complaints), -(c.wins - c.losses), -c.assured,
            c.lines)


def _separated(a: Candidate, b: Candidate) -> str | None:
    """Why the data ranks `a` above `b`; None when it cannot tell."""
    if bool(a.new_complaints) != bool(b.new_complaints):
        return (f"{a.name} ranks above {b.name}: {b.name}'s runs show new "
                f"kernel complaints ({_complaint_text(b.new_complaints)})")
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


def verdict(rec: Recommendation) -> str:
    """The recommendation in one sentence, no stronger than the data."""
    names = [c.name for c in rec.ranked]
    if not names:
        return "No candidate could be measured"
    if all(c.unjudged for c in rec.ranked):
        if len(names) == 1:
            return (f"Too few repeats to judge {names[0]}: no comparison "
                    "has 3 repeats a side")
        return (f"Too few repeats to rank: no comparison has 3 repeats a "
                f"side, so {', '.join(names)} are in order of cost only")
    if len(names) > 1 and _separated(*rec.ranked[:2]) is None:
        return (f"No clear first: the data cannot separate {names[0]} and "
                f"{names[1]}, in order of cost only")
    return f"Send {names[0]} first"


def _complaint_text(flags: Mapping[str, int]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in flags.items()) or "none"


def recommend(res: Results, matrix: Matrix) -> Recommendation:
    names = [v for v in res.source.variants if v in matrix.variants]
    variants = {v: matrix.variants[v] for v in names}
    # The baseline's series are the starting point even in a run that
    # does not measure the baseline itself.
    base = matrix.variants.get(res.source.baseline)
    scaffolding = set(base.series) if base else set()
    candidates_of = [s for v in variants.values() for s in v.series
                     if s not in scaffolding]
    series_all = list(dict.fromkeys(candidates_of))
    steps: dict[tuple[str, str], tuple[str, ...]] = {}
    for w in names:
        for wo in names:
            extra = added(variants[w], variants[wo]) if w != wo else None
            if extra and not scaffolding.intersection(extra):
                steps[(w, wo)] = extra
    # Each series goes with its smallest steps: alone if some pair adds
    # only it, else in the fewest-series bundle that contains it.
    units: dict[tuple[str, ...], list[tuple[str, str]]] = {}
    unranked: dict[str, str] = {}
    for s in series_all:
        holding = [(len(d), d, p) for p, d in steps.items() if s in d]
        if not holding:
            unranked[s] = ("no pair of variants in this run differs by it "
                           "alone or in a bundle")
            continue
        smallest = min(h[0] for h in holding)
        for _, d, p in holding:
            if len(d) == smallest and p not in units.setdefault(d, []):
                units[d].append(p)
    cands = []
    for unit, pairs in units.items():
        tree = variants[pairs[0][0]].tree
        effects = [e for w, wo in pairs for e in _effects(res, w, wo)]
        c = Candidate(unit, pairs, effects,
                      sum(lines_changed(matrix, tree, s) for s in unit),
                      _complaints(res, [w for w, _ in pairs]),
                      _complaints(res, [wo for _, wo in pairs]))
        c.interactions = _interactions(effects)
        cands.append(c)
    ranked = sorted(cands, key=_key)
    seps = [separation(a, b) for a, b in zip(ranked, ranked[1:])]
    return Recommendation(ranked, seps, unranked, res.source.baseline,
                          "each workload's throughput and p99 fault "
                          "latency")


# ------------------------------------------------------------- rendering

def evidence(c: Candidate) -> list[str]:
    """The lines that justify a candidate's rank."""
    out = []
    if len(c.series) > 1:
        out.append("no pair of variants in this run separates "
                   f"{' and '.join(c.series)}: measured together")
    out.append(f"{c.wins} significant improvements, {c.losses} "
               f"regressions over {len(c.effects)} comparisons")
    out += [e.text() for e in c.effects]
    out += c.interactions
    out.append(f"cost: {c.lines} lines changed; kernel complaints in its "
               f"runs: {_complaint_text(c.complaints)}"
               + (f" (without it: {_complaint_text(c.complaints_without)})"
                  if c.complaints_without else ""))
    return out


def markdown(rec: Recommendation, source_line: str) -> str:
    out = ["# Upstream first", "", source_line + ".",
           f"Candidates: the series added on top of the baseline "
           f"'{rec.baseline}', each measured by a pair of variants that "
           f"differ only by it, on {rec.metrics}.", ""]
    for i, c in enumerate(rec.ranked):
        out += [f"## {i + 1}. {c.name}", ""]
        out += [f"- {line}" for line in evidence(c)]
        if i < len(rec.separation):
            out += ["", f"**{rec.separation[i]}.**"]
        out.append("")
    if rec.unranked:
        out += ["## Not ranked", ""]
        out += [f"- {s}: {why}" for s, why in rec.unranked.items()]
        out.append("")
    if not rec.ranked:
        out += ["No candidate could be measured: the run has no pair of "
                "variants that differ by a patch series.", ""]
    return "\n".join(out)


def html_page(rec: Recommendation, source_line: str) -> str:
    e = html.escape
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
           "<title>swaplab: upstream first</title>",
           "<style>body{font-family:sans-serif;max-width:60em;margin:1em "
           "auto}li{margin:.2em 0}</style></head><body>",
           "<h1>Upstream first</h1>", f"<p>{e(source_line)}.</p>"]
    for i, c in enumerate(rec.ranked):
        out.append(f"<h2>{i + 1}. {e(c.name)}</h2><ul>")
        out += [f"<li>{e(line)}</li>" for line in evidence(c)]
        out.append("</ul>")
        if i < len(rec.separation):
            out.append(f"<p><strong>{e(rec.separation[i])}.</strong></p>")
    if rec.unranked:
        out.append("<h2>Not ranked</h2><ul>")
        out += [f"<li>{e(s)}: {e(w)}</li>" for s, w in rec.unranked.items()]
        out.append("</ul>")
    out.append("</body></html>\n")
    return "\n".join(out)
