"""The "upstream first" ranking: the fixture run and constructed data."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import random
from pathlib import Path
from typing import Mapping

import pytest

from lab.paths import REPO
from lab.report import analysis, upstream
from lab.results.metrics import HIGHER, MetricInfo, Samples
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


def test_clearly_better_patch_ranks_first():
    rec = upstream.recommend(constructed({"readahead": 1.0,
                                          "thp-stage1": 1.25}), MATRIX)
    assert [c.name for c in rec.ranked] == ["thp-stage1", "readahead"]
    assert rec.ranked[0].wins == 2 and rec.ranked[1].wins == 0
    assert "cannot separate" not in rec.separation[0]
    assert rec.separation[0].startswith("thp-stage1 ranks above readahead")


def test_effect_verdicts_read_as_words():
    rec = upstream.recommend(constructed({"readahead": 1.0,
                                          "thp-stage1": 1.25}), MATRIX)
    lines = [e.text() for c in rec.ranked for e in c.effects]
    assert any(" not significant (readahead vs base" in t for t in lines)
    assert any(" better (thp-stage1 vs base" in t for t in lines)
    assert not any(" ns " in t for t in lines)


def test_inseparable_patches_are_said_so():
    rec = upstream.recommend(constructed({"readahead": 1.0,
                                          "thp-stage1": 1.0}), MATRIX)
    assert len(rec.ranked) == 2
    assert rec.separation[0].startswith(
        "The data cannot separate ")
    assert "by cost only" in rec.separation[0]
    md = upstream.markdown(rec, "line")
    assert "cannot separate" in md


def test_verdict_follows_the_ranking():
    clear = upstream.recommend(constructed({"readahead": 1.0,
                                            "thp-stage1": 1.25}), MATRIX)
    assert upstream.verdict(clear) == "Send thp-stage1 first"
    tied = upstream.recommend(constructed({"readahead": 1.0,
                                           "thp-stage1": 1.0}), MATRIX)
    assert upstream.verdict(tied).startswith(
        "No clear first: the data cannot separate ")


def test_too_few_repeats_to_rank():
    # One repeat: a +25 % that nothing can judge ranks nothing.
    rec = upstream.recommend(constructed({"readahead": 1.0,
                                          "thp-stage1": 1.25}, n=1), MATRIX)
    assert all(c.unjudged for c in rec.ranked)
    assert rec.separation[0].startswith("The data cannot separate ")
    assert "too few repeats" in rec.separation[0]
    assert upstream.verdict(rec) == (
        "Too few repeats to rank: no comparison has 3 repeats a side, so "
        f"{rec.ranked[0].name}, {rec.ranked[1].name} are in order of cost "
        "only")


def test_effect_that_differs_by_device_is_said_so():
    rec = upstream.recommend(constructed(
        {"readahead": {"nvme": 1.3, "rotational": 1.0}}), MATRIX)
    ra, = rec.ranked
    nvme, rot = (next(e for e in ra.effects if e.backend == be)
                 for be in ("nvme", "rotational"))
    # The constructed case: CIs that do not overlap.
    assert nvme.change.low > rot.change.high
    assert ra.interactions == [
        f"throughput on seq differs by device (nvme vs rotational): "
        f"{nvme.change.pct:+.1f} % vs {rot.change.pct:+.1f} %, CIs do not "
        "overlap"]
    same = upstream.recommend(constructed({"readahead": 1.3}), MATRIX)
    assert same.ranked[0].interactions == [
        "throughput on seq: no evidence the effect depends on the device "
        "(CIs overlap across nvme, rotational)"]


def test_added_series_pairs():
    v = MATRIX.variants
    assert upstream.added(v["readahead"], v["base"]) == ("readahead",)
    assert upstream.added(v["thp-stage2"], v["thp-stage1"]) == \
        ("thp-stage2",)
    assert upstream.added(v["everything"], v["thp-stage2"]) == \
        ("readahead",)
    assert upstream.added(v["base"], v["readahead"]) is None
    assert upstream.added(v["upstream-6.12"], v["upstream"]) is None


def numstat(patch: Path) -> int:
    """Added plus removed lines, as git itself counts them."""
    out = subprocess.run(["git", "apply", "--numstat", str(patch)],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(a) + int(d) for a, d, _ in
               (line.split("\t") for line in out.splitlines()))


@pytest.mark.parametrize("series", ["thp-stage1", "thp-stage2",
                                    "readahead", "thp-swapin"])
def test_lines_changed_counts_code_lines_only(series: str) -> None:
    """git's count less the blank lines the patches add or remove: the
    commit message (its blank lines, a "- " bullet), the diffstat and
    the "-- " signature never count."""
    d = MATRIX.series_dir("linux-source-6.1", series)
    patches = sorted(d.glob("*.patch"))
    blank = sum(1 for p in patches for ln in p.read_text().splitlines()
                if re.fullmatch(r"[+-]\s*", ln))
    want = sum(numstat(p) for p in patches) - blank
    assert upstream.lines_changed(MATRIX, "linux-source-6.1",
                                  series) == want > 0


def test_code_lines_skip_message_and_signature() -> None:
    patch = ("Subject: [PATCH] mm: x\n\nWhy.\n\n- a bullet\n+ another\n"
             "---\n mm/x.c | 3 ++-\n\ndiff --git a/mm/x.c b/mm/x.c\n"
             "--- a/mm/x.c\n+++ b/mm/x.c\n@@ -1,2 +1,3 @@\n ctx\n-old\n"
             "+new\n+\n+\t\n-- \n2.39.2\n")
    assert upstream.code_lines(patch) == 2


@pytest.fixture(scope="module")
def fixture_rec():
    run = Store(DATA).open("fixture-run")
    return upstream.recommend(analysis.Results.of(run),
                              run_matrix(run))


def test_fixture_ranking_and_bundles(fixture_rec):
    names = [c.name for c in fixture_rec.ranked]
    # The fixture has thp-stage2 but not thp-stage1: the two are one
    # candidate, and the evidence says why.
    assert names == ["readahead", "thp-stage1 + thp-stage2"]
    assert "measured together" in upstream.evidence(
        fixture_rec.ranked[1])[0]
    # The baseline's own series are the starting point, not candidates.
    assert not {"counters", "baseline"} & set(fixture_rec.unranked)
    ra = fixture_rec.ranked[0]
    assert ra.pairs == [("readahead", "base")] and not ra.complaints


def test_kernel_complaints_demote(fixture_rec):
    ra, thp = fixture_rec.ranked
    warned = dataclasses.replace(ra, complaints={"warn": 2})
    assert upstream.separation(thp, warned).endswith("(warn x2)")
    assert sorted([warned, thp], key=upstream._key)[0] is thp
