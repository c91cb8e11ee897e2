"""Replication across the two committed quiet quick runs (an hour
apart; the second asked the THP swap-out questions on thp-swpout-rate)."""
from __future__ import annotations

import pytest

from lab.paths import REPO
from lab.results.replication import RunAnswers, replicate
from lab.results.runmatrix import run_matrix
from lab.results.store import open_results_dir

RUNS = ("20261205-232428-quick", "20261206-002439-quick")


@pytest.fixture(scope="module")
def reps():
    return {(r.question.name, r.backend): r for r in replicate(
        [RunAnswers.of(run, run_matrix(run)) for run in (
            open_results_dir(REPO / "reports" / name / "raw")
            for name in RUNS)])}


def test_decided_alike_an_hour_apart_replicates(reps) -> None:
    for key in (("ra-seq", "nvme"), ("thp-swapin-reread", "nvme")):
        assert reps[key].replicated, key
    assert not reps[("ra-rand", "nvme")].replicated
    assert reps[("ra-rand", "nvme")].why == \
        "verdicts differ: equivalent, worse"


def test_a_question_asked_on_another_workload_is_another_question(
        reps) -> None:
    # Decided alike (stage 2 better), but on thp-swpout, then on
    # thp-swpout-rate: not a replication.
    thp = reps[("thp2-swpout", "nvme")]
    assert [a.verdict for _, a in thp.per_run] == ["better"]
    assert not thp.replicated
    assert thp.why == ("asked another way (workload, metric) in "
                       "20261206-002439-quick")


def test_no_opposite_verdicts(reps) -> None:
    for r in reps.values():
        verdicts = {a.verdict for _, a in r.per_run}
        assert not {"better", "worse"} <= verdicts, r.question.name


def test_cells_pool_only_where_every_run_has_them(reps) -> None:
    seq = reps[("ra-seq", "nvme")]
    assert seq.pooled is not None and seq.pooled_note.startswith(
        "pooled n=14/12")
    thp = reps[("thp2-swpout", "nvme")]
    assert thp.pooled is None
    assert thp.pooled_note == ("not pooled: run 20261206-002439-quick has "
                               "no cells of workload thp-swpout on nvme")
