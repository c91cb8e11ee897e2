"""The deck of a run that answers questions: findings first.

In order: the answers at a glance, how they were measured (the testbed),
what the variants are, one slide per question the run covers (absolute
values of both arms, fold change, interval, n, q, replicated or not, and
every repeat), the A/A calibration with the run order, then upstream-first
and the backups that every deck ends with (lab.report.slides). A question
the run does not cover gets no slide; an undecided one says at which n
it stopped and what its interval still allows.

Every number is tagged with data-* attributes naming the question and the
backend, so tests check each against lab.results.answers.
"""
from __future__ import annotations

import html
import statistics
from typing import Iterable, Mapping, Sequence

from lab.report.slide import Slide
from lab.report.verdicts import (change_text, claimed_text, direction,
                                 magnitude, order_effects, order_text,
                                 p_text, pct, testbed, verdict_text)
from lab.results import answers as ans
from lab.results.metrics import Metric, cell_metrics, gather
from lab.results.pieces import pieces
from lab.results.record import CellRecord
from lab.results.replication import RunAnswers
from lab.spec.model import Matrix

e = html.escape
Values = Mapping[tuple[str, str, str, str], Sequence[float]]
# The 2017 seeds predate 4.15's swap-in bypass for synchronous devices:
# a pmem cell that took it read swapped-out pages without the swap cache
# or readahead. The counters patch counts it (vmstat swap_sync_bypass).
BYPASS = "vmstat.swap_sync_bypass"
ZERO = Metric(0, "events", "neutral")


def fmt(x: float) -> str:
    """A value with three significant digits, SI-scaled."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:.3g}"


def fold(a: ans.Answer) -> str:
    """The candidate's mean over the reference's, said the way the
    metric's direction reads ("3.6x lower")."""
    if a.last is None:
        return "-"
    ratio = 1 + a.last.pct / 100
    if ratio <= 0:
        return "-"
    if ratio >= 1:
        return f"{ratio:.2f}x ({ratio:.2g}x higher)"
    return f"{ratio:.2f}x ({1 / ratio:.2g}x lower)"


def _arm(values: Values, a: ans.Answer, variant: str) -> list[float]:
    q = a.question
    return list(values.get((q.workload, a.backend, q.metric, variant), ()))


def _mean_sd(xs: Sequence[float]) -> str:
    if not xs:
        return "-"
    sd = f" ± {fmt(statistics.stdev(xs))}" if len(xs) > 1 else ""
    return f"{fmt(statistics.fmean(xs))}{sd}"


def _tag(a: ans.Answer) -> str:
    pct_attr = "" if a.last is None else f" data-pct='{a.last.pct!r}'"
    return (f"data-question='{e(a.question.name)}' "
            f"data-backend='{e(a.backend)}' "
            f"data-verdict='{e(a.verdict)}'{pct_attr}")


def summary_slide(ra: RunAnswers, replicated: Mapping[tuple[str, str], str]
                  ) -> Slide:
    primary = ra.primary
    decided = [a for a in primary if a.decided]
    rows = "".join(
        f"<tr {_tag(a)}><td>{e(a.question.name)}</td><td>{e(a.backend)}</td>"
        f"<td>{e(a.question.candidate)} vs {e(a.question.reference)}</td>"
        f"<td class='{'sig' if a.decided else ''}'>"
        f"{e(verdict_text(a).replace('**', ''))}</td>"
        f"<td>{e(change_text(a))}</td><td>{a.n_ref}/{a.n_cand}</td>"
        f"<td>{e(replicated.get((a.question.name, a.backend), 'one run'))}"
        "</td></tr>" for a in primary)
    flag = ""
    if ra.flagged:
        names = ", ".join(f"{a.question.name} on {a.backend}"
                          for a in ra.flagged)
        flag = (f"<p class='missing'>Flagged: the A/A control found a "
                f"difference ({e(names)}). No verdict here is a result."
                "</p>")
    body = (f"<div class='col'>{flag}<table class='effects'><tr>"
            "<th>question</th><th>backend</th><th>pair</th><th>verdict</th>"
            "<th>change [95 % CI]</th><th>n</th><th>replicated</th></tr>"
            f"{rows}</table></div>")
    claim = (f"{len(decided)} of {len(primary)} questions decided"
             + (": " + "; ".join(
                 f"{a.question.name} ({a.backend}) "
                 f"{verdict_text(a).replace('**', '')}"
                 for a in decided) if decided else "") + ".")
    return Slide("answers", f"swaplab {ra.run_id}: the answers", body, claim)


