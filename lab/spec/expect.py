"""Counter expectations: which kernel path a cell must have taken.

matrix.yaml's `expect` rules say, for the cells they match, how a
/proc/vmstat counter must have moved during the workload (`thp_swpout:
">0"`, `swap_ra_cluster: 0`), or how it compares with another counter's
move (`thp_swpout_split_early: "<= 5% thp_swpout"`: a path that a few
THPs may leave by a race, but not most). A cell that breaks one is not a
measurement of its variant: the kernel did not run the code the variant
stands for, so the cell test fails with the counter, the condition and
the value the guest reported.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from lab.spec.fields import expected
from lab.spec.model import Cell, Condition, Expectation
from lab.spec.yamlsrc import Node

COUNTER = r"[a-z][a-z0-9_]*"
CONDITION_RE = re.compile(
    r"\s*(>=|<=|==|>|<)?\s*(\d{1,18})\s*(?:%\s*(" + COUNTER + r"))?\s*")
COUNTER_RE = re.compile(COUNTER)


def condition(node: Node) -> Condition:
    """`0`, `">0"`, `">= 512"`, `"<= 5% thp_swpout"`...: a bare number
    means equal."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return Condition("==", value)
    match = CONDITION_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise expected(node, "a counter condition such as 0, \">0\", "
                       "\">= 512\" or \"<= 5% thp_swpout\"")
    return Condition(match.group(1) or "==", int(match.group(2)),
                     match.group(3) or "")


def counters(node: Node) -> dict[str, Condition]:
    if not isinstance(node.value, dict) or not node.value:
        raise expected(node, "a mapping of /proc/vmstat counter to "
                       "condition")
    out = {}
    for name, child in node.value.items():
        if not COUNTER_RE.fullmatch(name):
            raise node.error(f"'{name}' is not a /proc/vmstat counter name",
                             name)
        out[name] = condition(child)
    return out


def check(expectations: Iterable[Expectation], cell: Cell,
          result: Mapping[str, Any]) -> list[str]:
    """Every broken expectation matching `cell`, as a sentence."""
    after = (result.get("after") or {}).get("vmstat") or {}
    delta = (result.get("delta") or {}).get("vmstat") or {}
    problems = []
    for exp in expectations:
        if not exp.where.matches(cell):
            continue
        for name, cond in exp.vmstat.items():
            where = f"({exp.origin})"
            missing = [c for c in (name, cond.of) if c and c not in after]
            if missing:
                problems.append(f"expected vmstat {name} {cond} {where}, "
                                "but the guest's /proc/vmstat has no "
                                f"{' or '.join(missing)}")
            elif not cond.holds(delta.get(name, 0), delta):
                of = f" ({cond.bound(delta):g})" if cond.of else ""
                problems.append(f"expected vmstat {name} {cond}{of} during "
                                f"the workload {where}, the guest counted "
                                f"{delta.get(name, 0)}")
    return problems
