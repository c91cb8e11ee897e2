"""The pytest plugin that runs a sub-matrix: each cell is one test item
(lab/cells/conftest.py hands its hooks to pytest).

    /usr/bin/python3 -m pytest lab/cells --matrix quick [-k nvme] [-n 2]

Items are the cells of the sub-matrix (or of `--matrix FILE`'s quick),
in run order: repeat 1 of every variant before repeat 2 of any. The
controller owns the result store: workers (pytest-xdist, local or
`--tx ssh=...`) attach each cell's result to their test report and the
controller saves it from `pytest_runtest_logreport`, so results from
every worker end up in one store. A cell with a stored result of the same
inputs is skipped (`--rerun` runs it again).

Ctrl-C or SIGTERM stops the session: the running cell's QEMU and device
model are stopped (lab.guest.runner), nothing is stored for it, and the next
session resumes the run with the unfinished cells. A full results disk
stops the session too, with a message naming the file.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lab import procs
from lab.cache import DiskFull, cache_root, locked
from lab.errors import LabError
from lab.guest import hostload
from lab.kernel.artifact import Build
from lab.kernel.build import BuildFailed, Builder
from lab.paths import REPO
from lab.progress import Progress
from lab.results import store
from lab.results.runmatrix import run_matrix
from lab.spec.matrix import idle_note, load_matrix
from lab.spec.model import Cell, Matrix, Variant

PROPERTY = "swaplab-cell"


@dataclass
class SessionState:
    """What the session's hooks and its cell tests share (one per pytest
    process: the controller's, and each xdist worker's)."""
    matrix: Matrix
    sub: str                    # the sub-matrix's name
    cells: list[Cell]           # in run order
    cache: Path
    run: store.Run
    passed_over: str = ""       # why the latest run was not resumed
    # variant -> its build, or why it failed (each built once a session)
    builds: dict[str, Build | BuildFailed] = field(default_factory=dict)


STATE = pytest.StashKey[SessionState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("swaplab")
    group.addoption("--matrix", default="quick",
                    help="sub-matrix name, or a matrix FILE (its 'quick')")
    group.addoption("--matrix-file", default=str(REPO / "matrix.yaml"),
                    help="the matrix file holding the sub-matrix")
    group.addoption("--lab-cache", default=None, help="cache directory")
    group.addoption("--rerun", action="store_true",
                    help="run cells again even when a result exists")
    group.addoption("--new-run", action="store_true",
                    help="start a new run instead of resuming the latest")
    group.addoption("--run-id-file", default=None,
                    help="write the run's id to this file (lab run "
                    "reports that run, not whatever run is latest)")
    group.addoption("--lab-run", default=None,
                    help="add to this run (an adaptive round)")
    group.addoption("--cells", default=None,
                    help="JSON file: the cells to run, as [repeat, "
                    "variant, backend, workload] lists (an adaptive "
                    "round); default: the sub-matrix's")
    group.addoption("--deadline", type=float, default=None,
                    help="epoch seconds: start no cell after this (the "
                    "run's budget)")


def _selection(config: pytest.Config) -> tuple[Matrix, str]:
    choice = config.getoption("--matrix")
    if choice.endswith((".yaml", ".yml")) or Path(choice).is_file():
        return load_matrix(Path(choice).resolve()), "quick"
    return load_matrix(Path(config.getoption("--matrix-file"))), choice


def _cells(config: pytest.Config, matrix: Matrix, sub: str) -> list[Cell]:
    listing = config.getoption("--cells")
    if not listing:
        return matrix.cells(sub)
    try:
        rows = json.loads(Path(listing).read_text())
        cells = [Cell(int(r), str(v), str(b), str(w)) for r, v, b, w in rows]
    except (OSError, ValueError, TypeError) as exc:
        raise LabError(f"{listing}: expected a JSON list of [repeat, "
                       f"variant, backend, workload]: {exc}") from None
    known = {(c.variant, c.backend, c.workload)
             for c in matrix.cells(sub, range(1, 2))}
    for c in cells:
        if (c.variant, c.backend, c.workload) not in known:
            raise LabError(f"{listing}: cell {c.id} is not in sub-matrix "
                           f"'{sub}'")
    return cells


def _open_run(st: store.Store, matrix: Matrix, sub: str,
              cells: list[Cell], fresh: bool) -> tuple[store.Run, str]:
    """Resume the latest run of this sub-matrix of this matrix file when
    what it measures and decides is unchanged (Matrix.study_digest), so
    finished cells are reused; else start a new one. A long study runs
    in pieces over days while other parts of matrix.yaml change; the
    resumed run keeps the file as it is now. Another file, even with the
    same study, is another experiment.

    Also returns, for a new run, why the latest run of this sub-matrix
    was not resumed ('' if there was none, or the caller asked for a
    new run): a clone at another path silently starting over costs a
    study its finished cells."""
    passed_over = ""
    if not fresh:
        want = matrix.study_digest(sub)
        for run_id in reversed(st.ids()):
            run = st.open(run_id)
            m = run.manifest.get("matrix", {})
            if m.get("submatrix") != sub:
                continue
            if m.get("file") != str(matrix.file):
                passed_over = passed_over or (
                    f"not resuming run {run_id}: it ran {m.get('file')}, "
                    f"not {matrix.file}")
                continue
            try:
                same = run_matrix(run).study_digest(sub) == want
            except LabError:
                same = False        # its copy no longer parses
            if same:
                run.remove_partial()
                run.adopt_matrix(matrix)
                return run, ""
            passed_over = passed_over or (
                f"not resuming run {run_id}: what sub-matrix '{sub}' "
                f"measures or decides has changed since")
    return st.create(matrix, sub, cells), passed_over


def pytest_configure(config: pytest.Config) -> None:
    try:
        matrix, sub = _selection(config)
        cells = _cells(config, matrix, sub)
    except LabError as exc:
        raise pytest.UsageError(str(exc)) from None
    cache = cache_root(config.getoption("--lab-cache"))
    st = store.Store(cache)
    procs.interrupt_on()            # SIGTERM, SIGHUP: stop like Ctrl-C
    worker = getattr(config, "workerinput", None)
    passed_over = ""
    if worker is not None:
        run = st.open(worker["swaplab_run"])
        # the other workers' guests are the lab's own, not other work
        os.environ[hostload.ROOT_ENV] = str(worker["swaplab_load_root"])
    else:
        if config.getoption("--lab-run"):
            run = st.open(config.getoption("--lab-run"))
            run.plan(cells)
        else:
            run, passed_over = _open_run(st, matrix, sub, cells,
                                         config.getoption("--new-run"))
        id_file = config.getoption("--run-id-file")
        if id_file:
            Path(id_file).write_text(run.id + "\n")
        config.pluginmanager.register(
            StoreWriter(run, len(cells), config.getoption("--deadline")),
            "swaplab-store")
    config.stash[STATE] = SessionState(matrix, sub, cells, cache, run,
                                       passed_over=passed_over)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Past the run's budget, the remaining cells are skipped (not
    failed): the next `lab run` resumes with them."""
    deadline = item.config.getoption("--deadline")
    if deadline is not None and time.time() > deadline:
        pytest.skip("budget spent")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: tell each worker which run it contributes to."""
    node.workerinput["swaplab_run"] = node.config.stash[STATE].run.id
    node.workerinput["swaplab_load_root"] = os.getpid()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "cell" in metafunc.fixturenames:
        cells = metafunc.config.stash[STATE].cells
        metafunc.parametrize("cell", cells, ids=[c.id for c in cells])


def pytest_report_header(config: pytest.Config) -> list[str]:
    s = config.stash[STATE]
    lines = [f"swaplab: matrix {s.matrix.file} sub-matrix {s.sub}: "
             f"{len(s.cells)} cells; run {s.run.id} in {s.cache}"
             f"{idle_note(s.matrix, s.sub)}"]
    if s.passed_over:
        lines.append(f"swaplab: {s.passed_over}")
    return lines


@pytest.fixture(scope="session")
def lab(pytestconfig: pytest.Config) -> SessionState:
    return pytestconfig.stash[STATE]


def build_of(lab: SessionState, variant: Variant) -> Build:
    """Each kernel is built once per session (and only if its inputs
    changed since the last build); a failed build fails its cells. A
    variant with a workload's fragments added is a kernel of its own."""
    builds = lab.builds
    key = lab.matrix.kernel_name(variant)
    if key not in builds:
        cache = lab.cache
        try:
            with locked(cache):
                builds[key] = Builder(lab.matrix, cache).build(
                    variant, Progress(variant.name))
        except BuildFailed as exc:
            builds[key] = exc
    found = builds[key]
    if isinstance(found, BuildFailed):
        log = f" (log: {found.log})" if found.log else ""
        pytest.fail(f"build failed: {found}{log}", pytrace=False)
    return found


