"""Answers: alpha spending, TOST, Benjamini-Hochberg, verdicts, and the
false-positive rate of the sequential design by simulation."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from scipy import stats as sps

from lab.results import answers as ans
from lab.results import stats
from lab.results.metrics import gather
from lab.paths import REPO
from lab.results.store import Run, open_results_dir
from lab.spec.decisions import Question

DATA = Path(__file__).resolve().parents[1] / "data" / "results"


def question(better: str = "higher", delta: float = 5.0,
             candidate: str = "cand", series: tuple[str, ...] = ("x",)
             ) -> Question:
    return Question("q", candidate, "ref", series, "wl", ("nvme",), "m",
                    better, delta, "matrix.yaml:1")


def values(ref: list[float], cand: list[float], candidate: str = "cand"
           ) -> dict[tuple[str, str, str, str], list[float]]:
    return {("wl", "nvme", "m", "ref"): ref,
            ("wl", "nvme", "m", candidate): cand}


def test_spending_weights_sum_to_one() -> None:
    d = ans.Design(3, 10)
    weights = [d.weight(n) for n in range(3, 11)]
    assert sum(weights) == pytest.approx(1.0)
    assert all(w > 0 for w in weights)
    # Pocock type: the first look (3 of 10) already spends 42 %.
    assert weights[0] == pytest.approx(math.log(1 + (math.e - 1) * 0.3))
    assert ans.Design(5, 5).weight(5) == 1.0
    assert d.weight(2) == 0.0 and d.weight(12) == d.weight(10)


def test_planned_looks_take_the_alpha_of_the_looks_between() -> None:
    d = ans.Design(3, 12, step=3)
    assert d.looks == [3, 6, 9, 12]
    assert [d.next_look(n) for n in (0, 3, 5, 6, 11, 12, 20)] == \
        [3, 6, 6, 9, 12, 12, 12]
    weights = [w for _, w in d.slots(12)]
    assert sum(weights) == pytest.approx(1.0)
    one_by_one = ans.Design(3, 12)
    # 4 looks leave the last one 3 times the alpha of 10 looks' last.
    assert weights[-1] == pytest.approx(one_by_one.weight(12)
                                        + one_by_one.weight(11)
                                        + one_by_one.weight(10))
    assert weights[-1] / one_by_one.weight(12) > 3
    # Data that stop between looks are tested once in the slot, at the
    # n reached; a slot the data never enter is not tested.
    assert d.slots(7) == [(3, d.weight(3)), (6, d.weight(6)),
                          (7, d.weight(9))]
    assert d.slots(2) == []
    assert ans.Design(3, 10).slots(10) == \
        [(n, ans.Design(3, 10).weight(n)) for n in range(3, 11)]
    assert ans.Design(3, 11, step=3).looks == [3, 6, 9, 11]


def test_fewer_looks_decide_what_every_repeat_cannot() -> None:
    """Real values: thp1-swpout on NVMe, run 20261206-002439-quick (pages
    swapped out per second, base then thp-stage1, repeats 1 to 12)."""
    base = [22342, 22326, 25798, 19150, 27896, 28140, 27444, 16457, 23589,
            22044, 25886, 20190]
    stage1 = [22163, 23898, 20174, 24641, 17692, 15111, 17672, 22369,
              18845, 10096, 22857, 15825]
    _, p_each, _ = ans.sequential(base, stage1, 10.0, ans.Design(3, 12))
    _, p_step, _ = ans.sequential(base, stage1, 10.0,
                                  ans.Design(3, 12, step=3))
    assert p_step < p_each / 2
    assert p_each > 0.3


def test_look_matches_welch_on_the_log_ratio() -> None:
    ref, cand = [10.0, 11.0, 12.0, 10.5], [13.0, 14.5, 12.5, 13.5]
    lk = ans.look(ref, cand, 5.0)
    ratio, low, high, p = stats.welch_log_ratio(ref, cand)
    assert lk.pct == pytest.approx(100 * (ratio - 1))
    assert (lk.low, lk.high) == pytest.approx((100 * (low - 1),
                                               100 * (high - 1)))
    assert lk.p == pytest.approx(p)
    assert lk.p_equiv > 0.5        # a 30 % change is not within 5 %


def test_tost_by_hand() -> None:
    ref, cand = [100.0, 101.0, 99.0, 100.5], [100.2, 99.8, 100.4, 100.1]
    lk = ans.look(ref, cand, 5.0)
    est, se, df = stats.log_ratio_terms(ref, cand)
    lower = sps.t.sf((est - math.log(0.95)) / se, df)
    upper = sps.t.cdf((est - math.log(1.05)) / se, df)
    assert lk.p_equiv == pytest.approx(max(lower, upper))
    assert lk.p_equiv < 1e-3


def test_constant_counters_are_exact() -> None:
    same = ans.look([512.0] * 3, [512.0] * 3, 5.0)
    assert (same.p, same.p_equiv, same.pct) == (1.0, 0.0, 0.0)
    off = ans.look([512.0] * 3, [1024.0] * 3, 5.0)
    assert (off.p, off.p_equiv, off.pct) == (0.0, 1.0, 100.0)


def test_bh_by_hand() -> None:
    q = ans.bh([0.01, 0.04, 0.03, 0.2])
    assert q == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    assert ans.bh([]) == []


@pytest.mark.parametrize("better,cand,verdict", [
    ("higher", [13.0, 14.0, 13.5], "better"),
    ("lower", [13.0, 14.0, 13.5], "worse"),
    ("lower", [7.0, 7.2, 6.9], "better"),
    ("higher", [10.01, 9.99, 10.0], "equivalent"),
    ("higher", [9.0, 11.5, 10.4], "undecided"),
])
def test_verdicts(better: str, cand: list[float], verdict: str) -> None:
    q = question(better)
    out = ans.answer_all([q], values([10.0, 10.02, 9.98], cand),
                         ans.Design(3, 3))
    assert [a.verdict for a in out] == [verdict]
    assert out[0].q == pytest.approx(out[0].p)      # one test: q = p


def test_too_few_repeats_is_no_data_from_a_real_run() -> None:
    """The real one-repeat quick run cannot answer anything."""
    run = Run(DATA / "quick-real", {"id": "quick-real"})
    samples = gather(run.records().values()).values
    q = Question("ra", "readahead", "base", ("readahead",), "seq",
                 ("nvme",), "swapbench.main.bytes_per_s", "higher", 5.0,
                 "m:1")
    [a] = ans.answer_all([q], samples, ans.Design(3, 10))
    assert a.verdict == ans.NO_DATA and a.last is None
    assert a.note.startswith("n=1/1")


def test_aa_rows_stay_out_of_the_fdr_family() -> None:
    aa = question(candidate="twin", series=())
    real = question()
    vals = {**values([10.0, 10.1, 9.9], [13.0, 13.1, 12.9]),
            **values([10.0, 10.1, 9.9], [10.0, 10.1, 9.9], "twin")}
    out = ans.answer_all([real, aa], vals, ans.Design(3, 3))
    assert out[1].q is None and out[0].q == pytest.approx(out[0].p)
    assert not out[1].flagged and out[1].verdict != "better"


def aa_false_positive_rate(runs: int, cv: float, design: ans.Design,
                           naive: bool, seed: int) -> float:
    """A/A runs that stop at the first decided look; the share that
    called a difference."""
    rng = random.Random(seed)
    hits = 0
    for _ in range(runs):
        ref = [rng.lognormvariate(0, cv) for _ in range(design.max_n)]
        cand = [rng.lognormvariate(0, cv) for _ in range(design.max_n)]
        hits += ans.first_look_differs(ref, cand, 5.0, design, naive)
    return hits / runs


def test_sequential_design_keeps_aa_false_positives_at_alpha() -> None:
    d = ans.Design(3, 10)
    spent = aa_false_positive_rate(1000, 0.15, d, naive=False, seed=1)
    naive = aa_false_positive_rate(1000, 0.15, d, naive=True, seed=1)
    # 3 standard errors of a 5 % rate over 1000 runs: 2.1 points.
    assert spent <= ans.ALPHA + 0.021, spent
    # Testing every look at 5 % is what the spending protects against.
    assert naive >= 0.10, naive
    # Four planned looks keep it at alpha too.
    stepped = aa_false_positive_rate(1000, 0.15, ans.Design(3, 12, step=3),
                                     naive=False, seed=2)
    assert stepped <= ans.ALPHA + 0.021, stepped


@pytest.mark.parametrize("report", sorted(
    p.parent.name for p in (REPO / "reports").glob("*/answers.md")
    if (p.parent / "raw" / "manifest.json").is_file()))
def test_committed_answers_regenerate_byte_for_byte(report: str,
                                                    tmp_path: Path) -> None:
    """A reference report's answers come from its committed raw results
    and today's generator: regenerated, they read the same."""
    from lab.report.reportdir import (run_answers, write_answers,
                                      write_replication)
    root = REPO / "reports" / report
    run = open_results_dir(root / "raw")
    record = json.loads((root / "report.json").read_text())
    others = [open_results_dir(REPO / ref)
              for ref in record.get("replicated_with", [])]
    marks, _ = write_replication(run_answers(run), others, tmp_path)
    write_answers(run, tmp_path, marks=marks)
    assert (tmp_path / "answers.md").read_text() == \
        (root / "answers.md").read_text()
