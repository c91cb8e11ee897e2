"""A workload's `output` and `parse` keys: how the lab reads figures
from a program that does not print swaplab's JSON.

    workloads:
      usemem:
        program: usemem
        args: [-n, 2, 250m]
        parse: usemem                  # a preset, or rules:
      mine:
        program: mine
        output: text                   # implied by `parse`
        parse:
          - pattern: '(?P<kbps>\\d+) KB/s after (?P<usecs>\\d+) usecs'
            metrics:
              kbps: {unit: KB/s, better: higher, aggregate: sum}
              usecs: {unit: us, better: lower, aggregate: max}

Each rule is matched against every line of the program's output; the
lines that match give one value per named group, and the values of all
matching lines (one per process, typically) are aggregated. A group
becomes the metric `<program>.<group>`. `output: none` keeps only the
generic metrics (wall time, vmstat, diskstats).
"""
from __future__ import annotations

import re

from lab.spec.fields import Fields, as_list, as_str, expected
from lab.spec.model import OUTPUTS, ParsedMetric, ParseRule
from lab.spec.yamlsrc import Node

BETTER = ("higher", "lower", "neutral")
AGGREGATES = ("sum", "mean", "max")
NUMBER = r"[0-9]+(?:\.[0-9]+)?"

# vm-scalability's usemem prints one line per process:
# "294912000 bytes / 3141225 usecs = 91683 KB/s". Throughput adds up
# over processes, as lkp-tests reports it; the slowest process's time
# is the run's.
PRESETS: dict[str, tuple[ParseRule, ...]] = {
    "usemem": (ParseRule(
        rf"^\s*(?P<bytes>{NUMBER}) bytes / (?P<usecs>{NUMBER}) usecs = "
        rf"(?P<kbps>{NUMBER}) KB/s\s*$",
        (ParsedMetric("kbps", "KB/s", "higher", "sum"),
         ParsedMetric("usecs", "us", "lower", "max"),
         ParsedMetric("bytes", "bytes", "neutral", "sum")),
        "preset usemem"),),
}


def _metric(group: str, node: Node) -> ParsedMetric:
    fields = Fields(node, f"parse metric '{group}'")
    unit = as_str(fields.need("unit"), "a unit, such as KB/s")
    bnode = fields.need("better")
    better = as_str(bnode, "higher, lower or neutral")
    if better not in BETTER:
        raise expected(bnode, "higher, lower or neutral")
    anode = fields.get("aggregate")
    aggregate = as_str(anode, "sum, mean or max") if anode else "sum"
    if anode is not None and aggregate not in AGGREGATES:
        raise expected(anode, "sum, mean or max (over the matching lines)")
    fields.done()
    return ParsedMetric(group, unit, better, aggregate)


def _rule(node: Node) -> ParseRule:
    fields = Fields(node, "parse rule")
    pnode = fields.need("pattern")
    pattern = as_str(pnode, "a regular expression with named groups")
    try:
        groups = set(re.compile(pattern).groupindex)
    except re.error as exc:
        raise expected(pnode, f"a regular expression ({exc})") from None
    mnode = fields.need("metrics")
    if not isinstance(mnode.value, dict) or not mnode.value:
        raise expected(mnode, "a mapping of the pattern's named groups to "
                       "{unit, better, aggregate}")
    metrics = []
    for group, child in mnode.value.items():
        if group not in groups:
            raise mnode.error(
                f"'{group}' is not a named group of the pattern; expected "
                + (", ".join(sorted(groups)) or "a group, written "
                   "(?P<name>...)"), group)
        metrics.append(_metric(group, child))
    fields.done()
    return ParseRule(pattern, tuple(metrics), f"{pnode.file}:{pnode.line}")


def parse_rules(node: Node) -> tuple[ParseRule, ...]:
    """`parse:`, a preset's name or a list of rules; no group is named
    twice (each is one metric)."""
    if isinstance(node.value, str):
        if node.value not in PRESETS:
            raise expected(node, "a preset (" + ", ".join(PRESETS)
                           + ") or a list of rules")
        return PRESETS[node.value]
    rules = tuple(as_list(node, _rule, "parse rules"))
    seen: set[str] = set()
    for rule in rules:
        for m in rule.metrics:
            if m.group in seen:
                raise node.error(f"group '{m.group}' is named by two parse "
                                 "rules: each group is one metric")
            seen.add(m.group)
    return rules


def output_and_rules(fields: Fields, program: str
                     ) -> tuple[str, tuple[ParseRule, ...]]:
    """A workload's `output` and `parse`: text with rules, json (the
    default) or none; `parse` implies text and text needs `parse`."""
    pnode = fields.get("parse")
    rules = parse_rules(pnode) if pnode else ()
    onode = fields.get("output")
    output = as_str(onode, " or ".join(OUTPUTS)) if onode else \
        ("text" if rules else "json")
    if onode is not None and output not in OUTPUTS:
        raise expected(onode, " or ".join(OUTPUTS))
    if output == "text" and not rules:
        raise expected(onode or fields.node, f"`parse` rules for "
                       f"{program}'s text output (or output: none)")
    if rules and output != "text":
        raise expected(pnode or fields.node, f"no `parse` with output "
                       f"{output}: rules read text")
    return output, rules