class StoreWriter:
    """Controller side: saves the results that cell tests attached to
    their reports (whichever worker ran them), and closes the run."""

    def __init__(self, run: store.Run, planned: int,
                 deadline: float | None) -> None:
        self.run = run
        self.session: pytest.Session | None = None
        self.planned = planned
        self.done = 0
        self.measured = 0       # cells run, not reused or skipped
        self.deadline = deadline
        self.started = time.time()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        self.started = time.time()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == PROPERTY and report.when == "call":
                doc = json.loads(str(value))
                try:
                    self.run.save(Cell(**doc["cell"]), doc["inputs"],
                                  doc["provenance"], doc["result"])
                except DiskFull as exc:
                    stop(self.session, exc)
        if report.when == "call" or report.skipped:
            self.done += 1
            self.measured += report.when == "call"
            self._progress()

    def _progress(self) -> None:
        now = time.time()
        left = eta = ""
        if self.deadline is not None:
            rest = self.deadline - now
            left = f", budget left {max(rest, 0) / 60:.1f} min"
        if self.measured and self.done < self.planned:
            # reused cells take no time: the pace is the measured ones'
            per_cell = (now - self.started) / self.measured
            eta = (f", round ends in about "
                   f"{per_cell * (self.planned - self.done) / 60:.0f} min")
        print(f"\nswaplab: {self.done}/{self.planned} cells of this round"
              f"{left}{eta}", flush=True)

    def pytest_sessionfinish(self) -> None:
        done, todo = self.run.status()
        try:
            self.run.finish()
        except LabError as exc:
            print(f"\nswaplab: {exc}")
        print(f"\nswaplab: run {self.run.id}: {len(done)} cells stored, "
              f"{len(todo)} without a result; {self.run.root}")


def stop(session: pytest.Session | None, exc: DiskFull) -> None:
    """No room for results: end the session after this cell (every
    further cell would fail alike), saying why."""
    print(f"\nswaplab: {exc}")
    if session is not None:
        session.shouldstop = f"swaplab: {exc}"
