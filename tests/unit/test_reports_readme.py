"""Every interval README.md, reports/README.md and docs/seeds-study.md
quote beside a run ("-26.4 % [-30.7, -21.8]") is one that run's report
states, at the precision quoted: prose cannot drift from the tables."""
from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from lab.paths import REPO

REPORTS = REPO / "reports"
RUN = re.compile(r"(\d{8}-\d{6}-[a-z0-9]+(?:-[a-z0-9]+)*)")
INTERVAL = re.compile(r"([+-]\d+(?:\.\d+)?) ?% \[([+-]\d+(?:\.\d+)?), "
                      r"([+-]\d+(?:\.\d+)?)\]")
STATED = ("answers.md", "replication.md", "upstream.md", "reliability.md",
          "tables/report.md")


def rounded(value: str, like: str) -> Decimal:
    places = len(like.split(".")[1]) if "." in like else 0
    return Decimal(value).quantize(Decimal(1).scaleb(-places),
                                   rounding=ROUND_HALF_UP)


def stated(run: str) -> list[tuple[str, str, str]]:
    d = REPORTS / run
    text = "".join((d / f).read_text() for f in STATED if (d / f).is_file())
    return [m.groups() for m in INTERVAL.finditer(text)]


def quoted(path: Path) -> list[tuple[str, list[str], tuple[str, str, str]]]:
    """(paragraph start, its runs with a report, interval) per quote."""
    out = []
    for para in re.split(r"\n\s*\n", path.read_text()):
        runs = [r for r in dict.fromkeys(RUN.findall(para))
                if (REPORTS / r).is_dir()]
        if runs:
            out += [(para[:60], runs, m.groups())
                    for m in INTERVAL.finditer(para)]
    return out


@pytest.mark.parametrize("doc", ["README.md", "reports/README.md",
                                 "docs/seeds-study.md"])
def test_quoted_intervals_are_the_reports_own(doc: str) -> None:
    quotes = quoted(REPO / doc)
    wrong = []
    for where, runs, want in quotes:
        have = [t for r in runs for t in stated(r)]
        if not any(all(rounded(h, w) == Decimal(w) for h, w in zip(t, want))
                   for t in have):
            wrong.append(f"{where!r}: {want} not in {', '.join(runs)}")
    assert wrong == []
    if doc == "reports/README.md":
        assert len(quotes) >= 20


def test_rounding_is_half_up() -> None:
    assert rounded("+258.5", "+259") == Decimal("259")
    assert rounded("-23.45", "-23.5") == Decimal("-23.5")
