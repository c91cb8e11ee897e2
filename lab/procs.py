"""Host processes: finding them by command line (to prove the lab left
none behind), tying QEMU's life to the lab's, and stopping the lab
cleanly on SIGTERM or SIGHUP.

Ctrl-C raises KeyboardInterrupt, which unwinds through every `finally`
that stops a cell's QEMU and nbdkit. SIGTERM and SIGHUP would end Python
on the spot instead, leaving QEMU (in its own session) running; with
`interrupt_on` they raise `Terminated`, a KeyboardInterrupt, so the same
cleanup runs.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path
from types import FrameType


def pids_matching(*needles: bytes) -> list[int]:
    """PIDs whose NUL-separated command line contains every needle."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if all(n in cmd for n in needles):
            out.append(int(pid))
    return out


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C would raise
    KeyboardInterrupt; `signum` says which."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def interrupt_on(*signums: int) -> None:
    """Turn these signals into Terminated (main thread only; elsewhere,
    as in a pytest-xdist worker thread, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in signums or (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise)


def die_with_parent(argv: list[str]) -> list[str]:
    """`argv` run so that it is SIGKILLed when the (thread that started
    the) lab dies, even by SIGKILL: QEMU runs in a session of its own and
    would otherwise outlive a killed lab. Uses util-linux's setpriv
    (Essential in Debian); without it, `argv` unchanged."""
    if shutil.which("setpriv") is None:
        return list(argv)
    return ["setpriv", "--pdeathsig", "KILL", "--", *argv]


def signal_of(exc: BaseException) -> int:
    """The signal behind a KeyboardInterrupt (SIGINT for Ctrl-C)."""
    return getattr(exc, "signum", signal.SIGINT)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child started in a session of its own (QEMU) with its
    whole process group, and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stop(proc: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM a child that cleans up after itself (make, nbdkit), SIGKILL
    it if it is not gone within timeout_s, and reap it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()
