"""Statistics: hand-computed cases and known distributions."""
from __future__ import annotations

import math
import random

import pytest
from scipy import stats as sps

from lab.results.metrics import HIGHER, LOWER, NEUTRAL, MetricInfo
from lab.results.stats import (analyze, compare, expanded_confidence, noise,
                       summarize, welch)


def normal(rng: random.Random, mean: float, cv: float, n: int) -> list[float]:
    return [rng.gauss(mean, mean * cv) for _ in range(n)]


def test_summary_by_hand():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.mean, s.median) == (4, 2.5, 2.5)
    assert s.stddev == pytest.approx(math.sqrt(5 / 3))
    assert s.cv == pytest.approx(math.sqrt(5 / 3) / 2.5)
    one = summarize([7.0])
    assert one.stddev is None and one.cv is None


def test_welch_by_hand():
    base, other = [10.0, 12.0, 14.0], [15.0, 17.0, 19.0, 21.0]
    diff, low, high, p = welch(base, other)
    # means 12 and 18; variances 4 and 20/3: se^2 = 4/3 + 5/3 = 3;
    # df = 3^2 / ((4/3)^2/2 + (5/3)^2/3) = 9 / (8/9 + 25/27) = 4.959...
    df = 9 / (8 / 9 + 25 / 27)
    half = sps.t.ppf(0.975, df) * math.sqrt(3)
    assert diff == 6.0
    assert (low, high) == pytest.approx((6 - half, 6 + half))
    assert p == pytest.approx(
        sps.ttest_ind(other, base, equal_var=False).pvalue)


def test_change_interval_is_welch_on_the_log_ratio_by_hand():
    base, other = [10.0, 12.0, 14.0], [15.0, 17.0, 19.0, 21.0]
    c = compare(base, other, HIGHER)
    # means 12 and 18, ratio 1.5; squared CVs of the means:
    # (4 / 144) / 3 = 9/972 and (20/3 / 324) / 4 = 5/972, sum 14/972;
    # df = 14^2 / (9^2/2 + 5^2/3) = 4.0137
    se = math.sqrt(14 / 972)
    df = 14 ** 2 / (9 ** 2 / 2 + 5 ** 2 / 3)
    half = sps.t.ppf(0.975, df) * se
    assert c.pct == pytest.approx(50.0)
    assert (c.low, c.high) == pytest.approx(
        (100 * (1.5 * math.exp(-half) - 1), 100 * (1.5 * math.exp(half) - 1)))
    assert c.p == pytest.approx(2 * sps.t.sf(math.log(1.5) / se, df))
    assert (c.method, c.verdict) == ("welch", "better")


def test_large_cut_stays_above_minus_100_percent():
    # An 8.5x faster pass at 18 % CV (swapin-whole, NVMe): scaling the
    # difference of means by the base mean gave -110.7 % at the low end.
    base = [11.05 * f for f in (0.78, 0.9, 1.0, 1.1, 1.22)]
    other = [1.30 * f for f in (0.85, 0.95, 1.0, 1.05, 1.15)]
    c = compare(base, other, LOWER)
    _, dlow, _, _ = welch(base, other)
    assert 100 * dlow / 11.05 < -100
    assert -100 < c.low < c.pct < c.high < 0 and c.verdict == "better"


def test_samples_with_zeros_keep_the_scaled_difference():
    base, other = [0.0, 2.0, 4.0], [5.0, 6.0, 7.0]
    c = compare(base, other, HIGHER)
    _, low, high, p = welch(base, other)
    assert (c.low, c.high, c.p) == pytest.approx((50 * low, 50 * high, p))


def test_planted_ten_percent_is_significant():
    rng = random.Random(1)
    base = normal(rng, 1000.0, 0.03, 5)
    other = normal(rng, 1100.0, 0.03, 5)
    c = compare(base, other, HIGHER)
    assert c.verdict == "better" and c.significant
    assert c.low < 10 < c.high
    assert compare(base, other, LOWER).verdict == "worse"
    assert compare(base, other, NEUTRAL).verdict == "changed"


def test_planted_change_found_nearly_always():
    # 10 % change, 3 % noise, 5 repeats: Welch's power is above 99 %.
    rng = random.Random(2)
    found = sum(compare(normal(rng, 100, 0.03, 5), normal(rng, 110, 0.03, 5),
                        HIGHER).significant for _ in range(200))
    assert found >= 190


def test_aa_false_positive_rate_is_about_five_percent():
    rng = random.Random(3)
    trials = 1000
    hits = sum(compare(normal(rng, 100, 0.05, 5), normal(rng, 100, 0.05, 5),
                       HIGHER).significant for _ in range(trials))
    # Binomial(1000, 0.05): mean 50, sd 6.9.
    assert 30 <= hits <= 72


def test_identical_samples_are_not_significant():
    same = [5.0, 6.0, 7.0, 8.0]
    c = compare(same, list(same), HIGHER)
    assert (c.pct, c.verdict) == (0.0, "ns")
    assert c.low < 0 < c.high
    flat = compare([3.0] * 4, [3.0] * 4, LOWER)
    assert (flat.pct, flat.low, flat.high, flat.verdict) == \
        (0.0, 0.0, 0.0, "ns")


