"""The answers of a run as Markdown: the verdict table every report
starts with, the A/A calibration rows, the testbed the numbers come
from, and the replication table across runs (`lab answers`)."""
from __future__ import annotations

import html
import re
import statistics
from typing import Iterable, Mapping, Sequence

from lab.results import answers as ans
from lab.results import record
from lab.results.record import CellRecord
from lab.results.order import OrderEffect, order_effect
from lab.results.pieces import pieces, pieces_text
from lab.results.replication import Replication, RunAnswers
from lab.spec.decisions import Claim, Figure

METHOD = (
    "Each (question, backend) is one primary test: Welch's t on the log "
    "of the ratio of means (a %change cannot pass -100 %), examined "
    "{looks} with alpha spent by a Pocock-type "
    "function, so a question may stop once decided; Benjamini-Hochberg "
    "at 5 % over the run's {m} primary tests (q). \"Equivalent\" is two "
    "one-sided tests against +-delta (TOST, 5 %). The interval is the "
    "last look's 95 % interval. A/A rows boot the reference's own kernel "
    "under a second name: they calibrate the run and are not in the "
    "false-discovery family. Other metrics are exploratory.")


def looks_text(design: ans.Design) -> str:
    """When the questions were examined, as METHOD says it."""
    if design.step == 1:
        return f"after each repeat from {design.min_n} to {design.max_n}"
    *head, tail = [str(n) for n in design.looks]
    return f"at n = {', '.join(head)} and {tail}" if head else \
        f"at n = {tail}"


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
             replicated: dict[tuple[str, str], str] | None = None,
             claims: bool = True) -> str:
    """answers.md; `claims` False leaves out the claims section (a page
    that shows it first)."""
    replicated = replicated or {}
    primary = ra.primary
    aa = [a for a in ra.answers if a.question.is_aa]
    decided = sum(a.decided for a in primary)
    out = [f"# Answers: run {ra.run_id} (sub-matrix {ra.submatrix})", ""]
    if ra.flagged:
        names = ", ".join(f"{a.question.name} on {a.backend}"
                          for a in ra.flagged)
        out += [f"**This run is flagged: its A/A control found a "
                f"difference ({names}). Read no verdict below as a "
                "result.**", ""]
    busy = sum(1 for rec in ra.records.values() if rec.outcome == "ok"
               and record.host_busy(rec.result))
    if busy:
        out += [f"{busy} cells were set aside: other work took more than "
                f"{record.MAX_FOREIGN_SHARE:.0%} of the host's CPU while "
                "they ran (timing.host_load in each result); adaptive "
                "rounds ran their repeats again.", ""]
    when = pieces_text(pieces(ra.records.values()))
    out += [f"{decided} of {len(primary)} questions decided. "
            + testbed(ra.records.values()) + (f" {when}" if when else ""),
            "",
            METHOD.format(looks=looks_text(ra.design), m=len(primary)),
            ""]
    out += _table(primary, replicated)
    if aa:
        out += ["", "## Calibration (A/A)", "",
                "The same kernel under two names: a difference here means "
                "the run's noise is not what its tests assume.", ""]
        out += _table(aa, replicated)
    if claims:
        out += claims_section(primary, replicated, ra.values, ra.rows)
    out += order_section(ra)
    return "\n".join(out) + "\n"


def direction(a: ans.Answer) -> str:
    """Does the lab's result go the claim's way: "yes" when decided that
    way, "no" when decided the other way (or equivalent to no change
    against a claim beyond delta), else "not shown"."""
    claim = a.question.claim
    if claim is None or a.last is None or claim.change_pct is None:
        return "-"
    if a.verdict in ("better", "worse"):
        return "yes" if (a.last.pct > 0) == (claim.change_pct > 0) else "no"
    if a.verdict == ans.EQUIVALENT:
        return "no" if abs(claim.change_pct) > a.question.delta_pct \
            else "yes"
    return "not shown"


def claimed_text(claim: Claim) -> str:
    return "open question" if claim.change_pct is None else \
        pct(claim.change_pct)


def magnitude(a: ans.Answer) -> str:
    """The lab's %change as a share of the claim's."""
    claim = a.question.claim
    if claim is None or a.last is None or not claim.change_pct:
        return "-"
    return f"{a.last.pct / claim.change_pct:.2f}"


Values = Mapping[tuple[str, str, str, str], list[float]]


def arms(a: ans.Answer, metric: str, reference: str, candidate: str,
         values: Values) -> tuple[list[float], list[float]]:
    """Every cell's `metric` of two variants in the answer's workload and
    backend."""
    q = a.question
    return (values.get((q.workload, a.backend, metric, reference), []),
            values.get((q.workload, a.backend, metric, candidate), []))