def _duration(records: Iterable[CellRecord]) -> str:
    found = pieces(records)
    if not found:
        return "not recorded"
    if len(found) == 1:
        return f"{found[0].minutes:.0f} min from first to last cell"
    return (f"{sum(p.minutes for p in found):.0f} min of cells in "
            f"{len(found)} pieces")


def bypass_notes(records: Sequence[CellRecord]) -> list[str]:
    """How many passing pmem cells took 6.1's synchronous-device swap-in
    bypass, by their own counters."""
    pmem = [r for r in records if r.outcome == "ok" and
            (r.provenance.get("backend") or {}).get("kind") == "pmem"]
    if not pmem:
        return []
    took = sum(cell_metrics(r.result).get(BYPASS, ZERO).value > 0
               for r in pmem)
    return [f"{took} of {len(pmem)} pmem cells took 6.1's synchronous-"
            "device swap-in bypass (4.15; swap_sync_bypass > 0), which the "
            "2017 seeds predate: no swap cache, no readahead there."]


def testbed_slide(ra: RunAnswers, matrix: Matrix) -> Slide:
    records = list(ra.records.values())
    backends: dict[str, dict] = {}
    for rec in records:
        be = rec.provenance.get("backend") or {}
        backends.setdefault(str(be.get("name")), be)
    rows = "".join(
        f"<tr><td>{e(name)}</td><td>{e(str(be.get('kind')))}</td><td>"
        + e(", ".join(f"{k}={v}" for k, v in sorted(
            (be.get("params") or {}).items()))) + "</td></tr>"
        for name, be in sorted(backends.items()))
    ok = sum(r.outcome == "ok" for r in records)
    g = matrix.guest
    # A workload may boot with its own swap size: say what the cells had.
    swaps = sorted({s for s in (
        (r.result.get("guest") or {}).get("swap_mib") for r in records)
        if isinstance(s, int)}) or [g.swap_mib]
    notes = [testbed(records),
             f"Guest: {g.memory_mib} MiB RAM, {g.vcpus} vCPUs, "
             f"{' or '.join(map(str, swaps))} MiB swap, {g.firmware}.",
             f"Cells: {ok} of {len(records)} passed; "
             f"{_duration(records)}."]
    notes += bypass_notes(records)
    body = ("<div class='col'><table><tr><th>backend</th><th>kind</th>"
            f"<th>device model</th></tr>{rows}</table></div>"
            "<div class='col'><ul class='small'>"
            + "".join(f"<li>{e(n)}</li>" for n in notes) + "</ul></div>")
    accel = {str(r.provenance.get("accel")) for r in records}
    return Slide("testbed", "How this was measured", body,
                 "Guests under " + ("TCG: software emulation, no KVM"
                                    if accel == {"tcg"} else
                                    ", ".join(sorted(accel)).upper())
                 + "; ratios between variants are the result, not absolute "
                 "times.")


def variants_slide(ra: RunAnswers, matrix: Matrix) -> Slide:
    names = dict.fromkeys(v for q in ra.questions
                          for v in (q.reference, q.candidate))
    releases: dict[str, str] = {}
    for rec in ra.records.values():
        releases.setdefault(rec.cell.variant,
                            str(rec.provenance.get("kernel_release") or ""))
    # The description last: the one column of an effects table that
    # wraps (a long one overflowed the slide).
    rows = "".join(
        f"<tr><td>{e(v)}</td><td>{e(releases.get(v, 'not run'))}</td>"
        f"<td>{e(matrix.variants[v].description)}</td></tr>" for v in names
        if v in matrix.variants)
    body = ("<div class='col'><table class='effects'><tr><th>variant</th>"
            "<th>kernel release (as the guest reported)</th>"
            f"<th>what it is</th></tr>{rows}</table></div>")
    return Slide("variants", "The kernels compared", body,
                 f"{len(names)} variants; each question pairs two that differ"
                 " by one patch series, or one kernel under two names (A/A).")


