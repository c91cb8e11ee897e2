"""The findings-first deck of a question run, from the committed raw
cells of two real quick runs."""
from __future__ import annotations

import re

import pytest

from lab.paths import REPO
from lab.report import answerdeck
from lab.report.reportdir import lead_slides, run_answers
from lab.results import answers as ans
from lab.results.runmatrix import run_matrix
from lab.results.store import open_results_dir

LOADED = REPO / "reports" / "20261205-211149-quick" / "raw"
QUIET = REPO / "reports" / "20261205-223052-quick" / "raw"


@pytest.fixture(scope="module")
def loaded():
    run = open_results_dir(LOADED)
    ra = run_answers(run)
    return ra, lead_slides(run, ra)


def test_order_is_findings_first(loaded) -> None:
    ra, deck = loaded
    keys = [s.key for s in deck]
    asked = list(dict.fromkeys(a.question.name for a in ra.answers
                               if not a.question.is_aa))
    assert keys == ["answers", "testbed", "variants",
                    *(f"q-{n}" for n in asked), "calibration"]


def test_every_tagged_change_is_the_answers(loaded) -> None:
    ra, deck = loaded
    by_key = {(a.question.name, a.backend): a for a in ra.answers}
    tagged = 0
    for s in deck:
        for name, be, pct in re.findall(
                r"data-question='([^']+)' data-backend='([^']+)' "
                r"data-verdict='[^']+' data-pct='([^']+)'", s.body):
            assert float(pct) == by_key[(name, be)].last.pct
            tagged += 1
    # the summary and the question slides each show every primary row,
    # the calibration slide the A/A rows
    primary = [a for a in ra.answers if not a.question.is_aa]
    assert tagged == 2 * len(primary) + len(ra.answers) - len(primary)


def test_testbed_names_tcg_and_the_pmem_caveat(loaded) -> None:
    _, deck = loaded
    testbed = next(s for s in deck if s.key == "testbed")
    assert "TCG" in testbed.claim
    pmem = [r for r in open_results_dir(LOADED).records().values()
            if r.cell.backend == "dax-pmem" and r.outcome == "ok"]
    assert f"{len(pmem)} of {len(pmem)} pmem cells took 6.1&#x27;s " \
        "synchronous-device swap-in bypass" in testbed.body
    assert "256 MiB RAM, 2 vCPUs, 512 MiB swap" in testbed.body
    assert "mdts=9" in testbed.body


def test_no_slide_for_a_question_without_data() -> None:
    run = open_results_dir(QUIET)
    ra = run_answers(run)
    keys = {s.key for s in lead_slides(run, ra)}
    empty = {a.question.name for a in ra.answers
             if a.verdict == ans.NO_DATA}
    assert "thp1-swpout" in empty
    assert not {f"q-{n}" for n in empty} & keys
    assert "q-ra-seq" in keys


def test_question_slide_shows_every_repeat(loaded) -> None:
    ra, deck = loaded
    slide = next(s for s in deck if s.key == "q-thp-swapin-reread")
    assert slide.body.count("<p class='note'>") == 1
    # four repeats a side, as the answer counted them
    note = re.search(r"<p class='note'>([^<]*)</p>", slide.body).group(1)
    assert note.count(",") == 2 * (4 - 1)


@pytest.mark.parametrize("pct, text", [
    (-72.5, "0.28x (3.6x lower)"), (0.0, "1.00x (1x higher)"),
    (412.6, "5.13x (5.1x higher)")])
def test_fold(pct: float, text: str) -> None:
    look = ans.Look(3, pct, pct - 1, pct + 1, 0.5, 0.5, None, None)
    a = ans.Answer(None, "nvme", 3, 3, look, 0.5, 0.5)   # type: ignore
    assert answerdeck.fold(a) == text


def test_a_claim_is_set_beside_the_result() -> None:
    import dataclasses
    from lab.spec.decisions import Claim
    run = open_results_dir(QUIET)
    ra = run_answers(run)
    q = next(a.question for a in ra.answers if a.question.name == "ra-seq")
    cited = dataclasses.replace(q, claim=Claim("001: sequential", -70.0))
    ra.answers = [dataclasses.replace(a, question=cited)
                  if a.question is q else a for a in ra.answers]
    slide = next(s for s in answerdeck.answer_slides(ra, run_matrix(run))
                 if s.key == "q-ra-seq")
    assert ("<h3>Against the claim</h3><p class='note'>001: sequential: "
            "-70.0 %. Same direction: nvme not shown (magnitude 0.27)") \
        in slide.body
