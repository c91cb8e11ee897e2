"""The report's first page, on the committed raw cells of a real run."""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.paths import REPO
from lab.report import reportdir
from lab.results.store import open_results_dir

QUICK = REPO / "reports" / "20261206-023500-quick"
EARLIER = REPO / "reports" / "20261206-002439-quick"


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


def test_answers_are_marked_replicated_against_another_run(tmp_path
                                                           ) -> None:
    # Two quiet quick runs of the same questions, 2 h 10 min apart.
    ra = reportdir.run_answers(open_results_dir(QUICK / "raw"))
    earlier = open_results_dir(EARLIER / "raw")
    marks, files = reportdir.write_replication(ra, [earlier], tmp_path)
    assert files == [tmp_path / "replication.md"]
    table = files[0].read_text()
    assert f"| run {ra.run_id} | run {earlier.id} |" in table
    assert set(marks) == {(a.question.name, a.backend)
                          for a in ra.answers}
    assert "yes" in marks.values()
    assert all(m == "yes" or m.startswith("no (") for m in marks.values())
    # The claims table and the answers carry each answer's mark.
    claims, answers = reportdir.claims_first(ra, marks)
    row = next(line for line in claims.splitlines()
               if line.startswith("| ra-seq | nvme |"))
    assert f"| {marks[('ra-seq', 'nvme')]} |" in row
    for a in ra.primary:
        line = next(x for x in answers.splitlines() if x.startswith(
            f"| {a.question.name} | {a.backend} |"))
        assert line.endswith(f"| {marks[(a.question.name, a.backend)]} |")
    # Without other runs there is nothing to mark and no file.
    assert reportdir.write_replication(ra, [], tmp_path / "x") == ({}, [])


@pytest.mark.parametrize("report", ["20261206-114034-seeds",
                                    "20261206-184347-safety"])
def test_a_reference_report_regenerates_byte_for_byte(report: str,
                                                      tmp_path) -> None:
    """Every file of a committed reference report, from its raw results
    and this generator (the PDF aside: Chromium prints it; its browser
    test checks it, and report.json names the generating commit)."""
    import json
    root = REPO / "reports" / report
    record = json.loads((root / "report.json").read_text())
    others = [open_results_dir(REPO / ref)
              for ref in record.get("replicated_with", [])]
    reportdir.build_report(open_results_dir(root / "raw"), tmp_path,
                           pdf=False, others=others)
    made = {p.relative_to(tmp_path) for p in tmp_path.rglob("*")
            if p.is_file()} - {Path("report.json")}
    assert made, "nothing written"
    # Written elsewhere than reports/<run>/, the links to the patch files
    # take another way to the repository; and no deck.pdf was printed.
    here = os.path.relpath(REPO / "patches", tmp_path).encode()

    def same(p: Path) -> bool:
        made = (tmp_path / p).read_bytes().replace(here, b"../../patches")
        kept = (root / p).read_bytes().replace(
            b"<li><a href='deck.pdf'>deck.pdf</a></li>\n", b"")
        return made == kept
    assert [str(p) for p in sorted(made) if not same(p)] == []
