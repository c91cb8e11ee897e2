"""The results disk fills up (issue 9): a store write fails with a message
naming the file and "no space left", and nothing partial is left that a
later run would trust.

Real write errors, no root on the host file system: RLIMIT_FSIZE in a
child process (the kernel answers EFBIG past the limit), /dev/full
(ENOSPC on every write), and where unprivileged user namespaces work, a
256 KiB tmpfs mounted in a private mount namespace that really fills up.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.cache import DiskFull, atomic_write, temp_name
from lab.errors import LabError
from lab.guest import guestlog
from lab.results.store import Run, Store, StoreWarning
from lab.session.plugin import PROPERTY, StoreWriter
from lab.spec.matrix import load_matrix
from lab.spec.model import Cell, Matrix
from tests.unit.test_store import MATRIX, ok_result, provenance

ROOT = Path(__file__).resolve().parents[2]


def _matrix(tmp_path: Path) -> Matrix:
    """test_store's matrix, in tmp_path."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "lab-base.config").write_text("CONFIG_SWAP=y\n")
    series = tmp_path / "patches" / "linux-source-6.1" / "readahead"
    series.mkdir(parents=True)
    (series / "series").write_text("")
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    return load_matrix(tmp_path / "matrix.yaml")


@pytest.fixture
def run(tmp_path: Path) -> Run:
    m = _matrix(tmp_path)
    return Store(tmp_path / "cache").create(m, "quick", m.cells("quick"))


def clean_records(run: Run) -> dict:
    """The run's records, failing on any StoreWarning (a partial file)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        return run.records()


def big_result(cell: Cell) -> dict:
    res = ok_result(cell)
    res["console_flags"] = {"padding": "x" * 200_000}
    return res


# ------------------------------------------------ RLIMIT_FSIZE (EFBIG)

SAVE_LIMITED = """\
import json, resource, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from lab.cache import DiskFull
from lab.results.store import Run
from lab.spec.matrix import load_matrix
from lab.spec.model import Cell, Matrix
root = Path({run!r})
run = Run(root, json.loads((root / "manifest.json").read_text()))
doc = json.loads(Path({doc!r}).read_text())
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
try:
    run.save(Cell(1, "base", "nvme", "seq"), "h2", doc["provenance"],
             doc["result"])
except DiskFull as exc:
    print(exc)
    sys.exit(3)
"""


def test_file_size_limit_fails_clearly_and_keeps_the_old_result(
        run: Run, tmp_path: Path) -> None:
    cell = Cell(1, "base", "nvme", "seq")
    path = run.save(cell, "h1", provenance(), ok_result(cell))
    before = path.read_bytes()
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"provenance": provenance(),
                               "result": big_result(cell)}))
    child = subprocess.run(
        [sys.executable, "-c", SAVE_LIMITED.format(
            root=str(ROOT), run=str(run.root), limit=64 * 1024,
            doc=str(doc))],
        capture_output=True, text=True)
    assert child.returncode == 3, child.stderr
    message = child.stdout.strip()
    assert message.startswith(f"cannot write {path}: no space left")
    assert "file size limit" in message and "run again" in message
    # The old result is untouched, nothing else is there.
    assert path.read_bytes() == before
    assert sorted(p.name for p in run.root.iterdir()) == sorted(
        ["manifest.json", "matrix.yaml", path.name])
    assert clean_records(run)[cell.id].inputs_hash == "h1"


# ------------------------------------------------------ /dev/full (ENOSPC)

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_dev_full_fails_clearly_and_leaves_nothing(run: Run) -> None:
    cell = Cell(1, "base", "nvme", "seq")
    path = run.cell_file(cell.id)
    # The store's temporary file is where the write goes: make it
    # /dev/full, which answers every write with ENOSPC.
    temp_name(path).symlink_to("/dev/full")
    with pytest.raises(DiskFull) as info:
        run.save(cell, "h", provenance(), big_result(cell))
    assert str(info.value).startswith(
        f"cannot write {path}: no space left on device; free some space")
    assert info.value.path == path
    assert not path.exists() and not os.path.lexists(temp_name(path))
    assert Path("/dev/full").is_char_device()
    assert clean_records(run) == {}


def test_interrupted_write_removes_its_temporary_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r" / "cell.json"

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, "{}")
    assert list(path.parent.iterdir()) == []


def test_other_write_errors_name_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(LabError) as info:
        atomic_write(blocker / "cell.json", "{}")
    assert not isinstance(info.value, DiskFull)
    assert str(info.value).startswith(f"cannot write {blocker}/cell.json: ")


def test_resume_removes_partial_files_of_dead_writers(run: Run) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; "
                           "print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = run.root / f".base-nvme-seq-r1.json.tmp.{dead}"
    stale.write_text('{"schema": "swaplab-res')
    live = run.root / f".base-nvme-seq-r2.json.tmp.{os.getpid()}"
    live.write_text("{")
    with pytest.warns(StoreWarning, match="partial write"):
        assert run.records() == {}
    assert run.remove_partial() == [stale]
    assert live.exists(), "a live writer's file stays"


# --------------------------------------------- a real full file system

NS_SCRIPT = """\
import json, sys, warnings
sys.path.insert(0, {root!r})
from pathlib import Path
from lab.cache import DiskFull
from lab.results.store import Store, StoreWarning
from lab.spec.matrix import load_matrix
from tests.unit.test_store import ok_result, provenance
m = load_matrix(Path({matrix!r}))
run = Store(Path({mount!r}) / "cache").create(m, "quick", m.cells("quick"))
saved, error = [], None
for rep in range(1, 400):
    cell = m.cells("quick")[0].__class__(rep, "base", "nvme", "seq")
    res = ok_result(cell)
    res["console_flags"] = {{"padding": "x" * 20000}}
    try:
        run.save(cell, "h", provenance(), res)
        saved.append(cell.id)
    except DiskFull as exc:
        error = str(exc)
        break
