"""Reading the guest: its console (the agent's markers, kernel panics, OOM
kills, kernel complaints), /proc snapshots and their deltas, swap device
flags and swapcycle's events."""
from __future__ import annotations

import contextlib
import re
import threading
import time
from pathlib import Path
from io import BufferedIOBase
from typing import IO, Any


MARK_AGENT = b"swaplab-agent: start"
MARK_WORKLOAD = b"swaplab-agent: workload start"
PANIC_RE = re.compile(r"Kernel panic - not syncing:?\s*(.*)")
OOM_RE = re.compile(r"(Out of memory|oom-kill|invoked oom-killer|"
                    r"System is deadlocked on memory)")
# Kernel complaints in the guest log. The debug build's reports are
# caught by the first line of each: lockdep's "WARNING: possible circular
# locking dependency detected" (and the other lockdep WARNINGs), KASAN's
# "BUG: KASAN: use-after-free in ...", DEBUG_ATOMIC_SLEEP's "BUG: sleeping
# function called from invalid context", DEBUG_LIST's WARN; a VM_BUG_ON
# prints "kernel BUG at mm/...!" and on x86 dies with "invalid opcode",
# not "Oops". Lockdep switching itself off (a table too small, or after
# its first report) makes its silence worthless, so that is flagged too.
# The boot banners of a debug kernel ("kasan: KernelAddressSanitizer
# initialized", "rcu: RCU lockdep checking is enabled.", "Lock dependency
# validator: ...", "... MAX_LOCKDEP_KEYS") match nothing here, nor do
# lockdep's and KASAN's own functions in the call trace of some other
# report ("? lockdep_hardirqs_on_prepare+0x1ce/0x1ed").
LOG_FLAGS = (
    ("warn", re.compile(r"WARNING: ")),
    ("bug", re.compile(r"BUG: |kernel BUG at ")),
    ("oops", re.compile(r"Oops|invalid opcode: ")),
    ("panic", re.compile(r"Kernel panic")),
    ("kasan", re.compile(r"KASAN")),
    ("lockdep", re.compile(r"possible (circular|recursive) locking|"
                           r"inconsistent lock state|"
                           r"\blockdep\b(?! checking is enabled)|"
                           r"turning off the locking correctness validator"
                           )),
    ("gpf", re.compile(r"general protection fault")),
    ("oom", OOM_RE),
    ("lockup", re.compile(r"soft lockup|hard LOCKUP|self-detected stall|"
                          r"detected stalls on CPUs|blocked for more than")),
    # a file system on the swap drive found its own metadata damaged
    # (swap_file backends): swap IO went where it must not
    ("fs_error", re.compile(r"EXT[234]-fs error")),
)


class Console(threading.Thread):
    """Reads QEMU's stdout (the guest console): log file, optional echo,
    host timestamps of the agent's markers."""

    def __init__(self, stream: BufferedIOBase, log: Path,
                 echo: IO[str] | None, t0: float) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.log = log
        self.echo = echo
        self.t0 = t0
        self.marks: dict[str, float] = {}
        self.tail = b""
        self.error: OSError | None = None    # the log could not be written

    def _write(self, out: IO[bytes] | None, chunk: bytes) -> IO[bytes] | None:
        """Log the chunk; on a write error (a full disk) stop logging but
        go on reading, or the guest's console would block and hang."""
        if out is None:
            return None
        try:
            out.write(chunk)
            out.flush()
            return out
        except OSError as exc:
            self.error = exc
            with contextlib.suppress(OSError):
                out.close()
            return None

    def run(self) -> None:
        try:
            out: IO[bytes] | None = open(self.log, "wb")
        except OSError as exc:
            out, self.error = None, exc
        try:
            while True:
                chunk = self.stream.read1(65536)
                if not chunk:
                    break
                now = time.monotonic() - self.t0
                out = self._write(out, chunk)
                window = self.tail + chunk
                for name, mark in (("agent", MARK_AGENT),
                                   ("workload", MARK_WORKLOAD)):
                    if name not in self.marks and mark in window:
                        self.marks[name] = now
                if "first_output" not in self.marks:
                    self.marks["first_output"] = now
                self.tail = window[-64:]
                if self.echo is not None:
                    self.echo.write(chunk.decode(errors="replace"))
                    self.echo.flush()
        finally:
            if out is not None:
                with contextlib.suppress(OSError):
                    out.close()


