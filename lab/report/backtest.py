"""Does the lab reproduce 2017? The upstream-first ranking, given only
the series upstream has merged since (matrix `merged`), set beside what
upstream did: which release took each, and the devices it left a series
off on. Every sentence is built from the ranking's own candidates; where
the lab's order and upstream's differ, it says which evidence (or which
dependency of the stack) makes the difference.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from lab.report.effect import Effect, pct_text, what
from lab.spec.model import Matrix, Merged

if TYPE_CHECKING:       # types only: the caller ranks and gives the verdict
    from lab.report.upstream import Candidate, Ranking


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def upstream_order(merged: dict[str, Merged]) -> list[tuple[str, list[str]]]:
    """(release, series) in the order upstream merged them."""
    out: dict[str, list[str]] = {}
    for s, m in sorted(merged.items(), key=lambda t: _version(t[1].version)):
        out.setdefault(m.version, []).append(s)
    return list(out.items())


def _effect(e: Effect) -> str:
    c = e.change
    ci = f" [{c.low:+.1f}, {c.high:+.1f}]" if c.low is not None else ""
    pct = pct_text(c.pct) if c.pct is not None else "n/a"
    return f"{what(e)} on {e.workload}/{e.backend} {pct}{ci}"


def _significant(c: Candidate, better: bool) -> list[Effect]:
    return [e for e, g in c.judged()
            if e.change.significant and (g[0] > 0) == better]


def _kinds(matrix: Matrix, effects: Sequence[Effect]) -> set[str]:
    return {matrix.backends[e.backend].kind for e in effects
            if e.backend in matrix.backends}


def series_finding(c: Candidate, m: Merged, matrix: Matrix,
                   ranking: Ranking) -> list[str]:
    """What the lab finds for one merged series, against upstream."""
    name = m.series
    wins, losses = _significant(c, True), _significant(c, False)
    n = sorted({e.n for e in c.effects})
    out = [f"{name}: upstream {m.version}, {m.what}."]
    if wins:
        out.append("The lab reproduces a gain: " +
                   "; ".join(_effect(e) for e in wins) + ".")
    else:
        out.append(f"The lab finds no significant gain on its primary "
                   f"metrics (repeats {', '.join(f'{a}/{b}' for a, b in n)}"
                   ").")
        users = [u for u in ranking.ranked if name in u.needs and
                 _significant(u, True)]
        if users:
            out.append(f"It is what {', '.join(u.name for u in users)} "
                       f"{'is' if len(users) == 1 else 'are'} built on "
                       "(every variant with it applies "
                       f"{name} first), so it goes first whatever it "
                       "measures, as upstream merged it.")
    if losses:
        out.append("It finds losses: " +
                   "; ".join(_effect(e) for e in losses) + ".")
    for kind in m.off_on:
        on_kind = [e for e in c.effects
                   if matrix.backends.get(e.backend) and
                   matrix.backends[e.backend].kind == kind]
        lost = [e for e in losses if e in on_kind]
        won = [e for e in wins if e in on_kind]
        if not on_kind:
            out.append(f"Upstream leaves it off on {kind} devices; this "
                       f"run measures it on no {kind} device.")
        elif lost and not won:
            elsewhere = _kinds(matrix, losses) - {kind}
            out.append(f"Upstream leaves it off on {kind} devices, and the "
                       f"lab agrees: it is worse there"
                       + (f" (and on {', '.join(sorted(elsewhere))})"
                          if elsewhere else "") + ".")
        elif won:
            out.append(f"Upstream leaves it off on {kind} devices, but the "
                       f"lab finds it better there.")
        else:
            out.append(f"Upstream leaves it off on {kind} devices; the lab "
                       f"finds no significant difference there.")
    return out


def order_findings(ranking: Ranking, merged: dict[str, Merged]) -> list[str]:
    """Where the lab's send order and upstream's releases disagree."""
    lab = [s for c in ranking.order for s in c.series if s in merged]
    out = []
    for i, a in enumerate(lab):
        for b in lab[i + 1:]:
            va, vb = _version(merged[a].version), _version(merged[b].version)
            if va <= vb:
                continue
            ca, cb = ranking.find(a), ranking.find(b)
            assert ca is not None and cb is not None
            why = next((t for t in ranking.separation
                        if t.startswith(f"{ca.name} ranks above {cb.name}")
                        or (ca.name in t and cb.name in t)), "")
            out.append(f"The lab would send {a} before {b}; upstream "
                       f"merged {b} in {merged[b].version} and {a} in "
                       f"{merged[a].version}."
                       + (f" The lab's reason: {why}." if why else ""))
    if not out and len(lab) > 1:
        out.append("The lab's order agrees with the order of upstream's "
                   "releases.")
    return out


def findings(ranking: Ranking, matrix: Matrix, said: str) -> list[str]:
    """The backtest as paragraphs (one per series, then the order);
    `said` is the ranking's verdict."""
    merged = {s: m for tree in matrix.merged.values() for s, m in
              tree.items()}
    out = [f"Given the merged series alone, the ranking says: "
           f"{said}. Its send order: "
           f"{', '.join(c.name for c in ranking.order) or 'none'}.",
           "Upstream merged: " + "; ".join(
               f"{v} {', '.join(ss)}" for v, ss in upstream_order(
                   {s: m for s, m in merged.items()
                    if ranking.find(s) or s in ranking.unranked})) + "."]
    for c in ranking.ranked:
        for s in c.series:
            out.append(" ".join(series_finding(c, merged[s], matrix,
                                               ranking)))
    out += [f"{s}: not judged ({why})." for s, why in
            ranking.unranked.items()]
    out += order_findings(ranking, merged)
    return out

