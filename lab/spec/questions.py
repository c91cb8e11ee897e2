"""matrix.yaml's `questions`: what a run must decide, declared up front.

A question names a candidate and a reference variant (or the series whose
marginal effect is wanted: the lab finds the one pair of variants that
differs only by it), a workload, the backends, one primary metric with
its better direction, and the smallest effect that matters (`delta`).

    questions:
      ra-seq-latency:
        series: readahead              # or candidate: + reference:
        workload: seq
        backends: [nvme]
        metric: swapbench.main.latency.avg_us
        better: lower
        delta: 5%
        claim:                         # optional: a published figure
          source: "001: average swap-in latency, sequential"
          change: -70%                 # or: open (asked, no figure)
          note: the seed ran 4 processes, the lab 2
          figures:                     # its other figures: reported
            swapbench.main.latency.p90_us: 158 -> 8    # beside, not tested
          explain: [vmstat.swap_ra_hit_ratio]   # each arm's median shown
          unmeasurable: "4 processes on 32 GiB: this machine has 2 cores"

Validation proves the comparison is clean: the candidate differs from the
reference only by the named series (same tree, fragments, boot and
runtime settings), and otherwise says what else differs. A pair named
without a series must be an A/A pair: a variant declared `same_as` the
other, the same kernel booted under a second name, which calibrates the
whole run.
"""
from __future__ import annotations

import re

from lab.spec.fields import (Fields, as_list, as_name, as_names, as_str,
                             expected)
from lab.spec.decisions import Claim, Figure, Question
from lab.spec.model import Variant
from lab.spec.yamlsrc import Node

BETTER = ("higher", "lower")
METRIC_RE = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+$")
DELTA_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*%$")
DURATION_RE = re.compile(r"^(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?$")
# What must be equal for a pair to differ "only by the series".
SAME = ("tree", "fragments", "cmdline", "sysfs", "sysctl")


CHANGE_RE = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s*%$")
# A claim's change for a question asked without a figure (the article's
# "does readahead help on rotational disks?").
OPEN = "open"

PAIR_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*->\s*(\d+(?:\.\d+)?)$")


def _metric(node: Node) -> str:
    name = as_str(node, "a metric name")
    if not METRIC_RE.match(name):
        raise expected(node, "a dotted metric name such as "
                       "swapbench.main.bytes_per_s")
    return name


def _figures(node: Node) -> tuple[Figure, ...]:
    if not isinstance(node.value, dict):
        raise expected(node, "a mapping of metric names to 'REFERENCE -> "
                       "CANDIDATE' values, such as "
                       "swapbench.main.latency.p90_us: 158 -> 8")
    out = []
    for metric, child in node.value.items():
        if not METRIC_RE.match(str(metric)):
            raise node.error(f"expected a dotted metric name such as "
                             f"swapbench.main.latency.p90_us, found "
                             f"'{metric}'", key=str(metric))
        m = PAIR_RE.match(str(child.value).strip())
        if not m:
            raise expected(child, "the source's two values, reference "
                           "then candidate, such as 158 -> 8")
        out.append(Figure(str(metric), float(m.group(1)),
                          float(m.group(2)), f"{child.file}:{child.line}"))
    return tuple(out)


def _claim(node: Node) -> Claim:
    fields = Fields(node, "claim")
    source = as_str(fields.need("source"), "the claim's source and figure")
    cnode = fields.need("change")
    text = str(cnode.value).strip() if isinstance(cnode.value, str) else ""
    m = CHANGE_RE.match(text)
    if text != OPEN and (not m or float(m.group(1)) <= -100):
        raise expected(cnode, "the claimed change as a percentage above "
                       f"-100, such as -70% or +12.1%, or '{OPEN}' for a "
                       "question the source left open")
    nnode = fields.get("note")
    note = as_str(nnode, "a sentence") if nnode else ""
    fnode = fields.get("figures")
    figures = _figures(fnode) if fnode else ()
    enode = fields.get("explain")
    explain = tuple(as_list(enode, _metric, "metric names")) if enode \
        else ()
    unode = fields.get("unmeasurable")
    unmeasurable = as_str(unode, "a sentence") if unode else ""
    fields.done()
    return Claim(source, float(m.group(1)) if m else None, note, figures,
                 explain, unmeasurable)


