"""The report's first page, on the committed raw cells of a real run."""
from __future__ import annotations

from types import SimpleNamespace

from lab.paths import REPO
from lab.report import reportdir
from lab.results.store import open_results_dir

QUICK = REPO / "reports" / "20261206-023500-quick"


def test_a_run_that_cites_claims_leads_with_them(tmp_path) -> None:
    ra = reportdir.run_answers(open_results_dir(QUICK / "raw"))
    claims, answers = reportdir.claims_first(ra)
    assert claims.startswith("## Against the claims\n")
    assert "| ra-seq | nvme | 001, sequential swap-in latency" in claims
    assert "Against the claims" not in answers
    # The answers file itself stays whole (committed reports regenerate).
    full = (QUICK / "answers.md").read_text()
    assert claims.strip() in full
    assert set(full.splitlines()) == \
        set(answers.splitlines()) | set(claims.splitlines())
    res = SimpleNamespace(source=SimpleNamespace(run_id=ra.run_id),
                          provenance=lambda: "matrix.yaml")
    page = reportdir.index_html(res, [], [], tmp_path, answers, claims)
    assert page.index("Against the claims") < page.index("Answers: run")


def test_a_run_without_claims_has_no_claims_section() -> None:
    assert reportdir.claims_first(None) == ("", "")
