"""Figures from a program's text output, by the workload's `parse` rules
(lab.spec.parserules): each rule's named groups, over every line that
matches, aggregated into one value per group. Kept in the cell result
as `workload.parsed`, so the statistics never read the matrix again."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.spec.model import ParseRule

# The output lines no rule matched that a failed or partial cell keeps.
UNPARSED_KEPT = 20


@dataclass
class Parsed:
    # metric name -> {"value", "unit", "better", "lines"}
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)
    unparsed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def metric_name(program: str, group: str) -> str:
    """`<program>.<group>`: usemem's kbps is usemem.kbps."""
    return f"{Path(program).name}.{group}"


def _aggregate(how: str, values: list[float]) -> float:
    if how == "max":
        return max(values)
    if how == "mean":
        return statistics.fmean(values)
    return sum(values)


def read_figures(rules: tuple[ParseRule, ...], program: str,
                 text: str) -> Parsed:
    """The figures `rules` find in `text`; a group that matched nowhere
    is not a figure (and is named in `problems`), never a zero."""
    out = Parsed()
    compiled = [(r, re.compile(r.pattern)) for r in rules]
    found: dict[str, list[float]] = {m.group: [] for r in rules
                                     for m in r.metrics}
    for line in text.splitlines():
        matched = False
        for rule, regex in compiled:
            m = regex.search(line)
            if not m:
                continue
            matched = True
            for pm in rule.metrics:
                raw = m.group(pm.group)
                if raw is None:         # an alternative it is not in
                    continue
                try:
                    found[pm.group].append(float(raw))
                except (TypeError, ValueError):
                    out.problems.append(f"{pm.group}: {raw!r} in {line!r} "
                                        "is not a number")
        if not matched and line.strip() and \
                len(out.unparsed) < UNPARSED_KEPT:
            out.unparsed.append(line)
    for rule in rules:
        for pm in rule.metrics:
            values = found[pm.group]
            if not values:
                out.problems.append(f"{pm.group}: no line matched "
                                    f"{rule.pattern!r} ({rule.where})")
                continue
            out.figures[metric_name(program, pm.group)] = {
                "value": _aggregate(pm.aggregate, values), "unit": pm.unit,
                "better": pm.better, "lines": len(values)}
    return out
