"""The answers of a run as Markdown: the verdict table every report
starts with, the A/A calibration rows, the testbed the numbers come
from, and the replication table across runs (`lab answers`)."""
from __future__ import annotations

import html
import re
from typing import Iterable, Sequence

from lab.results import answers as ans
from lab.results.order import OrderEffect, order_effect
from lab.results.replication import Replication, RunAnswers
from lab.results.store import CellRecord

METHOD = (
    "Each (question, backend) is one primary test: Welch's t on the log "
    "of the ratio of means (a %change cannot pass -100 %), examined after "
    "each repeat from {min_n} to {max_n} with alpha spent by a Pocock-type "
    "function, so a question may stop once decided; Benjamini-Hochberg "
    "at 5 % over the run's {m} primary tests (q). \"Equivalent\" is two "
    "one-sided tests against +-delta (TOST, 5 %). The interval is the "
    "last look's 95 % interval. A/A rows boot the reference's own kernel "
    "under a second name: they calibrate the run and are not in the "
    "false-discovery family. Other metrics are exploratory.")


def pct(x: float) -> str:
    return f"{x:+.1f} %"


def look_text(lk: ans.Look) -> str:
    return f"{pct(lk.pct)} [{lk.low:+.1f}, {lk.high:+.1f}]"


def change_text(a: ans.Answer) -> str:
    return "-" if a.last is None else look_text(a.last)


def verdict_text(a: ans.Answer) -> str:
    if a.verdict in ("better", "worse") and a.last is not None:
        return f"**{a.verdict}** by {abs(a.last.pct):.1f} %"
    if a.verdict == ans.EQUIVALENT:
        return f"equivalent (within +-{a.question.delta_pct:g} %)"
    if a.verdict == ans.NO_DATA:
        return f"no data ({a.note})"
    return f"undecided at n={min(a.n_ref, a.n_cand)}"


def p_text(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2g}" if x >= 0.001 else "<0.001"


def testbed(records: Iterable[CellRecord]) -> str:
    """How the numbers were measured, from the cells' own provenance."""
    accel: set[str] = set()
    devices: dict[str, str] = {}
    dilation: list[float] = []
    for rec in records:
        p = rec.provenance
        accel.add(str(p.get("accel")))
        be = p.get("backend") or {}
        params = be.get("params") or {}
        model = params.get("model") or params.get("mode") or "no model"
        devices[str(be.get("name"))] = f"{be.get('kind')} ({model})"
        if isinstance(p.get("dilation"), (int, float)):
            dilation.append(float(p["dilation"]))
    how = "TCG (software emulation, no KVM)" if accel == {"tcg"} else \
        ", ".join(sorted(accel)).upper()
    dil = (f"device-model time dilation {min(dilation):.2f} to "
           f"{max(dilation):.2f}" if dilation else
           "no device-model time dilation")
    devs = "; ".join(f"{n}: {d}" for n, d in sorted(devices.items()))
    return (f"Testbed: guests under {how}; swap devices {devs}; {dil}. "
            "Absolute times are guest times under emulation, not "
            "hardware figures; ratios between variants are the result.")


HEADER = ("question", "backend", "candidate vs reference", "metric",
          "verdict", "change [95 % CI]", "n ref/cand", "p (seq.)",
          "q (BH)", "replicated")


def _row(a: ans.Answer, replicated: str) -> str:
    q = a.question
    cells = (q.name, a.backend, f"{q.candidate} vs {q.reference}",
             f"{q.metric} ({q.better} is better)", verdict_text(a),
             change_text(a), f"{a.n_ref}/{a.n_cand}", p_text(a.p), p_text(a.q),
             replicated)
    return "| " + " | ".join(cells) + " |"


def _table(rows: Sequence[ans.Answer], replicated: dict[tuple[str, str],
           str]) -> list[str]:
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += [_row(a, replicated.get((a.question.name, a.backend),
                                   "not yet (one run)")) for a in rows]
    return out


def markdown(ra: RunAnswers,
             replicated: dict[tuple[str, str], str] | None = None) -> str:
    replicated = replicated or {}
    primary = [a for a in ra.answers if not a.question.is_aa]
    aa = [a for a in ra.answers if a.question.is_aa]
    decided = sum(a.decided for a in primary)
    out = [f"# Answers: run {ra.run_id} (sub-matrix {ra.submatrix})", ""]
    if ra.flagged:
        names = ", ".join(f"{a.question.name} on {a.backend}"
                          for a in ra.flagged)
        out += [f"**This run is flagged: its A/A control found a "
                f"difference ({names}). Read no verdict below as a "
                "result.**", ""]
    out += [f"{decided} of {len(primary)} questions decided. "
            + testbed(ra.records.values()), "",
            METHOD.format(min_n=ra.design.min_n, max_n=ra.design.max_n,
                          m=len(primary)), ""]
    out += _table(primary, replicated)
    if aa:
        out += ["", "## Calibration (A/A)", "",
                "The same kernel under two names: a difference here means "
                "the run's noise is not what its tests assume.", ""]
        out += _table(aa, replicated)
    out += claims_section(primary, replicated)
    out += order_section(ra)
    return "\n".join(out) + "\n"


