"""What a variant's cells did to the data they swapped: pages verified
and mismatched, device faults injected and survived, swapoff cycles,
kernel complaints, the file system around a swap file. The reliability
section of a report (lab.report.reliability) and the upstream-first
risks read these sums.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from lab.results.metricinfo import GIB, PAGE
from lab.results.record import (CellRecord, complaints, filler_damage,
                                workload_doc)


@dataclass
class VariantFaults:
    """One variant's figures, summed over its cells."""
    variant: str
    cells: int = 0
    failed: int = 0
    swapped_out_gib: float = 0.0
    swapped_in_gib: float = 0.0
    verified_pages: int = 0
    mismatches: int = 0
    lost_pages: int = 0             # unreadable from swap (SIGBUS), survived
    procs_io_killed: int = 0
    injected_read: int = 0          # failed device requests (with retries)
    injected_write: int = 0
    kernel_read_errors: int = 0     # "Read-error on swap-device", at least
    kernel_write_errors: int = 0
    swapoff_cycles: int = 0
    swapoff_ok: int = 0
    # a swapon that failed (swap left off) or a swapoff error other than
    # the kernel's two answers under load (ENOMEM, EINTR)
    swap_failures: int = 0
    complaints: int = 0             # WARN, BUG, lockdep, KASAN ... lines
    # swap on a file: the agent re-reads the file system's filler files
    # from the drive after the run (workloads/agent/swapfile.h)
    swap_file_cells: int = 0
    filler_files: int = 0
    filler_damaged: int = 0         # changed or unreadable

    @property
    def faults(self) -> int:
        return self.injected_read + self.injected_write

    @property
    def clean(self) -> bool:
        return not (self.mismatches or self.complaints or self.failed or
                    self.swap_failures or self.filler_damaged)


def add_cell(row: VariantFaults, result: Mapping[str, Any]) -> None:
    row.cells += 1
    if result.get("outcome") != "ok":
        row.failed += 1
    vmstat = (result.get("delta") or {}).get("vmstat") or {}
    row.swapped_out_gib += vmstat.get("pswpout", 0) * PAGE / GIB
    row.swapped_in_gib += vmstat.get("pswpin", 0) * PAGE / GIB
    wl = workload_doc(result)
    total = wl.get("total") or {}
    # verified_pages includes the final sweep
    row.verified_pages += (total.get("verified_pages", 0) +
                           total.get("fork_verified_pages", 0))
    row.mismatches += (total.get("mismatches", 0) +
                       total.get("fork_mismatches", 0))
    row.lost_pages += total.get("lost_pages", 0)
    row.procs_io_killed += wl.get("procs_io_killed", 0)
    dev = result.get("device_faults") or {}
    row.injected_read += dev.get("read_errors", 0)
    row.injected_write += dev.get("write_errors", 0)
    events = result.get("swap_events") or {}
    row.kernel_read_errors += events.get("read_errors", 0)
    row.kernel_write_errors += events.get("write_errors", 0)
    cycles = events.get("swapcycle") or []
    row.swapoff_cycles += len(cycles)
    row.swapoff_ok += sum(c.get("swapoff") == "ok" for c in cycles)
    row.swap_failures += sum(
        c.get("swapon") not in ("ok", "skipped") or
        c.get("swapoff") not in ("ok", "ENOMEM", "EINTR") for c in cycles)
    row.complaints += sum(complaints(result).values())
    damage = filler_damage(result)
    if damage:
        row.swap_file_cells += 1
        row.filler_files += damage[0]
        row.filler_damaged += damage[1]


def summarize(records: Iterable[CellRecord],
              variants: Iterable[str]) -> list[VariantFaults]:
    """One row per variant that has cells, in the matrix's order."""
    rows = {v: VariantFaults(v) for v in variants}
    for rec in records:
        if not rec.finished:
            continue
        row = rows.setdefault(rec.cell.variant, VariantFaults(
            rec.cell.variant))
        add_cell(row, rec.result)
    return [r for r in rows.values() if r.cells]


def has_faults(records: Iterable[CellRecord]) -> bool:
    """Did any cell inject device faults or cycle swapoff?"""
    return any(rec.result.get("device_faults") or
               (rec.result.get("swap_events") or {}).get("swapcycle")
               for rec in records)
