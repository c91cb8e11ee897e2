"""How much of the host's CPU went to other work while a guest ran.

Under TCG the guest's clock is the host's and its vCPUs are host threads:
a compile or another guest on the host slows the workload the guest
times, one-sidedly. Run 20261206-023500-quick had such outliers (seq
latency 580 us against 280 to 330 in the same arm; random 943 against
672 to 801) on a host where nothing was meant to run. So each boot
records the host CPU time spent outside the lab over its window: all
CPUs' busy time (/proc/stat) less the lab's own (this process, its
reaped children such as QEMU, and its live descendants such as nbdkit).
A share of the host's capacity is comparable across cell lengths.
The lab's own is the tree under its root process: this one, or the
matrix session's controller (ROOT_ENV), whose xdist workers boot guests
side by side and are not each other's "other work".
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
# The pid of the process whose tree is the lab's (set by the matrix
# session for its workers); used only if it is an ancestor of this one.
ROOT_ENV = "SWAPLAB_LOAD_ROOT"
# /proc/stat cpu fields after the label: user nice system idle iowait
# irq softirq steal ...; busy is everything but idle and iowait.
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


@dataclass(frozen=True)
class Sample:
    monotonic_s: float
    busy_s: float           # all CPUs, non-idle
    own_s: float            # the lab's process tree


@dataclass(frozen=True)
class Window:
    window_s: float
    busy_cpu_s: float
    own_cpu_s: float
    cpus: int

    @property
    def foreign_cpu_s(self) -> float:
        # Tick rounding can make own exceed busy by a tick or two.
        return max(self.busy_cpu_s - self.own_cpu_s, 0.0)

    @property
    def foreign_share(self) -> float:
        """Foreign CPU time over the host's capacity in the window."""
        cap = self.window_s * self.cpus
        return self.foreign_cpu_s / cap if cap > 0 else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {"window_s": round(self.window_s, 3),
                "cpus": self.cpus,
                "busy_cpu_s": round(self.busy_cpu_s, 2),
                "own_cpu_s": round(self.own_cpu_s, 2),
                "foreign_cpu_s": round(self.foreign_cpu_s, 2),
                "foreign_share": round(self.foreign_share, 4)}


def busy_seconds(stat_text: str) -> float:
    """Non-idle seconds of all CPUs from /proc/stat's first line."""
    first = stat_text.split("\n", 1)[0].split()
    if not first or first[0] != "cpu":
        raise ValueError("/proc/stat does not start with the 'cpu' line")
    ticks = [int(x) for x in first[1:]]
    return sum(ticks[i] for i in BUSY_FIELDS if i < len(ticks)) * TICK_S


def parse_pid_stat(text: str) -> tuple[int, int, float]:
    """(pid, ppid, CPU seconds incl. reaped children) of /proc/PID/stat;
    the command name may hold spaces and parentheses."""
    pid = int(text.split(" ", 1)[0])
    rest = text[text.rindex(")") + 2:].split()
    # rest[0] is the state; ppid is field 4, utime..cstime 14 to 17
    ppid = int(rest[1])
    cpu = sum(int(x) for x in rest[11:15]) * TICK_S
    return pid, ppid, cpu


def process_table(proc: Path = Path("/proc")) -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds) of every process still readable."""
    out = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            pid, ppid, cpu = parse_pid_stat((entry / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue            # gone meanwhile, or not a process
        out[pid] = (ppid, cpu)
    return out


def descendants_cpu(table: dict[int, tuple[int, float]], root: int) -> float:
    """CPU seconds of the live descendants of root (not root itself)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        total += table[pid][1]
        todo += children.get(pid, [])
    return total


def lab_root(table: dict[int, tuple[int, float]], me: int,
             wanted: str | None) -> int:
    """The wanted root pid if it is an ancestor of me, else me."""
    if not wanted or not wanted.isdigit():
        return me
    root, pid, seen = int(wanted), me, set()
    while pid in table and pid not in seen:
        if pid == root:
            return root
        seen.add(pid)
        pid = table[pid][0]
    return me


def sample() -> Sample:
    table = process_table()
    me = os.getpid()
    root = lab_root(table, me, os.environ.get(ROOT_ENV))
    # The root's own CPU with the children it reaped, and its live tree.
    own = table[root][1] + descendants_cpu(table, root)
    return Sample(time.monotonic(),
                  busy_seconds(Path("/proc/stat").read_text()), own)


def window(start: Sample, end: Sample, cpus: int | None = None) -> Window:
    return Window(end.monotonic_s - start.monotonic_s,
                  end.busy_s - start.busy_s, end.own_s - start.own_s,
                  cpus or os.cpu_count() or 1)