def direction(a: ans.Answer) -> str:
    """Does the lab's result go the claim's way: "yes" when decided that
    way, "no" when decided the other way (or equivalent to no change
    against a claim beyond delta), else "not shown"."""
    claim = a.question.claim
    if claim is None or a.last is None:
        return "-"
    if a.verdict in ("better", "worse"):
        return "yes" if (a.last.pct > 0) == (claim.change_pct > 0) else "no"
    if a.verdict == ans.EQUIVALENT:
        return "no" if abs(claim.change_pct) > a.question.delta_pct \
            else "yes"
    return "not shown"


def magnitude(a: ans.Answer) -> str:
    """The lab's %change as a share of the claim's."""
    claim = a.question.claim
    if claim is None or a.last is None or claim.change_pct == 0:
        return "-"
    return f"{a.last.pct / claim.change_pct:.2f}"


def claims_section(rows: Sequence[ans.Answer],
                   replicated: dict[tuple[str, str], str]) -> list[str]:
    """Each question that cites a published figure, beside it."""
    cited = [a for a in rows if a.question.claim is not None]
    if not cited:
        return []
    out = ["", "## Against the claims", "",
           "Each question that cites a published figure (matrix.yaml "
           "`claim`), set beside the lab's result. Same direction: "
           "decided the claim's way (yes), decided against it (no), or "
           "not decided (not shown). Magnitude: the lab's %change over "
           "the claim's.", "",
           "| question | backend | claim | claimed | lab [95 % CI] | n "
           "ref/cand | same direction | magnitude | replicated | why they "
           "may differ |", "|---|---|---|---|---|---|---|---|---|---|"]
    for a in cited:
        c = a.question.claim
        assert c is not None
        out.append("| " + " | ".join((
            a.question.name, a.backend, c.source, pct(c.change_pct),
            change_text(a), f"{a.n_ref}/{a.n_cand}", direction(a),
            magnitude(a), replicated.get((a.question.name, a.backend),
                                         "not yet (one run)"),
            c.note or "-")) + " |")
    return out


def order_effects(ra: RunAnswers) -> list[OrderEffect]:
    """The first cell after a change of workload or backend against the
    rest, for each primary metric the questions use (lab.results.order)."""
    records = list(ra.records.values())
    seen = dict.fromkeys((q.workload, be, q.metric) for q in ra.questions
                         for be in q.backends)
    return [e for e in (order_effect(records, *k) for k in seen) if e]


def order_text(e: OrderEffect) -> str:
    return f"{pct(e.pct)} [{e.low:+.1f}, {e.high:+.1f}]"


def order_section(ra: RunAnswers) -> list[str]:
    rows = order_effects(ra)
    if not rows:
        return []
    out = ["", "## Run order", "",
           "The first cell after a change of workload or backend (or after "
           "a pause of more than a minute) against the rest, within each "
           "variant, on the log scale. The order is drawn at random per "
           "block, so an effect here widens the intervals above rather "
           "than biasing them.", "",
           "| workload | backend | metric | first slot vs rest [95 % CI] "
           "| cells first/rest | p |", "|---|---|---|---|---|---|"]
    out += [f"| {e.workload} | {e.backend} | {e.metric} | {order_text(e)} "
            f"| {e.first}/{e.rest} | {p_text(e.p)} |" for e in rows]
    return out


def replication_markdown(reps: Sequence[Replication]) -> str:
    runs = [r for r, _ in reps[0].per_run] if reps else []
    head = ["question", "backend", *(f"run {r}" for r in runs),
            "heterogeneity", "pooled", "replicated"]
    out = ["# Replication", "",
           "Each run's verdict and interval side by side; heterogeneity is "
           "Cochran's Q (p) and I^2 on the log ratio; the pooled estimate "
           "joins cells with identical inputs (one look, exploratory). A "
           "claim replicates when every run reached the same decided "
           "verdict and two of them started at least an hour apart.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rep in reps:
        per = {r: a for r, a in rep.per_run}
        cols = [f"{verdict_text(per[r])}: {change_text(per[r])}"
                if r in per else "-" for r in runs]
        het = "-" if rep.q_stat is None else \
            f"Q={rep.q_stat:.2f} (p={p_text(rep.q_p)}), I^2={rep.i2:.0%}"
        pooled = rep.pooled_note if rep.pooled is None else \
            f"{look_text(rep.pooled)} ({rep.pooled_note})"
        rep_text = "**yes**" if rep.replicated else f"no: {rep.why}"
        out.append("| " + " | ".join([rep.question.name, rep.backend, *cols,
                                      het, pooled, rep_text]) + " |")
    return "\n".join(out) + "\n"


def markdown_html(text: str) -> str:
    """The answers' Markdown as HTML for a report's front page: headings,
    paragraphs and pipe tables (all this module writes)."""
    out: list[str] = []
    table: list[list[str]] = []

    def inline(t: str) -> str:
        t = html.escape(t)
        return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", t)

    def flush() -> None:
        if not table:
            return
        head, *body = table
        out.append("<table><tr>" + "".join(f"<th>{inline(c)}</th>"
                                           for c in head) + "</tr>")
        out.extend("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row)
                   + "</tr>" for row in body)
        out.append("</table>")
        table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):
                table.append(cells)
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level + 1}>{inline(line.lstrip('# '))}"
                       f"</h{level + 1}>")
        elif line.strip():
            out.append(f"<p>{inline(line)}</p>")
    flush()
    return "\n".join(out)
