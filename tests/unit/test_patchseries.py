"""A series in its stack: pairs, what it is built on, its patch files
and its cost in code lines, on the repository's matrix and patches."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from lab.paths import REPO
from lab.report import patchseries
from lab.spec.matrix import load_matrix

MATRIX = load_matrix(REPO / "matrix.yaml")


def test_added_series_pairs():
    v = MATRIX.variants
    assert patchseries.added(v["readahead"], v["base"]) == ("readahead",)
    assert patchseries.added(v["thp-stage2"], v["thp-stage1"]) == \
        ("thp-stage2",)
    assert patchseries.added(v["everything"], v["thp-stage2"]) == \
        ("readahead",)
    assert patchseries.added(v["base"], v["readahead"]) is None
    assert patchseries.added(v["upstream-6.12"], v["upstream"]) is None


def numstat(patch: Path) -> int:
    """Added plus removed lines, as git itself counts them."""
    out = subprocess.run(["git", "apply", "--numstat", str(patch)],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(a) + int(d) for a, d, _ in
               (line.split("\t") for line in out.splitlines()))


@pytest.mark.parametrize("series", ["thp-stage1", "thp-stage2",
                                    "readahead", "thp-swapin"])
def test_lines_changed_counts_code_lines_only(series: str) -> None:
    """git's count less the blank lines the patches add or remove: the
    commit message (its blank lines, a "- " bullet), the diffstat and
    the "-- " signature never count."""
    d = MATRIX.series_dir("linux-source-6.1", series)
    patches = sorted(d.glob("*.patch"))
    blank = sum(1 for p in patches for ln in p.read_text().splitlines()
                if re.fullmatch(r"[+-]\s*", ln))
    want = sum(numstat(p) for p in patches) - blank
    assert patchseries.lines_changed(MATRIX, "linux-source-6.1",
                                  series) == want > 0


def test_code_lines_skip_message_and_signature() -> None:
    patch = ("Subject: [PATCH] mm: x\n\nWhy.\n\n- a bullet\n+ another\n"
             "---\n mm/x.c | 3 ++-\n\ndiff --git a/mm/x.c b/mm/x.c\n"
             "--- a/mm/x.c\n+++ b/mm/x.c\n@@ -1,2 +1,3 @@\n ctx\n-old\n"
             "+new\n+\n+\t\n-- \n2.39.2\n")
    assert patchseries.code_lines(patch) == 2


def test_needs_is_what_every_variant_applies_first() -> None:
    assert patchseries.needs(MATRIX, "linux-source-6.1", "thp-stage2") == (
        "counters", "sync-bypass-switch", "baseline", "thp-stage1")
    # thp-stage1 goes on base with or without readahead: not a need.
    assert "readahead" not in patchseries.needs(
        MATRIX, "linux-source-6.1", "thp-stage1")
    assert patchseries.needs(MATRIX, "linux-source-6.1", "nothing") == ()


def test_patch_files_follow_the_series_file() -> None:
    names = patchseries.patch_files(MATRIX, "linux-source-6.1",
                                    "thp-swapin-ra")
    assert names == sorted(names) and len(names) == 2
    assert all(n.endswith(".patch") for n in names)
