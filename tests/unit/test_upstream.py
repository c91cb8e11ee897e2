"""The "upstream first" ranking: the fixture run and constructed data."""
from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Mapping

import pytest

from lab.paths import REPO
from lab.report import analysis, upstream
from lab.report.effect import Effect
from lab.results.metrics import HIGHER, MetricInfo, Samples
from lab.results import stats
from lab.results.stats import analyze
from lab.results.runmatrix import run_matrix
from lab.results.store import Source, Store
from lab.spec.matrix import load_matrix

DATA = Path(__file__).resolve().parent.parent / "data"
MATRIX = load_matrix(REPO / "matrix.yaml")
METRIC = "swapbench.main.bytes_per_s"


def constructed(factors: Mapping[str, float | Mapping[str, float]],
                n: int = 5, cv: float = 0.02) -> analysis.Results:
    """A seq-only run of base + `factors`' variants on nvme and
    rotational: each variant's throughput is base's times its factor (a
    factor per backend when it is a mapping)."""
    rng = random.Random(3)
    variants = ("base", *factors)

    def factor(v: str, be: str) -> float:
        f = factors.get(v, 1.0)
        return f[be] if isinstance(f, Mapping) else f
    values = {("seq", be, METRIC, v): [100e6 * factor(v, be) *
                                       rng.gauss(1, cv) for _ in range(n)]
              for be in ("nvme", "rotational") for v in variants}
    info = {METRIC: MetricInfo("B/s", HIGHER, True)}
    source = Source("constructed", "matrix.yaml", "0" * 64, "test", "base",
                    n, variants, ("nvme", "rotational"), ("seq",))
    return analysis.Results(source, analyze(values, info, "base"),
                           Samples(values, info, {}), {}, {})


def merged_ranking(factors: Mapping[str, float | Mapping[str, float]],
                   n: int = 5) -> upstream.Ranking:
    """readahead and the THP stages are merged upstream: they are ranked
    only for the backtest."""
    rec = upstream.recommend(constructed(factors, n), MATRIX)
    assert not rec.ranked and rec.merged is not None
    return rec.merged


def test_clearly_better_patch_ranks_first():
    rec = merged_ranking({"readahead": 1.0, "thp-stage1": 1.25})
    assert [c.name for c in rec.ranked] == ["thp-stage1", "readahead"]
    assert rec.ranked[0].wins == 2 and rec.ranked[1].wins == 0
    assert "cannot separate" not in rec.separation[0]
    assert rec.separation[0].startswith("thp-stage1 ranks above readahead")


def test_effect_verdicts_read_as_words():
    rec = merged_ranking({"readahead": 1.0, "thp-stage1": 1.25})
    lines = [e.text() for c in rec.ranked for e in c.effects]
    assert any(" not significant (readahead vs base" in t for t in lines)
    assert any(" better (thp-stage1 vs base" in t for t in lines)
    assert not any(" ns " in t for t in lines)
    assert all(", q=0." in t for t in lines)


def test_inseparable_patches_are_said_so():
    rec = merged_ranking({"readahead": 1.0, "thp-stage1": 1.0})
    assert len(rec.ranked) == 2
    assert rec.separation[0].startswith("The data cannot separate ")
    assert "by cost only" in rec.separation[0]


def test_verdict_follows_the_ranking():
    clear = merged_ranking({"readahead": 1.0, "thp-stage1": 1.25})
    assert upstream.verdict(clear) == "Send thp-stage1 first"
    # Nothing wins: no recommendation, whatever the order by cost.
    tied = merged_ranking({"readahead": 1.0, "thp-stage1": 1.0})
    assert upstream.verdict(tied) == (
        "No recommendation: no series wins significantly on its primary "
        "metric (false-discovery controlled)")
    both = merged_ranking({"readahead": 1.25, "thp-stage1": 1.25})
    assert upstream.verdict(both).startswith(
        "No clear first: the data cannot separate ")


def test_a_loss_or_a_risk_to_data_blocks_a_recommendation():
    clear = merged_ranking({"readahead": 1.0, "thp-stage1": 1.25})
    best = clear.ranked[0]
    best.risks.mismatches = 3
    assert best.risks.blocking and not best.recommendable
    assert upstream.verdict(clear) == (
        "No recommendation: thp-stage1, the best ranked, also shows 3 "
        "pages read back wrong")
    mixed = merged_ranking({"thp-stage1": {"nvme": 1.25,
                                           "rotational": 0.8}})
    assert upstream.verdict(mixed) == (
        "No recommendation: thp-stage1, the best ranked, also regresses")


def test_too_few_repeats_to_rank():
    # One repeat: a +25 % that nothing can judge ranks nothing.
    rec = merged_ranking({"readahead": 1.0, "thp-stage1": 1.25}, n=1)
    assert all(c.unjudged for c in rec.ranked)
    assert rec.separation[0].startswith("The data cannot separate ")
    assert "too few repeats" in rec.separation[0]
    assert upstream.verdict(rec) == (
        "No recommendation: too few repeats to rank (no comparison has 3 "
        "repeats a side)")