def beside(a: ans.Answer, metric: str, reference: str, candidate: str,
           values: Values) -> tuple[str, str, ans.Look | None]:
    """`candidate` against `reference` on `metric` in the answer's
    workload and backend, from every cell of both: the change with its
    95 % interval (text), n ref/cand, and the look itself (None without
    enough data). Reported, never tested: no verdict, no BH."""
    ref, cand = arms(a, metric, reference, candidate, values)
    n = f"{len(ref)}/{len(cand)}"
    if min(len(ref), len(cand)) < ans.MIN_N:
        return "no data", n, None
    try:
        lk = ans.look(ref, cand, a.question.delta_pct)
    except ValueError as exc:
        return f"no ratio ({exc})", n, None
    return look_text(lk), n, lk


def figure_row(a: ans.Answer, fig: Figure, values: Values) -> str:
    """One more figure of a claim (a percentile beside the average),
    reported beside the answer."""
    q = a.question
    claimed = fig.change_pct
    lab, n, lk = beside(a, fig.metric, q.reference, q.candidate, values)
    same, mag = "-", "-"
    if lk is not None and claimed is not None:
        # A source's "no change" is contradicted by any interval that
        # excludes 0.
        same = ("not shown" if lk.low <= 0 <= lk.high else
                "no" if claimed == 0 else
                "yes" if (lk.pct > 0) == (claimed > 0) else "no")
        mag = f"{lk.pct / claimed:.2f}" if claimed else "-"
    name = fig.metric.rsplit(".", 1)[-1]
    return "| " + " | ".join((
        f"{q.name}: {name}", a.backend,
        f"{fig.reference:g} -> {fig.candidate:g}",
        pct(claimed) if claimed is not None else "- (from 0)", lab, n,
        same, mag, "not tested",
        "reported beside the question, not tested")) + " |"


def reference_row(a: ans.Answer, variant: str, values: Values) -> str:
    """A reference kernel of the run (sub-matrix `rows`, e.g. stock 6.1)
    against the question's reference, on its primary metric."""
    q = a.question
    lab, n, _ = beside(a, q.metric, q.reference, variant, values)
    return "| " + " | ".join((
        f"{q.name}: {variant}", a.backend,
        f"reference row: {variant} vs {q.reference}", "-", lab, n, "-", "-",
        "not tested", "a reference kernel beside the question, not "
        "tested")) + " |"


def measured_text(a: ans.Answer, values: Values) -> str:
    """The claim's `explain` metrics: each arm's median, reference ->
    candidate, with the cells behind them."""
    q = a.question
    if q.claim is None:
        return ""
    parts = []
    for metric in q.claim.explain:
        ref, cand = arms(a, metric, q.reference, q.candidate, values)
        name = metric.split(".", 1)[-1]
        if not ref or not cand:
            parts.append(f"{name} not measured")
            continue
        parts.append(f"{name} {statistics.median(ref):.3g} -> "
                     f"{statistics.median(cand):.3g} (medians, n "
                     f"{len(ref)}/{len(cand)})")
    return "measured: " + "; ".join(parts) if parts else ""


def claims_section(rows: Sequence[ans.Answer],
                   replicated: dict[tuple[str, str], str],
                   values: Values | None = None,
                   references: Sequence[str] = ()) -> list[str]:
    """Each question that cites a published figure, beside it, and under
    it the source's other figures for the same pair and the run's
    reference kernels (`references`, sub-matrix `rows`)."""
    cited = [a for a in rows if a.question.claim is not None]
    if not cited:
        return []
    figures = any(a.question.claim.figures for a in cited
                  if a.question.claim is not None)
    out = ["", "## Against the claims", "",
           "Each question that cites a published figure (matrix.yaml "
           "`claim`), set beside the lab's result. Same direction: "
           "decided the claim's way (yes), decided against it (no), or "
           "not decided (not shown)"
           + ("; for a figure reported beside a question, whether its "
              "95 % interval excludes no change" if figures else "")
           + ". Magnitude: the lab's %change over the claim's.", "",
           "| question | backend | claim | claimed | lab [95 % CI] | n "
           "ref/cand | same direction | magnitude | replicated | why they "
           "may differ |", "|---|---|---|---|---|---|---|---|---|---|"]
    for a in cited:
        c = a.question.claim
        assert c is not None
        why = "; ".join(t for t in (
            c.note, measured_text(a, values or {}),
            c.unmeasurable and f"not measurable here: {c.unmeasurable}")
            if t)
        out.append("| " + " | ".join((
            a.question.name, a.backend, c.source, claimed_text(c),
            change_text(a), f"{a.n_ref}/{a.n_cand}", direction(a),
            magnitude(a), replicated.get((a.question.name, a.backend),
                                         "not yet (one run)"),
            why or "-")) + " |")
        out += [figure_row(a, fig, values or {}) for fig in c.figures]
        out += [reference_row(a, v, values or {}) for v in references]
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


def replication_marks(reps: Sequence[Replication]
                      ) -> dict[tuple[str, str], str]:
    """The "replicated" cell of each (question, backend)."""
    return {(r.question.name, r.backend): "yes" if r.replicated
            else f"no ({r.why})" for r in reps}


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
