"""Adaptive rounds: the next repeats go to undecided questions only,
nearest a decision first, within the budget."""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from lab.paths import REPO
from lab.results.store import open_results_dir
from lab.session import adaptive
from lab.spec.matrix import load_matrix

REAL = REPO / "tests" / "data" / "results" / "quick-real"


def write_cell(root: Path, template: dict, variant: str, backend: str,
               workload: str, repeat: int, latency_us: float,
               host_s: float) -> None:
    """A real NVMe seq cell of quick-real, its latency set."""
    doc = copy.deepcopy(template)
    cid = f"{variant}-{backend}-{workload}-r{repeat}"
    doc["cell"] = {"id": cid, "variant": variant, "backend": backend,
                   "workload": workload, "repeat": repeat}
    groups = doc["result"]["workload"]["result"]["groups"]
    groups[0]["latency"]["avg_us"] = latency_us
    doc["result"]["timing"]["host_total_s"] = host_s
    (root / f"{cid}.json").write_text(json.dumps(doc))


def make_run(tmp: Path, ra_latency: list[float],
             again_latency: list[float]) -> Path:
    """Three repeats of the aa-seq and ra-seq arms (the others absent)."""
    root = tmp / "run"
    root.mkdir(parents=True)
    shutil.copy(REPO / "matrix.yaml", root / "matrix.yaml")
    (root / "manifest.json").write_text(json.dumps({
        "id": "run", "started": "2026-12-05T10:00:00Z",
        "matrix": {"submatrix": "quick"}, "cells": []}))
    template = json.loads((REAL / "base-nvme-seq-r1.json").read_text())
    base = [170.0, 171.0, 169.0]
    for rep in (1, 2, 3):
        write_cell(root, template, "base", "nvme", "seq", rep,
                   base[rep - 1], 12.0)
        write_cell(root, template, "readahead", "nvme", "seq", rep,
                   ra_latency[rep - 1], 12.0)
        write_cell(root, template, "base-again", "nvme", "seq", rep,
                   again_latency[rep - 1], 12.0)
    return root


def test_undecided_questions_get_the_next_repeat(tmp_path: Path) -> None:
    matrix = load_matrix(REPO / "matrix.yaml")
    # readahead 40 % faster, tightly: decided; the A/A noisy: undecided.
    root = make_run(tmp_path, [102.0, 103.0, 101.5], [150.0, 190.0, 172.0])
    plan = adaptive.next_round(matrix, "quick", open_results_dir(root),
                               None)
    ids = [c.id for c in plan.cells]
    # ra-seq is decided: no readahead cell; aa-seq gets repeat 4 of
    # both arms; the questions without any cells get nothing here (they
    # have not reached the minimum: the first session runs those).
    assert "readahead-nvme-seq-r4" not in ids
    assert {"base-nvme-seq-r4", "base-again-nvme-seq-r4"} <= set(ids)
    assert plan.decided >= 1


def test_a_round_reaches_the_next_look(tmp_path: Path) -> None:
    """With looks every 3 repeats, an undecided question gets the
    repeats up to its next look in one round, not one more."""
    text = (REPO / "matrix.yaml").read_text()
    sub = text[text.index("\n  quick:\n"):]
    sub = sub[:sub.index("\n  full:\n")]
    stepped = sub.replace("    max_repeats:", "    look_every: 3\n"
                          "    max_repeats:", 1) \
        if "look_every" not in sub else sub
    (tmp_path / "m").mkdir()
    for name in ("kernels", "patches"):
        (tmp_path / "m" / name).symlink_to(REPO / name)
    (tmp_path / "m" / "matrix.yaml").write_text(text.replace(sub, stepped))
    matrix = load_matrix(tmp_path / "m" / "matrix.yaml")
    assert matrix.sub("quick").look_every == 3
    root = make_run(tmp_path, [102.0, 103.0, 101.5], [150.0, 190.0, 172.0])
    plan = adaptive.next_round(matrix, "quick", open_results_dir(root),
                               None)
    ids = {c.id for c in plan.cells}
    assert {f"{v}-nvme-seq-r{r}" for v in ("base", "base-again")
            for r in (4, 5, 6)} <= ids
    assert "base-nvme-seq-r7" not in ids


def test_budget_cuts_the_round(tmp_path: Path) -> None:
    matrix = load_matrix(REPO / "matrix.yaml")
    root = make_run(tmp_path, [150.0, 190.0, 172.0], [150.0, 190.0, 172.0])
    run = open_results_dir(root)
    full = adaptive.next_round(matrix, "quick", run, None)
    ids = [c.id for c in full.cells]
    assert len(ids) == len(set(ids))
    # base is shared by ra-seq and aa-seq: repeats 4 to 6 (the next
    # look) once, not twice.
    assert {"base-nvme-seq-r4", "base-nvme-seq-r6"} <= set(ids)
    assert "base-nvme-seq-r7" not in ids
    # Questions without cells fill up to the minimum of 3 per arm, each
    # budgeted at UNKNOWN_CELL_S: in 80 s only ra-seq's 6 cells fit (the
    # A/A row comes last).
    assert "thp-swapin-nvme-thp-reread-ro-r3" in ids
    cut = adaptive.next_round(matrix, "quick", run, 80.0)
    assert sorted(c.id for c in cut.cells) == [
        f"{v}-nvme-seq-r{r}" for v in ("base", "readahead")
        for r in (4, 5, 6)]
    assert cut.estimate_s == 72.0


def test_cell_seconds_are_medians() -> None:
    run = open_results_dir(REAL)
    seconds = adaptive.cell_seconds(run.records().values())
    assert 5 < seconds[("nvme", "seq")] < 60


def test_answers_command_on_raw_results(tmp_path: Path, capsys) -> None:
    from lab import cli
    root = make_run(tmp_path, [102.0, 103.0, 101.5], [171.0, 169.5, 170.2])
    assert cli.main(["answers", "--results", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Answers: run run (sub-matrix quick)")
    assert "| ra-seq | nvme | readahead vs base |" in out
    assert "**better** by 39.9 % | -39.9 % [-40.8, -39.0] | 3/3 |" in out
    assert "## Calibration (A/A)" in out and "flagged" not in out
    assert "Testbed: guests under TCG" in out
    assert "no data (metric not measured)" in out      # thp1-swpout


def test_replication_across_two_raw_runs(tmp_path: Path, capsys) -> None:
    from lab import cli
    first = make_run(tmp_path / "a", [102.0, 103.0, 101.5],
                     [171.0, 169.5, 170.2])
    second = make_run(tmp_path / "b", [104.0, 102.0, 103.5],
                      [170.0, 171.5, 169.2])
    manifest = json.loads((second / "manifest.json").read_text())
    manifest["started"] = "2026-12-05T12:30:00Z"
    (second / "manifest.json").write_text(json.dumps(manifest))
    assert cli.main(["answers", "--results", f"{first},{second}"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines()
               if line.startswith("| ra-seq | nvme | **better**"))
    assert row.endswith("| **yes** |")
    assert "Q=" in row and "pooled n=6/6" in row


def test_capped_counts_primary_rows_only() -> None:
    """Run 20261205-232428-quick ended with thp1-swpout undecided at
    max_repeats on both backends, and its 3 A/A rows too: 2 capped."""
    from lab.results.runmatrix import run_matrix
    run = open_results_dir(REPO / "reports" / "20261205-232428-quick" /
                           "raw")
    plan = adaptive.next_round(run_matrix(run), "quick", run, 600.0)
    assert (plan.decided, plan.questions, plan.capped) == (5, 7, 2)
    assert plan.cells == []
