"""reports/index.html and report.json, on the committed reports."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from lab.paths import REPO
from lab.report import catalogue
from lab.results.store import open_results_dir

REPORTS = REPO / "reports"
QUIET = REPORTS / "20261205-223052-quick"


def test_every_committed_report_has_a_line() -> None:
    found = {x.name: x for x in catalogue.entries(REPORTS)}
    assert set(found) == {d.name for d in REPORTS.iterdir()
                          if (d / "index.html").is_file()}
    quiet = found[QUIET.name]
    assert (quiet.date, quiet.submatrix) == ("2026-12-05T22:30:52Z", "quick")
    assert quiet.answer == "0 of 7 questions decided"
    old = found["20261203-103133-beyond"]       # no raw results kept
    assert old.date == "2026-12-03T10:31:33Z"
    assert old.answer.startswith("tables only")
    assert quiet.regenerates and not old.regenerates
    page = catalogue.catalogue_html(list(found.values()))
    assert page.count("<tr><td><a href=") == len(found)
    # Reports without raw results stand apart, under a warning.
    current, legacy = page.split("<h2>Legacy reports</h2>")
    assert f"'{QUIET.name}/index.html'" in current
    assert f"'{old.name}/index.html'" in legacy
    assert f"'{QUIET.name}/index.html'" not in legacy


def test_answer_line_names_the_decided_rows() -> None:
    text = (QUIET / "answers.md").read_text()
    text = text.replace("0 of 7 questions decided", "2 of 7 questions "
                        "decided").replace(
        "| undecided at n=3 | -18.6 %", "| **better** by 18.6 % | -18.6 %", 1
    ).replace("| undecided at n=3 | +1.7 %",
              "| equivalent (within +-10 %) | +1.7 %", 1)
    assert catalogue.answer_line(text) == (
        "2 of 7 questions decided: ra-seq nvme better by 18.6 %; "
        "ra-rand nvme equivalent")


def test_record_names_commit_and_inputs(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(QUIET / "raw", raw)
    run = open_results_dir(raw)
    doc = json.loads(catalogue.write_record(run, tmp_path).read_text())
    assert doc["run"] == "20261205-223052-quick"
    assert len(doc["generator_commit"].split("-")[0]) == 40
    before = doc["inputs_sha256"]
    assert before == catalogue.inputs_digest(open_results_dir(QUIET / "raw"))
    cell = next(raw.glob("base-nvme-seq-r*.json"))
    cell.write_text(cell.read_text() + " ")
    assert catalogue.inputs_digest(open_results_dir(raw)) != before


def test_short_commit_keeps_dirty() -> None:
    sha = "591791f8befd" + "0" * 28
    assert catalogue.short(sha) == "591791f8befd"
    assert catalogue.short(sha + "-dirty") == "591791f8befd-dirty"
    assert catalogue.short("not recorded") == "not recorded"
