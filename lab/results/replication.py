"""A run's answers, and the same questions across runs.

`RunAnswers.of(run, matrix)` reads a stored run (or a committed directory
of raw cell results) and answers the questions its sub-matrix declared,
with the design it was run under. `replicate` sets runs side by side: each
run's estimate, their heterogeneity (Cochran's Q and I^2 on the log
ratio), the estimate pooled over cells whose inputs are identical, and
whether the claim replicated: the same decided verdict in every run,
from at least two runs started REPLICATION_GAP_S apart.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from scipy import stats as sps

from lab.errors import LabError
from lab.results import answers as ans
from lab.results.metrics import gather
from lab.results.record import CellRecord
from lab.results.store import Run, seconds
from lab.spec.decisions import Question
from lab.spec.model import Matrix

# Runs "at different times": host load and drift differ by the hour.
REPLICATION_GAP_S = 3600


@dataclass
class RunAnswers:
    run_id: str
    started: str                    # ISO 8601 UTC, from the manifest
    submatrix: str
    design: ans.Design
    questions: tuple[Question, ...]
    answers: list[ans.Answer]
    records: dict[str, CellRecord]
    # every metric of the measured cells: (workload, backend, metric,
    # variant) -> values, for figures reported beside the answers
    values: dict[tuple[str, str, str, str], list[float]] = \
        dataclasses.field(default_factory=dict)
    rows: tuple[str, ...] = ()      # the sub-matrix's reference kernels

    @classmethod
    def of(cls, run: Run, matrix: Matrix) -> "RunAnswers":
        """The run's answers to its sub-matrix's questions in `matrix`
        (the one it was made from: lab.results.runmatrix)."""
        sub_name = (run.manifest.get("matrix") or {}).get("submatrix", "")
        if sub_name not in matrix.matrices:
            raise LabError(f"run {run.id}: its sub-matrix '{sub_name}' is "
                           f"not in {matrix.file}")
        sub = matrix.sub(sub_name)
        if not sub.questions:
            raise LabError(f"run {run.id}: sub-matrix '{sub_name}' declares "
                           "no questions (matrix.yaml 'questions:'); "
                           "'lab report' still tabulates it")
        questions = tuple(matrix.questions[q] for q in sub.questions)
        records = run.records()
        design = ans.Design(sub.repeats, sub.max_repeats,
                            step=sub.look_every)
        values = gather(records.values()).values
        return cls(run.id, run.manifest.get("started") or "", sub_name,
                   design, questions,
                   ans.answer_all(questions, values, design), records,
                   values, sub.rows)

    @property
    def primary(self) -> list[ans.Answer]:
        """The answers of the run's primary tests (A/A rows aside)."""
        return [a for a in self.answers if not a.question.is_aa]

    @property
    def flagged(self) -> list[ans.Answer]:
        return [a for a in self.answers if a.flagged]


@dataclass(frozen=True)
class Replication:
    question: Question
    backend: str
    per_run: tuple[tuple[str, ans.Answer], ...]
    q_stat: float | None            # Cochran's Q
    q_p: float | None
    i2: float | None                # share of variation beyond chance
    pooled: ans.Look | None
    pooled_note: str
    replicated: bool
    why: str


def heterogeneity(looks: Sequence[ans.Look]) -> tuple[float, float, float]:
    """(Cochran's Q, its p, I^2) of log-ratio estimates."""
    w = [1 / (lk.se or math.inf) ** 2 for lk in looks]
    y = [lk.log_ratio or 0.0 for lk in looks]
    mean = sum(wi * yi for wi, yi in zip(w, y)) / sum(w)
    q = sum(wi * (yi - mean) ** 2 for wi, yi in zip(w, y))
    df = len(looks) - 1
    i2 = max(0.0, (q - df) / q) if q > 0 else 0.0
    return q, float(sps.chi2.sf(q, df)), i2


def _config(rec: CellRecord) -> tuple[Any, ...]:
    """What a cell measured, bar its repeat: the same kernel build,
    device and workload command."""
    p = rec.provenance
    return (p.get("build_key"), repr(p.get("backend")),
            repr((p.get("workload") or {}).get("argv")))


