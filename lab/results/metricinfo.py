"""What a metric is, apart from its value: which way is better, its unit,
whether tables always show it, and the key its values are grouped by.
A leaf, so that the statistics need not load the metric extraction."""
from __future__ import annotations

from dataclasses import dataclass

HIGHER, LOWER, NEUTRAL = "higher", "lower", "neutral"
GIB = 1 << 30
PAGE = 4096         # the guest's page size (x86-64), for pswpin/pswpout

Key = tuple[str, str, str, str]      # workload, backend, metric, variant


@dataclass(frozen=True)
class MetricInfo:
    unit: str
    better: str             # HIGHER | LOWER | NEUTRAL
    headline: bool
