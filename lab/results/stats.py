"""Statistics per (workload, backend, metric, variant) against the baseline.

For each variant: n, mean, median, stddev, coefficient of variation. For
each non-baseline variant: the %change of the mean against the baseline,
its 95 % confidence interval and a verdict.

The interval comes from
  * Welch's t (unequal variances, Welch-Satterthwaite degrees of freedom)
    while either side has fewer than BOOTSTRAP_MIN_N repeats: with 3-7
    repeats a resampling method cannot see the tails and gives intervals
    that are too narrow, while t accounts for the small sample. For
    positive samples it is the interval of the log of the ratio of means
    (delta method: var = var(mean_o)/mean_o^2 + var(mean_b)/mean_b^2),
    so it carries the baseline mean's own uncertainty and a %change
    never reaches -100 %. (The difference of means scaled by the baseline
    mean gave -88 % [-111, -66] for a re-read pass 8.5x faster at 18 %
    CV.) Samples with zeros or negatives keep that scaled difference.
  * a seeded bootstrap of the ratio of means from BOOTSTRAP_MIN_N repeats
    on each side: it assumes no normality, which matters for skewed
    metrics such as tail latencies, and carries the baseline's own
    uncertainty into the ratio. The plain percentile interval is too
    narrow for small samples (A/A false positives measured at 9 % for
    n=8, 7 % for n=12 instead of 5 %), so it uses Hesterberg's expanded
    percentile interval: the percentile level is widened to what
    sqrt(n/(n-1)) * t(n-1) asks of a normal (measured: 3.5-4.5 %).
A change is significant when its interval excludes 0, and never with
fewer than MIN_N repeats on either side (verdict "n<3").

The A/A noise estimate pools the CVs of all variants of a (workload,
backend, metric) (repeats of one variant differ only by noise) and gives
the half-width of the interval a comparison of two same-size samples
with that CV would have (of the log ratio: to first order, the %change):
the smallest %change the run could call significant. A real change of
that size is found about half the time.
"""
from __future__ import annotations

import math
import statistics
import zlib
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats as sps

from lab.results.metricinfo import HIGHER, LOWER, Key, MetricInfo

CONFIDENCE = 0.95
MIN_N = 3
BOOTSTRAP_MIN_N = 8
RESAMPLES = 10_000


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    stddev: float | None             # sample stddev; None below 2 values
    cv: float | None                 # stddev / mean, as a fraction

    @property
    def cv_pct(self) -> float | None:
        return None if self.cv is None else 100.0 * self.cv


@dataclass(frozen=True)
class Change:
    pct: float | None                # %change of the mean; None if base 0
    low: float | None                # CI of pct
    high: float | None
    method: str | None               # "welch" | "bootstrap" | None (n<3)
    p: float | None                  # Welch's two-sided p-value (of the
                                     # log ratio for positive samples)
    verdict: str                     # n<3 | ns | better | worse | changed

    @property
    def significant(self) -> bool:
        return self.verdict in ("better", "worse", "changed")


@dataclass(frozen=True)
class Noise:
    cv_pct: float | None             # pooled over the variants
    df: int                          # degrees of freedom of the pooled CV
    detectable_pct: float | None     # None: fewer than MIN_N repeats


@dataclass(frozen=True)
class Row:
    workload: str
    backend: str
    metric: str
    variant: str
    unit: str
    better: str
    headline: bool
    summary: Summary
    change: Change | None            # None for the baseline, or no base
    noise: Noise


def summarize(values: Sequence[float]) -> Summary:
    n = len(values)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if n >= 2 else None
    cv = sd / abs(mean) if sd is not None and mean != 0 else None
    return Summary(n, mean, statistics.median(values), sd, cv)


def welch_se_df(var_b: float, var_o: float, n_b: int,
                n_o: int) -> tuple[float, float]:
    """(standard error, Welch-Satterthwaite degrees of freedom) of an
    estimate whose variance is var_b + var_o, from samples of n_b and n_o
    values; df is inf when the standard error is 0."""
    se = math.sqrt(var_b + var_o)
    if se == 0:
        return 0.0, math.inf
    return se, (var_b + var_o) ** 2 / (var_b ** 2 / (n_b - 1) +
                                       var_o ** 2 / (n_o - 1))


def log_ratio_terms(base: Sequence[float],
                    other: Sequence[float]) -> tuple[float, float, float]:
    """(log(mean(other) / mean(base)), its standard error, Welch df) for
    positive samples: the variance of the log of a mean is its squared CV
    (delta method)."""
    b, o = summarize(base), summarize(other)
    se, df = welch_se_df((b.cv or 0.0) ** 2 / b.n, (o.cv or 0.0) ** 2 / o.n,
                         b.n, o.n)
    return math.log(o.mean / b.mean), se, df


def _welch_t(estimate: float, var_b: float, var_o: float, n_b: int,
             n_o: int, confidence: float) -> tuple[float, float]:
    """(CI half-width, two-sided p) of `estimate`, whose variance is
    var_b + var_o from samples of n_b and n_o values, by Welch's t with
    Welch-Satterthwaite degrees of freedom."""
    se, df = welch_se_df(var_b, var_o, n_b, n_o)
    if se == 0:
        # Both sides constant (deterministic counters): any difference is
        # exact, none is none.
        return 0.0, 1.0 if estimate == 0 else 0.0
    half = sps.t.ppf(0.5 + confidence / 2, df) * se
    return half, float(2 * sps.t.sf(abs(estimate) / se, df))