def test_effect_that_differs_by_device_is_said_so():
    ra, = merged_ranking({"readahead": {"nvme": 1.3,
                                        "rotational": 1.0}}).ranked
    nvme, rot = (next(e for e in ra.effects if e.backend == be)
                 for be in ("nvme", "rotational"))
    # The constructed case: CIs that do not overlap.
    assert nvme.change.low > rot.change.high
    assert ra.interactions == [
        f"throughput on seq differs by device (nvme vs rotational): "
        f"{nvme.change.pct:+.1f} % vs {rot.change.pct:+.1f} %, CIs do not "
        "overlap"]
    same, = merged_ranking({"readahead": 1.3}).ranked
    assert same.interactions == [
        "throughput on seq: no evidence the effect depends on the device "
        "(CIs overlap across nvme, rotational)"]


def test_a_bundle_never_stands_beside_its_parts():
    # everything adds thp-stage1 + thp-stage2 to readahead, and thp-stage1
    # is judged alone (against base): thp-stage2 has no pair of its own,
    # and the bundle holding it would stand beside thp-stage1.
    rec = merged_ranking({"readahead": 1.0, "thp-stage1": 1.0,
                          "everything": 1.3})
    assert sorted(c.series for c in rec.ranked) == [("readahead",),
                                                   ("thp-stage1",)]
    why = rec.unranked["thp-stage2"]
    assert why.startswith("measured only together with ") and \
        why.endswith("(judged alone)")
    ra = rec.find("readahead")
    assert ra is not None and ra.pairs == [("readahead", "base")]


def test_false_discovery_control_drops_a_lone_marginal_win():
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    info = MetricInfo("B/s", HIGHER, True)
    marginal = stats.compare(base, [102.5, 103.5, 101.0, 102.0, 104.0],
                             HIGHER)
    assert marginal.verdict == "better" and 0.0025 < marginal.p < 0.05
    null = stats.compare(base, [100.2, 99.8, 100.9, 99.1, 100.0], HIGHER)
    effects = [Effect("a", "b", "seq", be, METRIC, info.better,
                               (5, 5), c)
               for be, c in (("nvme", marginal), *(
                   (f"d{i}", null) for i in range(19)))]
    judged = upstream.controlled(effects)
    assert judged[0].q == pytest.approx(min(1.0, marginal.p * 20))
    assert judged[0].change.verdict == "ns"
    assert upstream.controlled(effects[:1])[0].change.verdict == "better"


def test_send_order_puts_what_a_series_is_built_on_first():
    rec = merged_ranking({"thp-stage1": 1.0, "thp-stage2": 1.5})
    assert [c.name for c in rec.ranked] == ["thp-stage2", "thp-stage1"]
    assert [c.name for c in rec.order] == ["thp-stage1", "thp-stage2"]
    assert rec.ranked[0].needs == ("counters", "sync-bypass-switch",
                                   "baseline", "thp-stage1")
    assert upstream.verdict(rec) == (
        "Send thp-stage1 first: thp-stage2, the best ranked, is built on "
        "it")


def test_series_upstream_lacks_are_the_candidates():
    rec = upstream.recommend(constructed({"thp-stage1": 1.0,
                                          "thp-stage2": 1.0,
                                          "thp-swapin": 2.0}), MATRIX)
    assert [c.name for c in rec.ranked] == ["thp-swapin"]
    assert rec.ranked[0].pairs == [("thp-swapin", "thp-stage2")]
    assert rec.merged is not None and {
        c.name for c in rec.merged.ranked} == {"thp-stage1", "thp-stage2"}
    assert upstream.verdict(rec) == "Send thp-swapin first"


@pytest.fixture(scope="module")
def fixture_rec():
    run = Store(DATA).open("fixture-run")
    return upstream.recommend(analysis.Results.of(run),
                              run_matrix(run))


def test_fixture_ranking_and_bundles(fixture_rec):
    merged = fixture_rec.merged
    names = [c.name for c in merged.ranked]
    # The fixture has thp-stage2 but not thp-stage1: the two are one
    # candidate, and the evidence says why.
    assert names == ["thp-stage1 + thp-stage2", "readahead"]
    assert "measured together" in upstream.evidence(merged.ranked[0])[0]
    # The baseline's own series are the starting point, not candidates.
    assert not {"counters", "baseline"} & set(merged.unranked)
    ra = merged.ranked[1]
    assert ra.pairs == [("readahead", "base")] and not ra.risks.complaints
    # Nothing is significant once the family is controlled; readahead's
    # hung cell and its max-latency tail are its risks, and rank it last.
    assert ra.risks.failed == {"readahead-rotational-seq-r3": "hang"}
    assert [e.metric for e in ra.risks.tails] == [
        "swapbench.main.latency.max_us"]
    assert upstream.verdict(merged).startswith("No recommendation: ")


def test_kernel_complaints_demote(fixture_rec):
    thp, ra = fixture_rec.merged.ranked
    warned = dataclasses.replace(ra, risks=dataclasses.replace(
        ra.risks, complaints={"warn": 2}))
    assert "new kernel complaints: warn x2" in upstream.separation(
        thp, warned)
    assert sorted([warned, thp], key=upstream._key)[0] is thp
