"""answers.md's sections, on the committed raw cells of a real run."""
from __future__ import annotations

import dataclasses
import json
import shutil
import statistics

import pytest

from lab.paths import REPO
from lab.report import verdicts
from lab.report.reportdir import run_answers
from lab.results import answers as ans
from lab.results.store import open_results_dir
from lab.spec.decisions import Claim, Figure

QUIET = REPO / "reports" / "20261205-223052-quick" / "raw"


@pytest.fixture(scope="module")
def quiet():
    return run_answers(open_results_dir(QUIET))


@pytest.fixture(scope="module")
def ra_seq(quiet) -> ans.Answer:
    return next(a for a in quiet.answers if a.question.name == "ra-seq")


def with_claim(a: ans.Answer, change: float, verdict: str) -> ans.Answer:
    q = dataclasses.replace(a.question, claim=Claim(
        "001: average latency, sequential", change, "4 processes there"))
    return dataclasses.replace(a, question=q, verdict=verdict)


def test_claims_section_sets_the_lab_beside_the_claim(ra_seq) -> None:
    # ra-seq there: -18.6 % [-31.5, -3.3] at n=3, undecided
    rows = [with_claim(ra_seq, -70.0, ans.UNDECIDED)]
    text = "\n".join(verdicts.claims_section(rows, {}))
    assert "## Against the claims" in text
    assert ("| ra-seq | nvme | 001: average latency, sequential | -70.0 % "
            "| -18.6 % [-31.5, -3.3] | 3/3 | not shown | 0.27 | not yet "
            "(one run) | 4 processes there |") in text


@pytest.mark.parametrize("change,verdict,same", [
    (-70.0, "better", "yes"), (+12.0, "better", "no"),
    (-70.0, ans.EQUIVALENT, "no"), (-4.0, ans.EQUIVALENT, "yes"),
    (-70.0, ans.UNDECIDED, "not shown")])
def test_direction(ra_seq, change: float, verdict: str, same: str) -> None:
    assert verdicts.direction(with_claim(ra_seq, change, verdict)) == same


def test_a_claims_other_figures_are_reported_beside_it(quiet,
                                                       ra_seq) -> None:
    p90 = Figure("swapbench.main.latency.p90_us", 158.0, 8.0, "m.yaml:9")
    p50 = Figure("swapbench.main.latency.p50_us", 0.0, 1.0, "m.yaml:10")
    gone = Figure("swapbench.main.latency.nope_us", 1.0, 2.0, "m.yaml:11")
    a = with_claim(ra_seq, -70.0, ans.UNDECIDED)
    a = dataclasses.replace(a, question=dataclasses.replace(
        a.question, claim=dataclasses.replace(a.question.claim,
                                              figures=(p90, p50, gone))))
    lines = verdicts.claims_section([a], {}, quiet.values)
    ref = quiet.values[("seq", "nvme", p90.metric, "base")]
    cand = quiet.values[("seq", "nvme", p90.metric, "readahead")]
    lk = ans.look(ref, cand, 10.0)
    row90, row50, row_gone = lines[-3:]
    assert row90.startswith("| ra-seq: p90_us | nvme | 158 -> 8 | -94.9 % | "
                            + verdicts.look_text(lk) + " | 3/3 | ")
    assert row90.endswith("| not tested | reported beside the question, "
                          "not tested |")
    assert "| - (from 0) |" in row50
    # p50 rose (+51 % [+17, +95] there): a source's "no change" is not
    # the lab's, whichever way the lab moved.
    flat = Figure("swapbench.main.latency.p50_us", 1.0, 1.0, "m.yaml:12")
    assert "| 3/3 | no | - |" in verdicts.figure_row(a, flat, quiet.values)
    assert "| no data | 0/0 |" in row_gone