def test_constant_but_different_is_significant():
    # Deterministic counters: no noise at all, any difference is real.
    c = compare([4.0, 4.0, 4.0], [5.0, 5.0, 5.0], HIGHER)
    assert (c.pct, c.low, c.high, c.verdict) == (25.0, 25.0, 25.0, "better")


@pytest.mark.parametrize("nb,no", [(1, 5), (2, 2), (2, 10), (10, 2)])
def test_fewer_than_three_repeats_never_significant(nb, no):
    c = compare([100.0 + i for i in range(nb)],
                [200.0 + i for i in range(no)], HIGHER)
    assert c.verdict == "n<3" and not c.significant
    assert c.low is None and c.high is None and c.method is None
    assert c.pct == pytest.approx(100 * ((200 + (no - 1) / 2)
                                         / (100 + (nb - 1) / 2) - 1))


def test_zero_baseline_has_no_percentage_but_a_verdict():
    c = compare([0.0, 0.0, 0.0], [170.0, 172.0, 168.0], NEUTRAL)
    assert c.pct is None and c.low is None
    assert c.verdict == "changed" and c.p < 0.001


def test_bootstrap_from_eight_repeats():
    rng = random.Random(4)
    base = normal(rng, 100.0, 0.04, 10)
    other = normal(rng, 110.0, 0.04, 10)
    c = compare(base, other, HIGHER, seed=11)
    assert c.method == "bootstrap" and c.verdict == "better"
    assert c.low < c.pct < c.high
    assert compare(base, other, HIGHER, seed=11) == c      # seeded
    w = compare(base[:7], other[:7], HIGHER)
    assert w.method == "welch"
    # Same data, two methods: the intervals roughly agree.
    assert c.low == pytest.approx(w.low, abs=3)
    assert c.high == pytest.approx(w.high, abs=3)


def test_bootstrap_aa_rate_is_near_five_percent():
    # The plain percentile interval gives ~9 % here; the expanded one
    # ~4 %. Binomial(300, 0.05): mean 15, sd 3.8.
    rng = random.Random(5)
    hits = sum(compare(normal(rng, 100, 0.05, 8), normal(rng, 100, 0.05, 8),
                       HIGHER, seed=i).significant for i in range(300))
    assert hits <= 24


def test_expanded_level():
    # n=8: sqrt(8/7) * t(0.975, 7) = 2.5277 -> 98.85 %.
    assert expanded_confidence(0.95, 8) == pytest.approx(0.98852, abs=1e-4)
    assert expanded_confidence(0.95, 10_000) == pytest.approx(0.95,
                                                              abs=1e-3)


def test_noise_by_hand():
    a = summarize([98.0, 100.0, 102.0, 99.0, 101.0])
    b = summarize([196.0, 200.0, 204.0, 198.0, 202.0])
    n = noise([a, b])
    # Both CVs are sqrt(2.5)/100 (b is a scaled by 2).
    cv = math.sqrt(2.5) / 100
    assert n.cv_pct == pytest.approx(100 * cv)
    assert n.df == 8
    assert n.detectable_pct == pytest.approx(
        100 * sps.t.ppf(0.975, 8) * cv * math.sqrt(2 / 5))


def test_noise_is_the_half_width_of_a_same_size_comparison():
    # An A/A comparison of two same-size samples with the pooled CV: the
    # interval of the log ratio is +-h with h = t * cv * sqrt(2/n), the
    # detectable change as a fraction; as %change it is
    # [exp(-h) - 1, exp(h) - 1], of half-width sinh(h).
    base = [98.0, 100.0, 102.0, 99.0, 101.0]
    c = compare(base, list(base), HIGHER)
    n = noise([summarize(base)])
    h = n.detectable_pct / 100
    assert (c.high - c.low) / 2 == pytest.approx(100 * math.sinh(h))


def test_noise_needs_repeats():
    assert noise([summarize([1.0]), summarize([2.0])]).cv_pct is None
    few = noise([summarize([1.0, 1.1]), summarize([2.0, 2.1])])
    assert few.cv_pct is not None and few.detectable_pct is None


def test_analyze_against_the_baseline():
    info = {"tp": MetricInfo("B/s", HIGHER, True)}
    values = {("seq", "nvme", "tp", "base"): [100.0, 101.0, 99.0],
              ("seq", "nvme", "tp", "ra"): [112.0, 111.0, 113.0],
              ("seq", "pmem", "tp", "ra"): [50.0, 51.0, 49.0]}
    rows = {(r.backend, r.variant): r
            for r in analyze(values, info, "base")}
    assert rows["nvme", "base"].change is None
    assert rows["nvme", "ra"].change.pct == pytest.approx(12.0)
    assert rows["nvme", "ra"].change.verdict == "better"
    assert rows["pmem", "ra"].change is None     # no baseline on pmem
    assert rows["nvme", "ra"].noise == rows["nvme", "base"].noise
    assert rows["nvme", "ra"].unit == "B/s" and rows["nvme", "ra"].headline
