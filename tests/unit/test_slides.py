"""The deck rendered from the fixture run (HTML only; the PDF and the
browser are tests/integration/test_deck_browser.py)."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lab import figures, slides, upstream
from lab.store import Store

DATA = Path(__file__).resolve().parent.parent / "data"


class Spans(HTMLParser):
    """Slide keys, and every tagged number with its text."""

    def __init__(self) -> None:
        super().__init__()
        self.slides: list[str] = []
        self.nums: list[tuple[dict, str]] = []
        self._open: dict | None = None
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-slide" in a:
            self.slides.append(a["data-slide"])
        if tag == "span" and "data-pct" in a:
            self._open, self._text = a, ""
        for key in ("src", "href"):
            if key in a:
                self.refs.append(a[key])
        if tag in ("script", "link"):
            self.refs.append(tag)

    def handle_data(self, data):
        if self._open is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.nums.append((self._open, self._text))
            self._open = None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    run = Store(DATA).open("fixture-run")
    res = figures.Results.of(run)
    dest = tmp_path_factory.mktemp("deck")
    figs = figures.write_figures(res, dest / "figures")
    rec = upstream.recommend(res, upstream.run_matrix(run))
    page, = slides.write_deck(res, rec, figs, dest, pdf=False)
    parsed = Spans()
    parsed.feed(page.read_text())
    return res, parsed, page


def test_expected_slides(built):
    _, parsed, _ = built
    assert parsed.slides[:8] == ["setup", "seq", "random", "combined",
                                 "rotational", "thp", "overview",
                                 "recommendation"]
    assert parsed.slides[8:] and all(s.startswith("backup-")
                                     for s in parsed.slides[8:])


def test_numbers_match_the_statistics(built):
    res, parsed, _ = built
    assert len(parsed.nums) >= 8
    for attrs, text in parsed.nums:
        assert attrs["data-without"] == "base"     # the fixture's pairs
        row = res.row(attrs["data-workload"], attrs["data-backend"],
                      attrs["data-metric"], attrs["data-with"])
        c = row.change
        assert float(attrs["data-pct"]) == pytest.approx(c.pct)
        assert attrs["data-verdict"] == c.verdict
        assert text.startswith(f"{c.pct:+.1f} %")
        if c.low is not None:
            assert f"[{c.low:+.1f}, {c.high:+.1f}]" in text


def test_missing_data_is_said(built):
    _, _, page = built
    text = page.read_text()
    assert "This run has no random workload" in text
    assert "This run has no combined workload" in text


def test_setup_shows_guest_facts(built):
    _, _, page = built
    setup = page.read_text().split("data-slide='seq'")[0]
    for fact in ("nvme0n1", "sda", "6.1.158-thp-stage2-3c4d5e6f7081",
                 "3 planned"):
        assert fact in setup


def test_self_contained(built):
    _, parsed, page = built
    assert "script" not in parsed.refs and "link" not in parsed.refs
    assert all(r.startswith("data:image/svg+xml;base64,")
               for r in parsed.refs)
    assert not re.search(r"url\(|@import|https?://(?!www\.w3\.org)",
                         page.read_text().split("<body>")[0])