def test_the_claims_explain_metrics_show_each_arms_median(quiet,
                                                         ra_seq) -> None:
    a = with_claim(ra_seq, -70.0, ans.UNDECIDED)
    a = dataclasses.replace(a, question=dataclasses.replace(
        a.question, claim=dataclasses.replace(
            a.question.claim, explain=("vmstat.swap_ra_hit_ratio",
                                       "vmstat.nope"))))
    ref = quiet.values[("seq", "nvme", "vmstat.swap_ra_hit_ratio", "base")]
    cand = quiet.values[("seq", "nvme", "vmstat.swap_ra_hit_ratio",
                         "readahead")]
    text = verdicts.measured_text(a, quiet.values)
    assert text == (f"measured: swap_ra_hit_ratio "
                    f"{statistics.median(ref):.3g} -> "
                    f"{statistics.median(cand):.3g} (medians, n 3/3); "
                    "nope not measured")
    [row] = [line for line in verdicts.claims_section([a], {}, quiet.values)
             if line.startswith("| ra-seq |")]
    assert row.endswith("| 4 processes there; " + text + " |")
    # What the testbed cannot measure comes last, said as such.
    a = dataclasses.replace(a, question=dataclasses.replace(
        a.question, claim=dataclasses.replace(
            a.question.claim, unmeasurable="16 CPUs; this host has 2")))
    [row] = [line for line in verdicts.claims_section([a], {}, quiet.values)
             if line.startswith("| ra-seq |")]
    assert row.endswith("| 4 processes there; " + text + "; not measurable "
                        "here: 16 CPUs; this host has 2 |")


def test_reference_kernels_stand_under_each_claim(quiet, ra_seq) -> None:
    a = with_claim(ra_seq, -70.0, ans.UNDECIDED)
    lines = verdicts.claims_section([a], {}, quiet.values,
                                    ("base-again", "upstream-6.12"))
    again, stock = lines[-2:]
    m = "swapbench.main.latency.avg_us"
    lk = ans.look(quiet.values[("seq", "nvme", m, "base")],
                  quiet.values[("seq", "nvme", m, "base-again")], 10.0)
    assert again == ("| ra-seq: base-again | nvme | reference row: "
                     "base-again vs base | - | " + verdicts.look_text(lk)
                     + " | 3/3 | - | - | not tested | a reference kernel "
                     "beside the question, not tested |")
    assert "| no data | 3/0 |" in stock


def test_no_section_without_claims(ra_seq) -> None:
    assert verdicts.claims_section([ra_seq], {}) == []


def test_cells_on_a_busy_host_are_counted_and_left_out(tmp_path) -> None:
    """Two cells of a real run marked as measured while other work took
    40 % of the host: answers.md says so, and their arms lose them."""
    raw = tmp_path / "raw"
    shutil.copytree(QUIET, raw)
    before = run_answers(open_results_dir(raw))
    for cid in ("base-nvme-seq-r1", "readahead-nvme-seq-r2"):
        path = raw / f"{cid}.json"
        doc = json.loads(path.read_text())
        doc["result"]["timing"]["host_load"] = {"foreign_share": 0.4}
        path.write_text(json.dumps(doc))
    ra = run_answers(open_results_dir(raw))
    text = verdicts.markdown(ra)
    assert "2 cells were set aside: other work took more than 10% of " \
        "the host's CPU" in text
    assert "cells were set aside" not in verdicts.markdown(before)
    [old] = [a for a in before.answers if a.question.name == "ra-seq"]
    [new] = [a for a in ra.answers if a.question.name == "ra-seq"]
    assert (new.n_ref, new.n_cand) == (old.n_ref - 1, old.n_cand - 1)


def test_an_open_question_stands_in_the_claims_table(ra_seq) -> None:
    a = with_claim(ra_seq, -70.0, "better")
    a = dataclasses.replace(a, question=dataclasses.replace(
        a.question, claim=dataclasses.replace(a.question.claim,
                                              change_pct=None)))
    [row] = [line for line in verdicts.claims_section([a], {})
             if line.startswith("| ra-seq |")]
    assert ("| 001: average latency, sequential | open question | "
            "-18.6 % [-31.5, -3.3] | 3/3 | - | - |") in row
    assert (verdicts.direction(a), verdicts.magnitude(a)) == ("-", "-")
