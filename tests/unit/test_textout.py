"""Figures from a program's text output by its workload's parse rules:
the usemem preset on usemem's own lines, custom rules, the verdict of a
text-output cell on a real guest frame, and the metrics kept."""
from __future__ import annotations

import copy

import pytest

from lab.guest import textout, verdict
from lab.results.metrics import cell_metrics
from lab.spec.model import ParsedMetric, ParseRule
from lab.spec.parserules import PRESETS
from tests.unit.test_runner import judged, real, spec  # noqa: F401

# usemem -n 2 250m, as run in a guest (issue 26): one line per process,
# around its other output.
USEMEM = """\
usemem: 2 tasks
294912000 bytes / 3141225 usecs = 91683 KB/s
294912000 bytes / 3402281 usecs = 84648 KB/s
1004480 usecs to free memory
"""


def test_the_usemem_preset_adds_throughput_and_keeps_the_slowest() -> None:
    got = textout.read_figures(PRESETS["usemem"], "/opt/usemem", USEMEM)
    assert got.problems == []
    assert got.figures["usemem.kbps"] == {
        "value": 91683.0 + 84648.0, "unit": "KB/s", "better": "higher",
        "lines": 2}
    assert got.figures["usemem.usecs"]["value"] == 3402281.0
    assert got.figures["usemem.bytes"]["value"] == 2 * 294912000.0
    assert got.unparsed == ["usemem: 2 tasks", "1004480 usecs to free memory"]


@pytest.mark.parametrize("how,value", [("sum", 6.0), ("mean", 2.0),
                                       ("max", 3.0)])
def test_aggregates_over_matching_lines(how: str, value: float) -> None:
    rules = (ParseRule(r"rate=(?P<r>\d+)", (ParsedMetric("r", "ops/s",
                                                         "higher", how),),
                       "m.yaml:3"),)
    got = textout.read_figures(rules, "prog", "rate=1\nrate=2\nrate=3\n")
    assert got.figures["prog.r"]["value"] == value


def test_a_group_that_matched_nowhere_is_a_problem_not_a_zero() -> None:
    rules = (ParseRule(r"rate=(?P<r>\d+)|lat=(?P<lat>[\d.]+)",
                       (ParsedMetric("r", "ops/s", "higher", "sum"),
                        ParsedMetric("lat", "us", "lower", "max")),
                       "m.yaml:3"),)
    got = textout.read_figures(rules, "prog", "rate=5\nnoise\n")
    assert list(got.figures) == ["prog.r"]
    assert got.problems == [
        "lat: no line matched 'rate=(?P<r>\\\\d+)|lat=(?P<lat>[\\\\d.]+)' "
        "(m.yaml:3)"]
    bad = textout.read_figures(rules, "prog", "rate=5\nlat=1.2.3\n")
    assert bad.problems == ["lat: '1.2.3' in 'lat=1.2.3' is not a number",
                            "lat: no line matched "
                            "'rate=(?P<r>\\\\d+)|lat=(?P<lat>[\\\\d.]+)' "
                            "(m.yaml:3)"]
    assert got.unparsed == ["noise"]


def test_a_text_cell_is_judged_by_its_rules(tmp_path, real) -> None:
    p = copy.deepcopy(real)
    p["workload"]["stdout"] = USEMEM
    kw = dict(argv=["usemem", "-n", "2", "250m"], output="text",
              parse=PRESETS["usemem"])
    assert judged(tmp_path, p, **kw)[:2] == (None, "")
    p["workload"]["stdout"] = "usage: usemem [-n N] SIZE\n"
    reason, detail, _ = judged(tmp_path, p, **kw)
    assert reason == "parse-failed"
    assert "kbps: no line matched" in detail
    assert detail.endswith("first unparsed lines: usage: usemem [-n N] "
                           "SIZE")
    p["workload"]["stdout"] = ""
    reason, detail, _ = judged(tmp_path, p, **kw)
    assert reason == "parse-failed" and \
        detail.endswith("the workload printed nothing")
    # output: none reads nothing: only the generic metrics.
    assert judged(tmp_path, p, argv=["usemem"], output="none")[0] is None


def test_parsed_figures_become_headline_metrics(tmp_path, real) -> None:
    p = copy.deepcopy(real)
    p["workload"]["stdout"] = USEMEM
    s = spec(tmp_path, p, argv=["usemem", "-n", "2", "250m"],
             output="text", parse=PRESETS["usemem"])
    res = verdict.build_result(s, None, None, None, "", p, "", {}, [])
    assert res["workload"]["result"] is None
    assert res["workload"]["parsed"]["usemem.kbps"]["value"] == 176331.0
    assert "1004480 usecs to free memory" in res["workload"]["unparsed"]
    assert res["outcome"] == "ok"
    got = cell_metrics(res)
    kbps = got["usemem.kbps"]
    assert (kbps.value, kbps.unit, kbps.better, kbps.headline) == (
        176331.0, "KB/s", "higher", True)
    # The generic metrics are still there.
    assert any(name.startswith("vmstat.") for name in got)
