"""The matrix a stored run was made from.

Apart from the store so that reading cells never parses a matrix file:
only the stages that decide or report (answers, reports, resuming a
run) need the run's questions and sub-matrix.
"""
from __future__ import annotations

import dataclasses

from lab.paths import REPO
from lab.results.store import Run
from lab.spec.matrix import load_matrix, parse_matrix
from lab.spec.model import Matrix


def run_matrix(run: Run) -> Matrix:
    """The matrix the run was made from: its own copy when it has one
    (resolved against the repository's fragments and patches), else the
    repository's matrix.yaml. What upstream merged (`merged`) is history,
    not an input of the run: a copy made before the matrix recorded it
    takes the repository's."""
    copy = run.root / "matrix.yaml"
    if not copy.is_file():
        return load_matrix(REPO / "matrix.yaml")
    own = parse_matrix(copy.read_text(), REPO / "matrix.yaml",
                       REPO / "patches")
    if own.merged:
        return own
    return dataclasses.replace(
        own, merged=load_matrix(REPO / "matrix.yaml").merged)