def as_duration_s(node: Node) -> int:
    """A duration like 45m, 1h30m, 90s or a bare number of seconds."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.strip():
        m = DURATION_RE.match(value.strip())
        if m and any(m.groups()):
            h, mi, s = (int(g or 0) for g in m.groups())
            if h * 3600 + mi * 60 + s > 0:
                return h * 3600 + mi * 60 + s
    raise expected(node, "a duration such as 45m, 1h30m or 900s")


def _delta(node: Node) -> float:
    value = node.value
    if isinstance(value, str):
        m = DELTA_RE.match(value.strip())
        if m and 0 < float(m.group(1)) < 100:
            return float(m.group(1))
    raise expected(node, "the smallest effect that matters as a percentage "
                   "above 0 and below 100, such as 5%")


def differences(candidate: Variant, reference: Variant,
                series: tuple[str, ...]) -> list[str]:
    """What separates the pair besides `series` ([] when nothing)."""
    out = [f"{key} ({getattr(candidate, key)!r} against "
           f"{getattr(reference, key)!r})" for key in SAME
           if getattr(candidate, key) != getattr(reference, key)]
    without = tuple(s for s in candidate.series if s not in series)
    missing = [s for s in series if s not in candidate.series]
    if missing:
        out.append(f"the candidate lacks series {', '.join(missing)}")
    if without != reference.series:
        out.append(f"series other than {', '.join(series) or 'none'}: "
                   f"candidate {list(candidate.series)}, reference "
                   f"{list(reference.series)}")
    return out


def _is_twin(a: Variant, b: Variant) -> bool:
    return a.same_as == b.name or b.same_as == a.name or (
        a.same_as is not None and a.same_as == b.same_as)


def _pair_of(series: tuple[str, ...], variants: dict[str, Variant],
             node: Node) -> tuple[str, str]:
    """The one (candidate, reference) pair that differs only by series."""
    pairs = [(c.name, r.name) for c in variants.values()
             for r in variants.values()
             if c is not r and c.same_as is None and r.same_as is None
             and not differences(c, r, series)]
    if len(pairs) == 1:
        return pairs[0]
    if not pairs:
        raise node.error(f"no two variants differ only by series "
                         f"{', '.join(series)}; name candidate and "
                         "reference")
    raise node.error(f"several pairs differ only by series "
                     f"{', '.join(series)}: "
                     f"{', '.join(f'{c}/{r}' for c, r in pairs)}; name "
                     "candidate and reference")


def question(name: str, node: Node, dims: dict[str, dict]) -> Question:
    fields = Fields(node, f"question '{name}'")
    variants: dict[str, Variant] = dims["variant"]

    def variant_of(key: str) -> tuple[str, Node] | None:
        child = fields.get(key)
        if child is None:
            return None
        value = as_name(child, "a variant name")
        if value not in variants:
            raise child.error(f"unknown variant '{value}'; expected one "
                              f"of: {', '.join(variants)}")
        return value, child

    cand, ref = variant_of("candidate"), variant_of("reference")
    snode = fields.get("series")
    series = tuple(as_names(snode, "a patch series name")) if snode else ()
    if (cand is None) != (ref is None):
        raise node.error("name both candidate and reference, or neither "
                         "(then the series picks the pair)")
    if cand is None or ref is None:
        if not series:
            raise node.error("a question needs candidate and reference, "
                             "or the series whose effect it asks about")
        pair = _pair_of(series, variants, node)
    else:
        pair = (cand[0], ref[0])
        c, r = variants[pair[0]], variants[pair[1]]
        if not series and not _is_twin(c, r):
            raise cand[1].error(
                f"'{c.name}' and '{r.name}' are not the same kernel: name "
                "the series that separates them (or declare one "
                "'same_as' the other for an A/A control)")
        if series:
            other = differences(c, r, series)
            if other:
                raise node.error(f"'{c.name}' differs from '{r.name}' by "
                                 f"more than series {', '.join(series)}: "
                                 + "; ".join(other))
    wnode = fields.need("workload")
    workload = as_name(wnode, "a workload name")
    if workload not in dims["workload"]:
        raise wnode.error(f"unknown workload '{workload}'; expected one of: "
                          f"{', '.join(dims['workload'])}")
    bnode = fields.need("backends")
    backends = tuple(as_names(bnode, "a backend name"))
    for be in backends:
        if be not in dims["backend"]:
            raise bnode.error(f"unknown backend '{be}'; expected one of: "
                              f"{', '.join(dims['backend'])}")
    metric = _metric(fields.need("metric"))
    better_node = fields.need("better")
    better = as_str(better_node, "higher or lower")
    if better not in BETTER:
        raise expected(better_node, "higher or lower")
    delta = _delta(fields.need("delta"))
    cnode = fields.get("claim")
    claim = _claim(cnode) if cnode else None
    fields.done()
    return Question(name, pair[0], pair[1], series, workload, backends,
                    metric, better, delta, f"{node.file}:{node.line}",
                    claim)


def check_covered(questions: tuple[Question, ...], sub_name: str,
                  variants: tuple[str, ...], backends: tuple[str, ...],
                  workloads: tuple[str, ...], node: Node) -> None:
    """Every cell a sub-matrix's question needs is in the sub-matrix."""
    for q in questions:
        lack = [f"variant {v}" for v in (q.candidate, q.reference)
                if v not in variants]
        lack += [f"backend {b}" for b in q.backends if b not in backends]
        if q.workload not in workloads:
            lack.append(f"workload {q.workload}")
        if lack:
            raise node.error(f"sub-matrix '{sub_name}' asks question "
                             f"'{q.name}' ({q.where}) but lacks "
                             + ", ".join(lack))