# ---------------------------------------------------------------- parsing

def parse_kv(text: str | None) -> dict[str, int]:
    """/proc/vmstat ("key value") or /proc/meminfo ("Key: value kB")."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return out


def parse_diskstats(text: str | None) -> dict[str, list[int]]:
    out = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) >= 14:
            out[parts[2]] = [int(x) for x in parts[3:]]
    return out


DISKSTAT_FIELDS = ("reads", "reads_merged", "sectors_read", "read_ms",
                   "writes", "writes_merged", "sectors_written", "write_ms",
                   "in_flight", "io_ms", "weighted_io_ms")


def snapshot(raw: dict[str, Any] | None) -> dict[str, Any]:
    raw = raw or {}
    return {"uptime_s": raw.get("uptime_s"),
            "vmstat": parse_kv(raw.get("vmstat")),
            "meminfo_kb": parse_kv(raw.get("meminfo")),
            "diskstats": parse_diskstats(raw.get("diskstats")),
            "swaps": raw.get("swaps"), "sysfs": raw.get("sysfs", {})}


def deltas(before: dict[str, Any], after: dict[str, Any],
           disk: str | None) -> dict[str, Any]:
    vb, va = before["vmstat"], after["vmstat"]
    out: dict[str, Any] = {"vmstat": {k: va[k] - vb.get(k, 0) for k in va
                                      if va[k] != vb.get(k, 0)}}
    db = before["diskstats"].get(disk or "")
    da = after["diskstats"].get(disk or "")
    if db and da:
        out["diskstats"] = {name: da[i] - db[i]
                            for i, name in enumerate(DISKSTAT_FIELDS)
                            if i < len(da) and i < len(db)}
    return out


def swap_flags(line: str | None) -> list[str]:
    """Flags at the end of "Adding ...k swap on X.  Priority:P extents:E
    across:Nk SSDscFS": SS solid state, D discard, s/c discard kinds,
    FS file system swap file."""
    if not line:
        return []
    m = re.search(r"across:\d+k\s*(\S*)\s*$", line)
    flags = m.group(1) if m else ""
    out = []
    for code in ("SS", "D", "s", "c", "FS"):
        if code in flags:
            out.append(code)
            flags = flags.replace(code, "", 1)
    return out


def log_flags(text: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    lines = text.splitlines()
    for name, rx in LOG_FLAGS:
        hits = [ln for ln in lines if rx.search(ln)
                and "swaplab-agent" not in ln]
        if hits:
            out[name] = {"count": len(hits), "first": hits[0].strip()[:300]}
    return out


SWAPCYCLE_RE = re.compile(r"swapcycle: cycle=(\d+) swapoff=(\S+) "
                          r"off_ms=([\d.]+) swapon=(\S+)"
                          r"(?: push_ms=([\d.]+))?")


def swap_events(text: str) -> dict[str, Any]:
    """What the guest kernel said about its swap device under faults:
    swap read and write errors (mm/page_io.c; printed rate-limited, so
    these are lower bounds), block-layer I/O errors, and the swapoff
    cycles of swapcycle (workloads/swapcycle.c)."""
    cycles = [{"cycle": int(m.group(1)), "swapoff": m.group(2),
               "off_ms": float(m.group(3)), "swapon": m.group(4),
               "push_ms": float(m.group(5)) if m.group(5) else None}
              for m in SWAPCYCLE_RE.finditer(text)]
    return {"read_errors": text.count("Read-error on swap-device"),
            "write_errors": text.count("Write-error on swap-device"),
            # blk_print_req_error(): "I/O error", "critical medium
            # error" (what NVMe media errors become) and the rest
            "io_errors": len(re.findall(r"error, dev \S+, sector", text)),
            "swapcycle": cycles}


def strip_klog(text: str) -> str:
    return re.sub(r"(?m)^<\d+>", "", text)
