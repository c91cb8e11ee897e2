"""SIGINT / SIGTERM in the middle of a matrix run (issue 9).

A two-cell matrix (one variant, the NVMe backend behind the SSD device
model, so each cell has an nbdkit as well as a QEMU, one short swapbench
workload, two repeats) runs through `lab run`. Once the first cell's
result is stored and the second cell's guest is up, the run is stopped:

  SIGINT   to lab's process group, as Ctrl-C on a terminal does;
  SIGTERM  to the lab process alone, as `kill PID` or a service manager.

Then: lab exits within seconds with 128+signal; no QEMU, nbdkit or pytest
process of the run is left, nor the nbdkit socket, nor any socket in the
cache; the first result loads (no partial file anywhere); the second
cell has no result; and a new session resumes the same run, reusing the
first cell and running only the second (both, if the first was measured
on a host busy with other work: such a cell is kept but not done).
"""
from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from lab import procs
from lab.kernel.build import Build
from lab.results.record import host_busy
from lab.results.store import Run, Store, StoreWarning
from tests.integration.conftest import cell_session

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

TINY = """\
# stopped by {signal} half-way
trees: {{linux-source-6.1: {{}}}}
fragments: {{lab-base: kernels/lab-base.config}}
variants:
  base:
    tree: linux-source-6.1
    series: [counters, sync-bypass-switch, baseline]
    fragments: [lab-base]
backends:
  ssd: {{kind: nvme, mdts: 9, model: ssd}}
workloads:
  short:
    program: swapbench
    args: [--pattern, seq, --size-frac-mem, 0.9, --passes, 1]
    timeout: 180
guest: {{memory: 256M, vcpus: 2, swap: 256M}}
repeats: 2
baseline: base
matrices:
  quick: {{}}
  full: {{}}
"""
FIRST, SECOND = "base-ssd-short-r1", "base-ssd-short-r2"
STOP_WITHIN_S = 10
FIGURES: dict[str, float] = {}


def as_foreground_job() -> None:
    """SIGINT and SIGQUIT as a shell leaves them to a foreground job. A
    test session started in the background by a non-interactive shell
    (nohup ... &) inherits them ignored, and so would lab: Ctrl-C would
    then never reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def wait_for(what: str, check, proc: subprocess.Popen, log: Path,
             timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if proc.poll() is not None:
            pytest.fail(f"lab exited ({proc.returncode}) before {what}:\n"
                        + log.read_text()[-3000:])
        time.sleep(0.2)
    pytest.fail(f"no {what} within {timeout} s:\n" + log.read_text()[-3000:])


def our_run(cache: Path, matrix: Path) -> Run | None:
    store = Store(cache)
    for run_id in reversed(store.ids()):
        run = store.open(run_id)
        if run.manifest["matrix"]["file"] == str(matrix):
            return run
    return None


def leftovers(cache: Path, matrix: Path) -> list[str]:
    out = []
    for needles in ((b"qemu-system", str(cache).encode()),
                    (b"nbdkit", str(cache).encode()),
                    (b"lab/cells", str(matrix).encode())):
        for pid in procs.pids_matching(*needles):
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            words = cmd.replace(b"\0", b" ")[:200]
            out.append(f"{pid}: {words!r}")
    return out


def sockets_under(top: Path) -> list[Path]:
    found = []
    for base, _dirs, files in os.walk(top):     # not into trees/ccache
        for name in files:
            path = Path(base) / name
            if stat.S_ISSOCK(path.lstat().st_mode):
                found.append(path)
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_interrupted_matrix_run(base_build: Build, lab_root: Path,
                                tmp_path: Path, signum: int) -> None:
    name = signal.Signals(signum).name
    for sub in ("kernels", "patches"):
        (tmp_path / sub).symlink_to(ROOT / sub)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TINY.format(signal=name))
    log = tmp_path / "lab.log"
    with open(log, "wb") as out:
        lab = subprocess.Popen(
            [sys.executable, "-m", "lab", "--cache", str(lab_root), "run",
             "--file", str(matrix), "--matrix", "quick"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=as_foreground_job)
    try:
        run = wait_for("run directory", lambda: our_run(lab_root, matrix),
                       lab, log, 300)
        wait_for(f"{FIRST}'s result", run.cell_file(FIRST).exists, lab,
                 log, 900)
        qemu = wait_for(f"{SECOND}'s QEMU", lambda: procs.pids_matching(
            b"qemu-system", f"swaplab-{SECOND}".encode(),
            str(lab_root).encode()), lab, log, 120)
        nbdkit = procs.pids_matching(b"nbdkit", str(
            lab_root / "images" / SECOND).encode())
        assert nbdkit, "the device model serves the second cell's swap"
        sock = re.search(rb"-U\0([^\0]+)", Path(
            f"/proc/{nbdkit[0]}/cmdline").read_bytes())
        assert sock, "nbdkit listens on a unix socket"
        socket_path = Path(sock.group(1).decode())
        console = run.log_dir(SECOND) / "console.log"
        wait_for(f"{SECOND}'s guest agent", lambda: console.exists() and
                 b"swaplab-agent: start" in console.read_bytes(), lab, log,
                 120)
        assert procs.pids_matching(b"qemu-system", f"swaplab-{SECOND}"
                                   .encode()) == qemu, "still running"

        sent = time.monotonic()
        if signum == signal.SIGINT:
            os.killpg(lab.pid, signum)      # Ctrl-C: the foreground group
        else:
            lab.send_signal(signum)         # kill PID: lab alone
        code = lab.wait(timeout=120)
        took = time.monotonic() - sent
    finally:
        if lab.poll() is None:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()
    text = log.read_text()
    FIGURES[name] = took
    print(f"\n{name}: lab exited {took:.2f} s after the signal")
    assert code == 128 + signum, text[-3000:]
    assert took < STOP_WITHIN_S, f"{name}: {took:.1f} s to stop"
    assert f"lab: interrupted ({name})" in text
    assert "finished cells are stored" in text

    # Nothing of the run is left running or listening.
    time.sleep(0.5)
    assert leftovers(lab_root, matrix) == []
    assert not socket_path.exists() and not socket_path.parent.exists()
    assert sockets_under(lab_root) == []
    assert not [p for p in (lab_root / "images" / SECOND).glob("*.img")]

    # The first result is whole, the second cell has none.
    run = our_run(lab_root, matrix)
    assert run is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        records = run.records()
        done, todo = run.status()
    assert list(records) == [FIRST] and records[FIRST].outcome == "ok"
    # A cell measured while other work loaded the host is kept but set
    # aside, and the resumed run measures it again (CI hosts are shared).
    busy = host_busy(records[FIRST].result)
    print(f"{FIRST}: {busy or 'host quiet'}")
    if busy:
        assert (done, todo) == ([], [FIRST, SECOND])
    else:
        assert (done, todo) == ([FIRST], [SECOND])
    assert not (run.log_dir(SECOND) / "result.json").exists()
    assert not list(run.root.glob(".*"))

    # The next session resumes the same run with only the second cell.
    again = cell_session(matrix, lab_root, "-q", "-rs")
    assert again.returncode == 0, again.stdout[-3000:]
    if busy:
        assert "2 passed" in again.stdout, again.stdout[-3000:]
    else:
        assert "1 passed, 1 skipped" in again.stdout, again.stdout[-3000:]
        assert f"result reused from run {run.id}" in again.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        records = run.records()
    assert sorted(records) == [FIRST, SECOND]
    assert all(r.outcome == "ok" for r in records.values())
    assert leftovers(lab_root, matrix) == []