def welch(base: Sequence[float], other: Sequence[float],
          confidence: float = CONFIDENCE) -> tuple[float, float, float,
                                                   float]:
    """(difference of means, CI low, CI high, two-sided p) by Welch's t."""
    b, o = summarize(base), summarize(other)
    diff = o.mean - b.mean
    half, p = _welch_t(diff, (b.stddev or 0.0) ** 2 / b.n,
                       (o.stddev or 0.0) ** 2 / o.n, b.n, o.n, confidence)
    return diff, diff - half, diff + half, p


def welch_log_ratio(base: Sequence[float], other: Sequence[float],
                    confidence: float = CONFIDENCE) -> tuple[float, float,
                                                             float, float]:
    """(mean(other) / mean(base), CI low, CI high, two-sided p) by Welch's
    t on the log of the ratio of means; every value positive."""
    b, o = summarize(base), summarize(other)
    ratio = o.mean / b.mean
    # The variance of the log of a mean is its squared CV (delta method).
    half, p = _welch_t(math.log(ratio), (b.cv or 0.0) ** 2 / b.n,
                       (o.cv or 0.0) ** 2 / o.n, b.n, o.n, confidence)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half), p


def bootstrap_ratio(base: Sequence[float], other: Sequence[float],
                    seed: int, confidence: float = CONFIDENCE,
                    resamples: int = RESAMPLES) -> tuple[float, float]:
    """Percentile interval of mean(other) / mean(base), resampling each
    side independently."""
    rng = np.random.default_rng(seed)
    b, o = np.asarray(base, float), np.asarray(other, float)
    mb = b[rng.integers(0, len(b), (resamples, len(b)))].mean(axis=1)
    mo = o[rng.integers(0, len(o), (resamples, len(o)))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = mo / mb
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratio, [tail, 100 - tail])
    return float(low), float(high)


def expanded_confidence(confidence: float, n: int) -> float:
    """The percentile level of Hesterberg's expanded bootstrap interval."""
    z = math.sqrt(n / (n - 1)) * sps.t.ppf(0.5 + confidence / 2, n - 1)
    return 2 * sps.norm.cdf(z) - 1


def compare(base: Sequence[float], other: Sequence[float], better: str,
            seed: int = 0) -> Change:
    """The change of `other` against `base` for a metric whose `better`
    direction is HIGHER, LOWER or NEUTRAL."""
    mb, mo = statistics.fmean(base), statistics.fmean(other)
    pct = 100.0 * (mo - mb) / abs(mb) if mb != 0 else None
    if min(len(base), len(other)) < MIN_N:
        return Change(pct, None, None, None, None, "n<3")
    diff, dlow, dhigh, p = welch(base, other)
    if mb == 0:
        low = high = None
        method = "welch"
        significant = p < 1 - CONFIDENCE
    elif min(len(base), len(other)) >= BOOTSTRAP_MIN_N and min(base) > 0:
        # (A baseline with zeros can resample to a mean of 0: no ratio.)
        level = expanded_confidence(CONFIDENCE, min(len(base), len(other)))
        rlow, rhigh = bootstrap_ratio(base, other, seed, level)
        low, high = 100.0 * (rlow - 1), 100.0 * (rhigh - 1)
        method = "bootstrap"
        significant = low > 0 or high < 0
    elif min(base) > 0 and min(other) > 0:
        _, rlow, rhigh, p = welch_log_ratio(base, other)
        low, high = 100.0 * (rlow - 1), 100.0 * (rhigh - 1)
        method = "welch"
        significant = low > 0 or high < 0
    else:
        low, high = 100.0 * dlow / abs(mb), 100.0 * dhigh / abs(mb)
        method = "welch"
        significant = low > 0 or high < 0
    if not significant:
        verdict = "ns"
    elif better == HIGHER:
        verdict = "better" if diff > 0 else "worse"
    elif better == LOWER:
        verdict = "better" if diff < 0 else "worse"
    else:
        verdict = "changed"
    return Change(pct, low, high, method, p, verdict)


def noise(summaries: Sequence[Summary],
          confidence: float = CONFIDENCE) -> Noise:
    """A/A estimate from the repeats of each variant (see module doc)."""
    usable = [(s.n, s.cv) for s in summaries if s.n >= 2 and s.cv is not None]
    df = sum(n - 1 for n, _ in usable)
    if df == 0:
        return Noise(None, 0, None)
    cv = math.sqrt(sum((n - 1) * c ** 2 for n, c in usable) / df)
    n = int(statistics.median(s.n for s in summaries))
    if n < MIN_N:
        return Noise(100.0 * cv, df, None)
    t = sps.t.ppf(0.5 + confidence / 2, 2 * n - 2)
    return Noise(100.0 * cv, df, 100.0 * t * cv * math.sqrt(2 / n))


def analyze(values: Mapping[Key, Sequence[float]],
            info: Mapping[str, MetricInfo], baseline: str,
            seed: int = 0) -> list[Row]:
    """Rows for every key, in the order of `values`; changes against the
    `baseline` variant of the same workload, backend and metric."""
    summaries = {k: summarize(v) for k, v in values.items() if v}
    groups: dict[tuple[str, str, str], list[Summary]] = {}
    for (wl, be, metric, _), s in summaries.items():
        groups.setdefault((wl, be, metric), []).append(s)
    noises = {g: noise(ss) for g, ss in groups.items()}
    rows = []
    for key, s in summaries.items():
        wl, be, metric, variant = key
        meta = info[metric]
        base = values.get((wl, be, metric, baseline))
        change = None
        if variant != baseline and base:
            # Seeded by the key, so a table is the same every time it is
            # made and does not depend on what else is in the run.
            key_seed = zlib.crc32("/".join(key).encode()) ^ seed
            change = compare(base, values[key], meta.better, key_seed)
        rows.append(Row(wl, be, metric, variant, meta.unit, meta.better,
                        meta.headline, s, change, noises[(wl, be, metric)]))
    return rows
