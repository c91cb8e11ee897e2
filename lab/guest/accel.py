"""Acceleration: KVM when it really works here, else TCG (thread=multi).

/dev/kvm existing is not enough: on a nested host with a paravirtual KVM a
Linux guest hangs right after "early console in setup code". So KVM is
accepted only after a probe boot of a real guest (the lab's kernel and
agent in probe mode) reaches the agent within a short timeout. The verdict
is cached per machine and QEMU version under <cache>/state/. Set
SWAPLAB_ACCEL=tcg or =kvm to skip the probe.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from lab import procs
from lab.cache import atomic_write
from lab.errors import LabError

QEMU = "qemu-system-x86_64"
PROBE_TIMEOUT_S = 25
PROBE_MARK = b"swaplab-agent: probe ok"


@dataclass(frozen=True)
class Accel:
    name: str                 # kvm | tcg
    args: tuple[str, ...]     # QEMU arguments (-accel ..., -cpu ...)
    reason: str               # why this one
    probed: bool = False      # decided by a probe boot (now or cached)

    def describe(self) -> dict[str, object]:
        return asdict(self) | {"args": list(self.args)}


def tcg(reason: str) -> Accel:
    return Accel("tcg", ("-accel", "tcg,thread=multi"), reason)


def kvm(reason: str, probed: bool = False) -> Accel:
    return Accel("kvm", ("-accel", "kvm", "-cpu", "host"), reason, probed)


def qemu_version(qemu: str = QEMU) -> str:
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"cannot run {qemu}: {exc} (install "
                       "qemu-system-x86)")
    return out.splitlines()[0] if out else "unknown"


def machine_key(qemu: str = QEMU) -> str:
    """Identifies this machine (host kernel, CPU) and QEMU version."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mid = ""
    try:
        mid = Path("/etc/machine-id").read_text().strip()
    except OSError:
        pass
    parts = [platform.node(), mid, platform.release(), cpu,
             qemu_version(qemu)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def kvm_usable() -> str | None:
    """None if /dev/kvm can be opened, else why not."""
    if not os.path.exists("/dev/kvm"):
        return "no /dev/kvm"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "/dev/kvm is not readable and writable by this user"
    return None


def probe(kernel: Path, initrd: Path, qemu: str = QEMU,
          timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """Boot `kernel` with KVM; True if the agent's probe marker appears."""
    argv = [qemu, "-accel", "kvm", "-cpu", "host", "-m", "256M",
            "-smp", "1", "-nodefaults", "-no-user-config",
            "-display", "none", "-serial", "stdio", "-no-reboot",
            "-kernel", str(kernel), "-initrd", str(initrd),
            "-append", "console=ttyS0 panic=-1"]
    start = time.monotonic()
    proc = subprocess.Popen(procs.die_with_parent(argv),
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return False, (f"KVM probe boot did not reach the agent in "
                       f"{timeout_s:.0f} s (nested/paravirtual KVM?)")
    except BaseException:
        # Ctrl-C or SIGTERM: QEMU has its own session, stop it here.
        procs.kill_group(proc)
        raise
    took = time.monotonic() - start
    if PROBE_MARK in out:
        return True, f"KVM probe boot reached the agent in {took:.1f} s"
    tail = out.decode(errors="replace").strip().splitlines()[-1:] or [""]
    return False, (f"KVM probe boot failed (exit {proc.returncode}): "
                   f"{tail[0][:200]}")


def detect(cache: Path, probe_images: Callable[[], tuple[Path, Path]],
           qemu: str = QEMU) -> Accel:
    """KVM if it works (probe, cached per machine and QEMU), else TCG.

    `probe_images` returns (kernel, initrd) for a probe boot; it is only
    called when a probe is needed."""
    forced = os.environ.get("SWAPLAB_ACCEL", "")
    if forced == "tcg":
        return tcg("forced by SWAPLAB_ACCEL=tcg")
    if forced == "kvm":
        return kvm("forced by SWAPLAB_ACCEL=kvm")
    if forced:
        raise LabError(f"SWAPLAB_ACCEL={forced!r}: expected tcg or kvm")
    why_not = kvm_usable()
    if why_not:
        return tcg(why_not)
    state = cache / "state" / f"accel-{machine_key(qemu)}.json"
    try:
        saved = json.loads(state.read_text())
        if saved["accel"] == "kvm":
            return kvm(saved["reason"] + " (cached)", probed=True)
        return Accel("tcg", tcg("").args, saved["reason"] + " (cached)",
                     probed=True)
    except (OSError, ValueError, KeyError):
        pass
    kernel, initrd = probe_images()
    ok, reason = probe(kernel, initrd, qemu)
    atomic_write(state, json.dumps({
        "accel": "kvm" if ok else "tcg", "reason": reason,
        "qemu": qemu_version(qemu), "kernel": str(kernel),
        "when": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
    if ok:
        return kvm(reason, probed=True)
    return Accel("tcg", tcg("").args, reason, probed=True)
