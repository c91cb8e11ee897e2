"""Stopping cleanly: SIGTERM/SIGHUP unwind like Ctrl-C, and QEMU (in a
session of its own) dies with a lab killed outright."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import procs

ROOT = Path(__file__).resolve().parents[2]

UNWIND = """\
import os, signal, sys, time
sys.path.insert(0, {root!r})
from lab import procs
procs.interrupt_on()
try:
    try:
        os.kill(os.getpid(), signal.{name})
        time.sleep(5)
    finally:
        print("cleanup ran")
except KeyboardInterrupt as exc:
    print("stopped by", procs.signal_of(exc), type(exc).__name__)
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_unwinds_like_ctrl_c(name: str) -> None:
    child = subprocess.run([sys.executable, "-c", UNWIND.format(
        root=str(ROOT), name=name)], capture_output=True, text=True,
        timeout=30)
    assert child.returncode == 0, child.stderr
    signum = int(getattr(signal, name))
    assert child.stdout.splitlines() == [
        "cleanup ran", f"stopped by {signum} Terminated"]


def test_ctrl_c_is_sigint() -> None:
    assert procs.signal_of(KeyboardInterrupt()) == signal.SIGINT
    assert procs.signal_of(procs.Terminated(signal.SIGTERM)) == \
        signal.SIGTERM


ORPHAN = """\
import os, signal, subprocess, sys
sys.path.insert(0, {root!r})
from lab import procs
child = subprocess.Popen(procs.die_with_parent(["sleep", "{mark}"]),
                         start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
# Once setpriv has armed the death signal and run sleep (a lab killed in
# the microseconds before that would still leave it behind).
while not open(f"/proc/{{child.pid}}/cmdline", "rb").read().startswith(
        b"sleep"):
    pass
os.kill(os.getpid(), signal.SIGKILL)
"""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_child_in_its_own_session_dies_with_a_killed_lab() -> None:
    mark = "61.2345"
    lab = subprocess.run([sys.executable, "-c", ORPHAN.format(
        root=str(ROOT), mark=mark)], capture_output=True, text=True,
        timeout=30)
    assert lab.returncode == -signal.SIGKILL
    pid = int(lab.stdout.split()[0])
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = alive(pid)
    if leftover:                    # do not leave it behind either way
        subprocess.run(["kill", "-9", str(pid)])
    assert not leftover, "the child outlived its SIGKILLed parent"
    assert procs.pids_matching(b"sleep\0", mark.encode()) == []


def test_stop_kills_a_child_that_ignores_sigterm() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal("
         "signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
         "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    started = time.monotonic()
    procs.stop(child, 0.5)
    assert child.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 10


def test_kill_group_takes_the_whole_session() -> None:
    child = subprocess.Popen(
        ["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE,
        text=True, start_new_session=True)
    assert child.stdout is not None
    grandchild = int(child.stdout.readline())
    procs.kill_group(child)
    assert child.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while not dead(grandchild):
        assert time.monotonic() < deadline, "sleep outlived its session"
        time.sleep(0.05)


def dead(pid: int) -> bool:
    """Gone, or a zombie waiting for init to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True
