"""The run's progress lines: cells done, budget left and when the round
ends, paced by the cells really measured (reused ones take no time);
which run a session resumes."""
from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest

from lab.paths import REPO
from lab.results import store
from lab.session import plugin
from lab.session.plugin import StoreWriter
from lab.spec.matrix import parse_matrix


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def time(self) -> float:
        return self.t


def test_progress_counts_reused_cells_but_paces_by_measured_ones(
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    clock = Clock(1000.0)
    monkeypatch.setattr(plugin.time, "time", clock.time)
    writer = StoreWriter(SimpleNamespace(), planned=5, deadline=1000.0 + 1800)
    writer.pytest_sessionstart(SimpleNamespace())
    writer.pytest_runtest_logreport(SimpleNamespace(
        when="setup", skipped=True, user_properties=[]))
    first = capsys.readouterr().out
    assert "1/5 cells of this round, budget left 30.0 min\n" in first
    assert "round ends" not in first        # nothing measured yet
    for _ in range(2):                      # two cells of 2 min each
        clock.t += 120
        writer.pytest_runtest_logreport(SimpleNamespace(
            when="call", skipped=False, user_properties=[]))
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ("swaplab: 3/5 cells of this round, budget left "
                       "26.0 min, round ends in about 4 min")


def _repo_text() -> str:
    return (REPO / "matrix.yaml").read_text()


def _matrix(where, text: str):
    """The repository's matrix.yaml as edited, in a checkout of its own
    (config fragments resolve beside the file)."""
    if not where.is_dir():
        where.mkdir(parents=True)
        (where / "kernels").symlink_to(REPO / "kernels")
    path = where / "matrix.yaml"
    path.write_text(text)
    return parse_matrix(text, path, REPO / "patches")


def _store_with_run(tmp_path, text: str) -> tuple[store.Store, str]:
    matrix = _matrix(tmp_path / "a", text)
    st = store.Store(tmp_path / "cache")
    run = st.create(matrix, "seeds", matrix.cells("seeds"))
    return st, run.id


def _reopen(tmp_path, st: store.Store, text: str,
            where: str = "a") -> tuple[store.Run, str]:
    matrix = _matrix(tmp_path / where, text)
    return plugin._open_run(st, matrix, "seeds", matrix.cells("seeds"),
                            fresh=False)


@pytest.mark.parametrize("old,new", [
    # another sub-matrix, a comment, a claim's wording, the piece budget
    ("  smoke:\n    variants: [base]\n    backends: [nvme]\n",
     "  smoke:\n    variants: [base]\n    backends: [dax-pmem]\n"),
    ("# Named sub-matrices.", "# Named sub-matrices (edited)."),
    ("change: -60.9%", "change: -61%"),
    ("    budget: 100m\n    questions: [seed-", "    budget: 80m\n"
     "    questions: [seed-"),
])
def test_a_study_resumes_across_edits_that_leave_it_alone(
        tmp_path, old: str, new: str) -> None:
    text = _repo_text()
    assert text.count(old) == 1, old
    st, run_id = _store_with_run(tmp_path, text)
    edited = text.replace(old, new)
    run, passed_over = _reopen(tmp_path, st, edited)
    assert run.id == run_id
    assert passed_over == ""
    # The resumed run keeps the file as it is now.
    assert (run.root / "matrix.yaml").read_text() == edited
    assert store.open_results_dir(run.root).manifest["matrix"]["sha256"] \
        == hashlib.sha256(edited.encode()).hexdigest()


@pytest.mark.parametrize("old,new", [
    # a workload of the study, a question's delta, the study's repeats
    ("--mode, combined, --procs, 2", "--mode, combined, --procs, 3"),
    ("    metric: swapbench.fg.latency.avg_us\n    better: lower\n"
     "    delta: 10%", "    metric: swapbench.fg.latency.avg_us\n"
     "    better: lower\n    delta: 5%"),
    ("    repeats: 3\n    max_repeats: 12\n    look_every: 3\n"
     "    budget: 100m\n",
     "    repeats: 4\n    max_repeats: 12\n    look_every: 3\n"
     "    budget: 100m\n"),
])
def test_a_changed_study_starts_a_new_run(tmp_path, old: str,
                                          new: str) -> None:
    text = _repo_text()
    assert text.count(old) == 1, old
    st, run_id = _store_with_run(tmp_path, text)
    run, passed_over = _reopen(tmp_path, st, text.replace(old, new))
    assert run.id != run_id
    assert (st.open(run_id).root / "matrix.yaml").read_text() == text
    assert passed_over == (f"not resuming run {run_id}: what sub-matrix "
                           f"'seeds' measures or decides has changed since")


def test_the_same_study_in_another_file_is_another_run(tmp_path) -> None:
    text = _repo_text()
    st, run_id = _store_with_run(tmp_path, text)
    assert _reopen(tmp_path, st, text)[0].id == run_id
    run, passed_over = _reopen(tmp_path, st, text, where="elsewhere")
    assert run.id != run_id
    # Said, not silent: the header names the run and both files.
    assert passed_over == (
        f"not resuming run {run_id}: it ran {tmp_path / 'a' / 'matrix.yaml'}"
        f", not {tmp_path / 'elsewhere' / 'matrix.yaml'}")
    # Asked for a new run: nothing to explain.
    matrix = _matrix(tmp_path / "a", text)
    assert plugin._open_run(st, matrix, "seeds", matrix.cells("seeds"),
                            fresh=True)[1] == ""
