"""The order covariate, on the committed raw cells of a real quick run."""
from __future__ import annotations

import math

import pytest

from lab.paths import REPO
from lab.results import order
from lab.results.metrics import Metric
from lab.results.store import open_results_dir, seconds

RUN = REPO / "reports" / "20261205-211149-quick" / "raw"
SEQ_AVG = "swapbench.main.latency.avg_us"


@pytest.fixture(scope="module")
def records():
    return list(open_results_dir(RUN).records().values())


def by_start(records):
    return sorted(records, key=lambda r: (r.provenance["started"], r.cell.id))


def test_first_flags_follow_changes_and_gaps(records) -> None:
    flags = order.first_flags(records)
    timed = by_start(records)
    assert flags[timed[0].cell.id]
    changes = gaps = 0
    for prev, rec in zip(timed, timed[1:]):
        same = (prev.cell.workload, prev.cell.backend) == \
            (rec.cell.workload, rec.cell.backend)
        gap = seconds(rec.provenance["started"]) - \
            seconds(prev.provenance["ended"])
        changes += not same
        gaps += same and gap > order.SESSION_GAP_S
        if same and gap <= order.SESSION_GAP_S:
            assert not flags[rec.cell.id], rec.cell.id
    # this run had blocks of both kinds, and resumed sessions
    assert changes >= 10 and gaps >= 1
    assert sum(flags.values()) == 1 + changes + gaps


def test_effect_on_real_cells_counts_every_arm(records) -> None:
    eff = order.order_effect(records, "seq", "nvme", SEQ_AVG)
    assert eff is not None
    seq = [r for r in records if (r.cell.workload, r.cell.backend) ==
           ("seq", "nvme") and r.outcome == "ok"]
    assert eff.first + eff.rest == len(seq)
    assert eff.low < eff.pct < eff.high and 0 <= eff.p <= 1


def test_a_slow_first_slot_is_found(records, monkeypatch) -> None:
    """Every first cell 50 % slower, every other cell alike within 1 %:
    the effect reads +50 %."""
    flags = order.first_flags(records)
    ids = sorted(r.cell.id for r in records
                 if (r.cell.workload, r.cell.backend) == ("seq", "nvme"))

    def fake(result):
        cid = result["cell"]
        jitter = 1 + 0.01 * math.sin(ids.index(cid))
        return {SEQ_AVG: Metric(100.0 * jitter * (1.5 if flags[cid] else 1),
                                "us", "lower")}

    shown = [r.__class__(r.path, r.cell, r.inputs_hash, r.provenance,
                         {**r.result, "cell": r.cell.id}) for r in records]
    monkeypatch.setattr(order, "cell_metrics", fake)
    eff = order.order_effect(shown, "seq", "nvme", SEQ_AVG)
    assert eff is not None and eff.first >= 2
    assert 48 < eff.pct < 52 and 40 < eff.low and eff.high < 60
    assert eff.p < 0.001


def test_no_effect_without_two_cells_a_side(records) -> None:
    assert order.order_effect(records, "seq", "dax-pmem", SEQ_AVG) is None
    assert order.order_effect(records[:1], "seq", "nvme", SEQ_AVG) is None