def _pooled(q: Question, backend: str, runs: Sequence[RunAnswers]
            ) -> tuple[ans.Look | None, str]:
    arms: dict[str, list[CellRecord]] = {q.reference: [], q.candidate: []}
    for ra in runs:
        found = False
        for rec in ra.records.values():
            c = rec.cell
            if c.variant in arms and c.backend == backend and \
                    c.workload == q.workload and rec.outcome == "ok":
                arms[c.variant].append(rec)
                found = True
        if not found:
            # (a later run may ask the question on another workload)
            return None, (f"not pooled: run {ra.run_id} has no cells of "
                          f"workload {q.workload} on {backend}")
    for variant, recs in arms.items():
        configs = {_config(r) for r in recs}
        if len(configs) > 1:
            return None, (f"not pooled: {variant}'s cells differ in build, "
                          "device or workload between runs")
    values = gather([r for recs in arms.values() for r in recs]).values
    ref = values.get((q.workload, backend, q.metric, q.reference), [])
    cand = values.get((q.workload, backend, q.metric, q.candidate), [])
    if min(len(ref), len(cand)) < ans.MIN_N:
        return None, "not pooled: too few cells"
    try:
        return ans.look(ref, cand, q.delta_pct), \
            f"pooled n={len(ref)}/{len(cand)}, one look"
    except ValueError as exc:
        return None, f"not pooled: {exc}"


def measures(q: Question) -> tuple[object, ...]:
    """What a question measures and decides, apart from its name and
    prose: a run that asks a question of the same name on another
    workload or metric answers another question."""
    return (q.candidate, q.reference, q.workload, q.metric, q.better,
            q.delta_pct)


def replicate(runs: Sequence[RunAnswers]) -> list[Replication]:
    """The questions of the first run, answered in each run that asks
    them the same way (`measures`)."""
    if len(runs) < 2:
        raise LabError("replication needs at least two runs")
    out = []
    first = runs[0]
    for a in first.answers:
        key = (a.question.name, a.backend)
        per_run, other_way = [], []
        for ra in runs:
            named = [b for b in ra.answers
                     if (b.question.name, b.backend) == key]
            match = [b for b in named
                     if measures(b.question) == measures(a.question)]
            if match:
                per_run.append((ra.run_id, match[0]))
            elif named:
                other_way.append(ra.run_id)
        looks = [b.last for _, b in per_run
                 if b.last is not None and b.last.se]
        q_stat = q_p = i2 = None
        if len(looks) >= 2 and len(looks) == len(per_run):
            q_stat, q_p, i2 = heterogeneity(looks)
        pooled, note = _pooled(a.question, a.backend, runs)
        replicated, why = _replicated(per_run, other_way, runs)
        out.append(Replication(a.question, a.backend, tuple(per_run),
                               q_stat, q_p, i2, pooled, note, replicated,
                               why))
    return out


def _replicated(per_run: Sequence[tuple[str, ans.Answer]],
                other_way: Sequence[str],
                runs: Iterable[RunAnswers]) -> tuple[bool, str]:
    """Whether the answers of `per_run` replicate, and why (not);
    `other_way` names the runs that ask the question of the same name
    another way."""
    verdicts = {b.verdict for _, b in per_run}
    if len(per_run) < 2 and other_way:
        return False, f"asked another way (workload, metric) in " \
            f"{', '.join(other_way)}"
    if len(per_run) < 2:
        return False, "answered in one run only"
    if any(not b.decided for _, b in per_run):
        return False, "undecided in a run"
    if len(verdicts) > 1:
        return False, "verdicts differ: " + ", ".join(sorted(verdicts))
    started = sorted(seconds(ra.started) for ra in runs
                     if ra.run_id in {r for r, _ in per_run} and ra.started)
    if len(started) < 2 or started[-1] - started[0] < REPLICATION_GAP_S:
        return False, "runs less than an hour apart"
    return True, f"{per_run[0][1].verdict} in {len(per_run)} runs"
