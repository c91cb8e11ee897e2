"""answers.md's sections, on the committed raw cells of a real run."""
from __future__ import annotations

import dataclasses

import pytest

from lab.paths import REPO
from lab.report import verdicts
from lab.report.reportdir import run_answers
from lab.results import answers as ans
from lab.results.store import open_results_dir
from lab.spec.questions import Claim

QUIET = REPO / "reports" / "20261205-223052-quick" / "raw"


@pytest.fixture(scope="module")
def ra_seq() -> ans.Answer:
    ra = run_answers(open_results_dir(QUIET))
    return next(a for a in ra.answers if a.question.name == "ra-seq")


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


def test_no_section_without_claims(ra_seq) -> None:
    assert verdicts.claims_section([ra_seq], {}) == []
