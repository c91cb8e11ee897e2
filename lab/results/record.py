"""Reading a cell result (the runner's swaplab-cell/1 document): the
pieces that the session's checks and the reports both need."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from lab.spec.model import Cell


KERNEL_COMPLAINTS = ("warn", "bug", "oops", "panic", "kasan", "lockdep",
                     "gpf", "lockup", "fs_error")
# A cell during which other work took more than this share of the host's
# CPU (lab.guest.hostload) is set aside like a failed one: under TCG the
# guest ran slower by an unknown amount. On a quiet host the share is
# about 1 % (the sandbox's own daemons).
MAX_FOREIGN_SHARE = 0.10


def workload_doc(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The workload's own JSON document in a cell result ({} if none)."""
    return (result.get("workload") or {}).get("result") or {}


def host_busy(result: Mapping[str, Any]) -> str | None:
    """Why a cell's measurement is set aside for a busy host, or None
    (also for results from before the load was recorded)."""
    load = (result.get("timing") or {}).get("host_load") or {}
    share = load.get("foreign_share")
    if isinstance(share, (int, float)) and share > MAX_FOREIGN_SHARE:
        return (f"host-busy: other work took {share:.0%} of the host's "
                f"CPU (over {MAX_FOREIGN_SHARE:.0%})")
    return None


def complaints(result: Mapping[str, Any]) -> dict[str, int]:
    """Kernel complaints in the guest log: count by kind, those seen."""
    flags = result.get("kernel_log_flags") or {}
    counts = {name: (flags.get(name) or {}).get("count") or 0
              for name in KERNEL_COMPLAINTS}
    return {name: n for name, n in counts.items() if n}


def filler_damage(result: Mapping[str, Any]) -> tuple[int, int] | None:
    """A swap-file cell's check of the file system around its swap file
    (workloads/agent/swapfile.h): filler files read back, and those
    changed or unreadable; None for a cell without a swap file."""
    check = result.get("swap_file_check")
    if not check:
        return None
    return (check.get("files") or 0,
            (check.get("bad") or 0) + (check.get("unreadable") or 0))


@dataclass(frozen=True)
class CellRecord:
    """One loaded cell file."""
    path: Path
    cell: Cell
    inputs_hash: str
    provenance: dict[str, Any]
    result: dict[str, Any]

    @property
    def outcome(self) -> str:
        return self.result.get("outcome", "failed")

    @property
    def finished(self) -> bool:
        # A lab-error is the host's or the lab's fault, not a measurement,
        # and so is a cell measured while other work took the host's CPU
        # (set aside by the statistics): neither counts as done, so a
        # resumed run measures it again.
        return self.result.get("reason") != "lab-error" and \
            not host_busy(self.result)
