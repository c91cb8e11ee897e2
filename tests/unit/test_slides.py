"""The deck rendered from the fixture run (HTML only; the PDF and the
browser are tests/integration/test_deck_browser.py)."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from lab.report import analysis, columns, figures, slides, upstream
from lab.report.effect import gain, what
from lab.report.tables import pivots
from lab.results.runmatrix import run_matrix
from lab.results.store import Store

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
def made(tmp_path_factory):
    """The fixture run's results, recommendation and figures."""
    run = Store(DATA).open("fixture-run")
    res = analysis.Results.of(run)
    figs = figures.write_figures(res, tmp_path_factory.mktemp("figures"))
    matrix = run_matrix(run)
    return res, upstream.recommend(res, matrix), figs, matrix


@pytest.fixture(scope="module")
def built(made, tmp_path_factory):
    res, rec, figs, matrix = made
    dest = tmp_path_factory.mktemp("deck")
    page, = slides.write_deck(res, rec, matrix, figs, dest, pdf=False)
    parsed = Spans()
    parsed.feed(page.read_text())
    return res, parsed, page


def test_expected_slides(built):
    _, parsed, _ = built
    # The fixture run has no random and no combined workload: no slide
    # stands for a question it cannot answer.
    assert parsed.slides[:7] == ["setup", "seq", "rotational", "thp",
                                 "overview", "recommendation",
                                 "reproduce-2017"]
    assert parsed.slides[7:] and all(s.startswith("backup-")
                                     for s in parsed.slides[7:])


def test_numbers_match_the_statistics(built):
    res, parsed, _ = built
    assert len(parsed.nums) >= 6
    for attrs, text in parsed.nums:
        assert attrs["data-without"] == "base"     # the fixture's pairs
        row = res.row(attrs["data-workload"], attrs["data-backend"],
                      attrs["data-metric"], attrs["data-with"])
        c = row.change
        assert float(attrs["data-pct"]) == pytest.approx(c.pct)
        # The slides' verdicts are false-discovery controlled: a change
        # its own test calls significant is "ns" when its q exceeds 5 %.
        q = None if attrs["data-q"] == "None" else float(attrs["data-q"])
        assert attrs["data-verdict"] == (
            "ns" if c.significant and q is not None and q > 0.05
            else c.verdict)
        assert text.startswith(f"{c.pct:+.1f} %")
        if c.low is not None:
            assert f"[{c.low:+.1f}, {c.high:+.1f}]" in text


def test_no_placeholder_slides(built):
    _, _, page = built
    assert "class='missing'" not in page.read_text()


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


# "<what> on <backend> <+n> % (better|worse)", after the subject or a ';'.
CLAIMED = re.compile(r"(?:: |; )(?P<what>[^:;]+?) on (?P<be>\S+) "
                     r"(?P<pct>[+-]\d+) % \((?P<dir>better|worse)\)")


def test_numbers_in_claims_match_the_statistics(made):
    res, rec, figs, matrix = made
    deck = {s.key: s for s in slides.slides(res, rec, matrix, figs)}
    ra = rec.find("readahead")
    thp = rec.find("thp-stage2")
    fill = res.throughput("thp-swpout")
    shown = {"seq": [x for x in ra.effects if x.workload == "seq"],
             "thp": [x for x in thp.effects if x.workload == "thp-swpout"
                     and x.metric == fill]}
    for key, effects in shown.items():
        said = {(m["what"], m["be"]): m
                for m in CLAIMED.finditer(deck[key].claim)}
        sig = [x for x in effects if x.change.significant]
        # Every significant effect is claimed, and nothing else.
        assert len(said) == len(sig), deck[key].claim
        if not sig:
            assert "no significant difference" in deck[key].claim
        for x in sig:
            m = said[(what(x), x.backend)]
            assert m["pct"] == f"{x.change.pct:+.0f}"
            assert m["dir"] == ("better" if gain(x)[0] > 0 else "worse")
            # The pair's statistics are lab.results.stats' against the baseline.
            row = res.row(x.workload, x.backend, x.metric, x.with_)
            assert x.without == "base"
            assert row.change.pct == pytest.approx(x.change.pct)
            assert row.change.significant


def test_long_evidence_goes_on_over_continuation_slides(made):
    _, rec, _, _ = made
    items = [columns.Item("h3", "long"),
             *columns.effect_items(rec.merged.ranked[0].effects * 3)]
    room = 400
    pages = columns.pages(items, room)
    assert len(pages) > 1
    assert all(sum(i.px for i in page) <= room for page in pages)
    # Every row once, in order; a continued table under its heading
    # (continued) and its pair's caption again.
    assert [i for page in pages for i in page if i.kind == "row"] == \
        [i for i in items if i.kind == "row"]
    for page in pages[1:]:
        assert page[0] == columns.Item("h3", "long (continued)")
        assert page[1].kind == "pair"
    deck = slides.question("seq", "Q?", "claim", None, items)
    assert len(deck) > 1 and [s.key for s in deck] == ["seq"] + [
        f"seq-{n}" for n in range(2, len(deck) + 1)]
    assert all(s.title == "Q? (continued)" for s in deck[1:])


def test_one_repeat_recommends_nothing():
    run = Store(DATA).open("quick-real")
    res = analysis.Results.of(run)
    rec = upstream.recommend(res, run_matrix(run))
    slide, *_ = slides.recommendation_slide(rec)
    assert not slide.claim.startswith("Send")
    assert slide.claim.startswith("No recommendation: ")
    back, *_ = slides.reproduce_slide(rec, run_matrix(run))
    assert "too few repeats to rank" in back.claim
    assert "not judged (fewer than 3 repeats)" not in back.body or \
        "no significant" not in back.claim


def test_nothing_to_rank_says_no_recommendation():
    rec = upstream.Recommendation([], [], {"readahead": "no pair isolates"
                                          " it"}, [], "base", "p99")
    slide, = slides.recommendation_slide(rec)
    assert slide.claim == ("No recommendation: no pair of variants in this "
                           "run measures one of the series that upstream "
                           "lacks on its own")
    assert "readahead: no pair isolates it" in slide.body
    assert "class='missing'" not in slide.body


def test_a_run_without_the_seed_questions_gets_its_main_result(tmp_path):
    """The THP re-read run asks none of the seed article's questions: its
    workload still gets a slide, the figure beside every variant's
    change, and the 12x reads as a fold."""
    from lab.paths import REPO
    from lab.results.store import open_results_dir
    run = open_results_dir(REPO / "reports" / "20261206-195545-reread-nvme"
                           / "raw")
    res = analysis.Results.of(run)
    figs = figures.write_figures(res, tmp_path)
    matrix = run_matrix(run)
    deck = slides.slides(res, upstream.recommend(res, matrix), matrix, figs)
    main = next(s for s in deck if s.key == "workload-thp-reread-ro")
    beyond = res.row("thp-reread-ro", "nvme", "swapbench.main.bytes_per_s",
                     "beyond")
    assert f"{1 + beyond.change.pct / 100:.1f}x" in main.claim
    assert "data:image/svg+xml;base64," in main.body
    assert main.body.count("data-with=") == 2     # thp-swapin, beyond