with warnings.catch_warnings():
    warnings.simplefilter("error", StoreWarning)
    loaded = sorted(run.records())
print(json.dumps({{"saved": saved, "error": error, "loaded": loaded,
                  "files": sorted(p.name for p in run.root.iterdir()),
                  "run": str(run.root)}}))
"""


def _userns_tmpfs() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         "mount -t tmpfs -o size=64k none /tmp && echo ok"],
        capture_output=True, text=True)
    return probe.stdout.strip() == "ok"


@pytest.mark.skipif(not _userns_tmpfs(), reason="no unprivileged user "
                    "and mount namespaces to mount a small tmpfs in")
def test_tmpfs_fills_up(tmp_path: Path) -> None:
    """A 256 KiB tmpfs, private to a child's mount namespace, filled with
    cell files until the kernel says ENOSPC."""
    _matrix(tmp_path)
    mount = tmp_path / "mnt"
    mount.mkdir()
    script = tmp_path / "fill.py"
    script.write_text(NS_SCRIPT.format(root=str(ROOT), mount=str(mount),
                                       matrix=str(tmp_path / "matrix.yaml")))
    child = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         f"mount -t tmpfs -o size=256k none {mount} && "
         f"exec {sys.executable} {script}"],
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert child.returncode == 0, child.stderr
    out = json.loads(child.stdout)
    assert out["saved"], "some cells fit"
    failed = f"base-nvme-seq-r{len(out['saved']) + 1}.json"
    assert out["error"].startswith(
        f"cannot write {out['run']}/{failed}: no space left on device")
    assert out["loaded"] == sorted(out["saved"])
    assert out["files"] == sorted(["manifest.json", "matrix.yaml"] +
                                  [f"{c}.json" for c in out["saved"]])


# ----------------------------------------- the console and the session

def test_console_reader_drains_past_a_full_disk() -> None:
    """QEMU's console must be read to the end even when its log cannot be
    written, or the guest blocks on its serial port and the cell hangs."""
    rfd, wfd = os.pipe()
    data = b"x" * 500_000 + guestlog.MARK_AGENT + b"\n" + b"y" * 500_000

    def feed() -> None:
        with os.fdopen(wfd, "wb") as w:
            w.write(data)
    writer = threading.Thread(target=feed)
    writer.start()
    with os.fdopen(rfd, "rb") as stream:
        reader = guestlog.Console(stream, Path("/dev/full"), None, 0.0)
        reader.start()
        reader.join(timeout=30)
        writer.join(timeout=30)
    assert not reader.is_alive() and not writer.is_alive()
    assert reader.error is not None and "No space" in str(reader.error)
    assert "agent" in reader.marks


class FakeSession:
    shouldstop: bool | str = False


def test_session_stops_when_results_cannot_be_stored(
        run: Run, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    writer = StoreWriter(run, 1, None)
    session = FakeSession()
    writer.pytest_sessionstart(session)
    cell = Cell(1, "base", "nvme", "seq")

    def full(*args, **kw):
        raise DiskFull(run.cell_file(cell.id),
                       f"cannot write {run.cell_file(cell.id)}: no space "
                       "left on device; free some space")
    monkeypatch.setattr(run, "save", full)
    report = SimpleNamespace(when="call", user_properties=[(
        PROPERTY, json.dumps({"cell": {"repeat": 1, "variant": "base",
                                       "backend": "nvme", "workload": "seq"},
                              "inputs": "h", "provenance": provenance(),
                              "result": ok_result(cell)}))])
    writer.pytest_runtest_logreport(report)
    assert "base-nvme-seq-r1.json: no space left on device" in \
        session.shouldstop
    monkeypatch.setattr(run, "finish", full)
    writer.pytest_sessionfinish()          # says so, does not raise
    out = capsys.readouterr().out
    assert out.count("no space left on device") == 2
    assert "0 cells stored, 4 without a result" in out