def question_slide(name: str, rows: Sequence[ans.Answer], values: Values,
                   replicated: Mapping[tuple[str, str], str]) -> Slide:
    q = rows[0].question
    table = []
    for a in rows:
        ref, cand = _arm(values, a, q.reference), _arm(values, a, q.candidate)
        table.append(
            f"<tr {_tag(a)}><td>{e(a.backend)}</td>"
            f"<td>{_mean_sd(ref)} (n={len(ref)})</td>"
            f"<td>{_mean_sd(cand)} (n={len(cand)})</td>"
            f"<td>{e(fold(a))}</td><td>{e(change_text(a))}</td>"
            f"<td class='{'sig' if a.decided else ''}'>"
            f"{e(verdict_text(a).replace('**', ''))}</td>"
            f"<td>{p_text(a.q)}</td><td>"
            f"{e(replicated.get((q.name, a.backend), 'one run'))}</td></tr>")
    repeats = "".join(
        f"<p class='note'>{e(a.backend)}: {e(q.reference)} "
        + ", ".join(fmt(x) for x in _arm(values, a, q.reference))
        + f"; {e(q.candidate)} "
        + ", ".join(fmt(x) for x in _arm(values, a, q.candidate)) + "</p>"
        for a in rows)
    claim = "" if q.claim is None else (
        f"<h3>Against the claim</h3><p class='note'>{e(q.claim.source)}: "
        f"{e(claimed_text(q.claim))}. Same direction: "
        + ", ".join(f"{e(a.backend)} {e(direction(a))} (magnitude "
                    f"{e(magnitude(a))})" for a in rows)
        + (f". {e(q.claim.note)}" if q.claim.note else "") + "</p>")
    body = (f"<div class='col'><p class='pair'>{e(q.metric)} ({e(q.better)}"
            f" is better), workload {e(q.workload)}, delta "
            f"{q.delta_pct:g} %</p><table class='effects'><tr>"
            f"<th>backend</th><th>{e(q.reference)}</th>"
            f"<th>{e(q.candidate)}</th><th>fold</th><th>change [95 % CI]</th>"
            "<th>verdict</th><th>q</th><th>replicated</th></tr>"
            + "".join(table) + "</table><h3>Every repeat</h3>"
            f"{repeats}{claim}</div>")
    says = "; ".join(f"{a.backend}: {verdict_text(a).replace('**', '')}"
                     + ("" if a.last is None else
                        f", {pct(a.last.pct)}") for a in rows)
    return Slide(f"q-{name}", f"{q.candidate} against {q.reference}: "
                 f"{q.workload}", body, says)


def calibration_slide(ra: RunAnswers) -> Slide | None:
    aa = [a for a in ra.answers if a.question.is_aa]
    order = order_effects(ra)
    if not aa and not order:
        return None
    rows = "".join(
        f"<tr {_tag(a)}><td>{e(a.question.name)}</td><td>{e(a.backend)}</td>"
        f"<td>{e(verdict_text(a).replace('**', ''))}</td>"
        f"<td>{e(change_text(a))}</td><td>{a.n_ref}/{a.n_cand}</td>"
        f"<td>{p_text(a.p)}</td></tr>" for a in aa)
    order_rows = "".join(
        f"<tr><td>{e(o.workload)}</td><td>{e(o.backend)}</td>"
        f"<td>{e(o.metric)}</td><td>{e(order_text(o))}</td>"
        f"<td>{o.first}/{o.rest}</td><td>{p_text(o.p)}</td></tr>"
        for o in order)
    body = ("<div class='col'><h3>A/A: one kernel under two names</h3>"
            "<table class='effects'><tr><th>question</th><th>backend</th>"
            "<th>verdict</th><th>change [95 % CI]</th><th>n</th><th>p</th>"
            f"</tr>{rows}</table>"
            + ("<h3>Run order: first cell after a change vs the rest</h3>"
               "<table class='effects'><tr><th>workload</th><th>backend</th>"
               "<th>metric</th><th>first vs rest</th><th>cells</th>"
               f"<th>p</th></tr>{order_rows}</table>" if order_rows else "")
            + "</div>")
    claim = ("The A/A control found a difference: the run is flagged."
             if ra.flagged else
             "The A/A control found no difference at 5 %.")
    return Slide("calibration", "Calibration", body, claim)


def answer_slides(ra: RunAnswers, matrix: Matrix,
                  replicated: Mapping[tuple[str, str], str] | None = None
                  ) -> list[Slide]:
    """The slides before upstream-first and the backups."""
    replicated = replicated or {}
    values = gather(ra.records.values()).values
    by_question: dict[str, list[ans.Answer]] = {}
    for a in ra.answers:
        if not a.question.is_aa:
            by_question.setdefault(a.question.name, []).append(a)
    out = [summary_slide(ra, replicated), testbed_slide(ra, matrix),
           variants_slide(ra, matrix)]
    out += [question_slide(n, rows, values, replicated)
            for n, rows in by_question.items()
            if any(a.verdict != ans.NO_DATA for a in rows)]
    cal = calibration_slide(ra)
    return out + ([cal] if cal else [])

