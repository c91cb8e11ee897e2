"""A workload's `output` and `parse` keys in matrix.yaml: presets, rules,
and every mistake named with file, line and what was expected."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.errors import MatrixError
from lab.paths import REPO
from lab.spec.matrix import parse_matrix
from lab.spec.parserules import PRESETS

TEXT = (REPO / "matrix.yaml").read_text()
ANCHOR = "  thp-swpout-rate:\n"
USEMEM = """\
  usemem:
    program: usemem
    args: [-n, 2, 250m]
    parse: usemem
  mine:
    program: mine
    parse:
      - pattern: '(?P<kbps>\\d+) KB/s after (?P<usecs>\\d+) usecs'
        metrics:
          kbps: {unit: KB/s, better: higher, aggregate: sum}
          usecs: {unit: us, better: lower, aggregate: max}
  quiet:
    program: quiet
    output: none
"""


def load(tmp_path: Path, extra: str):
    text = TEXT.replace(ANCHOR, extra + ANCHOR, 1)
    (tmp_path / "kernels").symlink_to(REPO / "kernels")
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return parse_matrix(text, path, REPO / "patches"), text


def test_presets_rules_and_none_are_read(tmp_path) -> None:
    m, text = load(tmp_path, USEMEM)
    usemem, mine, quiet = (m.workloads[n] for n in ("usemem", "mine",
                                                    "quiet"))
    assert (usemem.output, usemem.parse) == ("text", PRESETS["usemem"])
    assert mine.output == "text"
    [rule] = mine.parse
    assert [(x.group, x.unit, x.better, x.aggregate)
            for x in rule.metrics] == [("kbps", "KB/s", "higher", "sum"),
                                       ("usecs", "us", "lower", "max")]
    line = text.splitlines().index("      - pattern: '(?P<kbps>\\d+) KB/s "
                                   "after (?P<usecs>\\d+) usecs'") + 1
    assert rule.where == f"{tmp_path / 'matrix.yaml'}:{line}"
    assert (quiet.output, quiet.parse) == ("none", ())
    assert m.workloads["seq-seed"].output == "json"


@pytest.mark.parametrize("old,new,needle", [
    ("    parse: usemem\n", "    parse: lkp\n", "a preset (usemem)"),
    ("(?P<usecs>\\d+) usecs'", "(?P<usecs>\\d+ usecs'",
     "expected a regular expression"),
    ("          usecs: {unit: us,", "          msecs: {unit: us,",
     "'msecs' is not a named group of the pattern; expected kbps, usecs"),
    ("better: higher, aggregate: sum}", "better: more, aggregate: sum}",
     "expected higher, lower or neutral"),
    ("aggregate: max}", "aggregate: median}", "expected sum, mean or max"),
    ("    output: none\n", "    output: text\n",
     "expected `parse` rules for quiet's text output"),
    ("    output: none\n", "    output: csv\n", "expected json or text or "
     "none"),
    ("    parse: usemem\n", "    parse: usemem\n    output: json\n",
     "no `parse` with output json"),
    ("          kbps: {unit: KB/s, better: higher, aggregate: sum}\n", "",
     ""),
])
def test_mistakes_name_file_line_and_what_was_expected(
        tmp_path, old: str, new: str, needle: str) -> None:
    assert USEMEM.count(old) == 1, old
    if not needle:                      # one metric of two is enough
        load(tmp_path, USEMEM.replace(old, new))
        return
    with pytest.raises(MatrixError) as info:
        load(tmp_path, USEMEM.replace(old, new))
    assert needle in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "matrix.yaml") + ":")


def test_one_group_is_one_metric(tmp_path) -> None:
    twice = USEMEM.replace(
        "          usecs: {unit: us, better: lower, aggregate: max}\n",
        "          usecs: {unit: us, better: lower, aggregate: max}\n"
        "      - pattern: 'total (?P<kbps>\\d+)'\n        metrics:\n"
        "          kbps: {unit: KB/s, better: higher}\n")
    with pytest.raises(MatrixError, match="group 'kbps' is named by two"):
        load(tmp_path, twice)
