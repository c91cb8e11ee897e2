"""A real headless Chromium loads the decks of the fixture run (planted
effects, 3 repeats), of quick-real (real guest results, 1 repeat) and of
a committed question run (its answers first): each
slide is screenshot, none overflows its frame, the PDF has a page per
slide."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from lab.paths import REPO
from lab.report import analysis, figures, pdf, slides, upstream
from lab.report.reportdir import lead_slides, run_answers
from lab.results.runmatrix import run_matrix
from lab.results.store import Store, open_results_dir

DATA = Path(__file__).resolve().parents[1] / "data"
# A committed question run: its deck opens with the answers.
ANSWERS_RUN = "20261205-211149-quick"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not any(shutil.which(b)
                                         for b in pdf.BROWSERS),
                                 reason="chromium not installed")]

# Appended to a copy of the deck: measures every slide's body and leaves
# the answer in the DOM, which --dump-dom prints after the load.
MEASURE = """<script>
const out = [...document.querySelectorAll('.slide')].map(s => {
  const b = s.querySelector('.body');
  return {key: s.dataset.slide, over: b.scrollHeight > b.clientHeight + 1
          || b.scrollWidth > b.clientWidth + 1 ||
          s.scrollHeight > s.clientHeight + 1,
          h: b.scrollHeight, ch: b.clientHeight};
});
document.body.setAttribute('data-overflow', JSON.stringify(out));
</script>"""


@pytest.fixture(scope="module",
                params=["fixture-run", "quick-real", ANSWERS_RUN])
def deck(request, tmp_path_factory):
    if request.param == ANSWERS_RUN:
        run = open_results_dir(REPO / "reports" / ANSWERS_RUN / "raw")
        lead = lead_slides(run, run_answers(run))
    else:
        run, lead = Store(DATA).open(request.param), []
    res = analysis.Results.of(run)
    dest = tmp_path_factory.mktemp("deck")
    figs = figures.write_figures(res, dest / "figures")
    matrix = run_matrix(run)
    rec = upstream.recommend(res, matrix)
    page, pdf = slides.write_deck(res, rec, matrix, figs, dest, pdf=True,
                                  lead=lead)
    keys = [s.key for s in slides.slides(res, rec, matrix, figs, lead)]
    return page, pdf, keys


def chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(pdf.chromium_argv(Path(profile)) +
                              list(args), capture_output=True, text=True,
                              timeout=120, check=True)


def test_no_slide_overflows(deck):
    page, _, keys = deck
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>",
                                              MEASURE + "</body>"))
    dom = chromium("--window-size=1280,720", "--dump-dom",
                   probe.as_uri()).stdout
    found = re.search(r'data-overflow="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    measured = json.loads(found.group(1).replace("&quot;", '"'))
    assert [m["key"] for m in measured] == keys
    assert [m for m in measured if m["over"]] == []


def test_screenshot_each_slide(deck, tmp_path):
    import matplotlib.image as mpimg
    page, _, keys = deck
    html = page.read_text()
    for key in keys:
        # Only this slide shown, at the top left of a 1280x720 window.
        one = tmp_path / f"{key}.html"
        one.write_text(html.replace("</style>", (
            ".slide{display:none!important}#%s{display:flex!important;"
            "margin:0!important}</style>") % key))
        shot = tmp_path / f"{key}.png"
        chromium("--window-size=1280,720", "--hide-scrollbars",
                 f"--screenshot={shot}", one.as_uri())
        img = mpimg.imread(shot)
        assert img.shape[:2] == (720, 1280)
        assert img.std() > 0.02, f"slide {key} looks blank"


def pdf_pages(pdf: Path) -> int:
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True,
                              text=True, check=True).stdout
        return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    return len(re.findall(rb"/Type\s*/Page(?!s)", pdf.read_bytes()))


def test_pdf_has_one_page_per_slide(deck):
    _, pdf, keys = deck
    assert pdf_pages(pdf) == len(keys)


# The committed reference decks that regenerate from their raw results.
REFERENCE = sorted(p.parent for p in (REPO / "reports").glob("*/raw")
                   if (p.parent / "deck.html").is_file())


@pytest.mark.parametrize("report", REFERENCE, ids=lambda p: p.name)
def test_reference_deck_fits_and_prints_a_page_per_slide(report: Path):
    """As committed: no slide body overflows at 1280x720, and deck.pdf
    has one page per slide."""
    page = report / "deck.html"
    keys = re.findall(r"data-slide='([^']+)'", page.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(page.read_text().replace("</body>",
                                                  MEASURE + "</body>"))
        dom = chromium("--window-size=1280,720", "--dump-dom",
                       probe.as_uri()).stdout
    found = re.search(r'data-overflow="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    measured = json.loads(found.group(1).replace("&quot;", '"'))
    assert [m["key"] for m in measured] == keys
    assert [m["key"] for m in measured if m["over"]] == []
    assert pdf_pages(report / "deck.pdf") == len(keys)
