"""The reliability section of a report: for each variant, how much was
swapped out and back in with every page verified, which device faults
were injected and survived, what the guest kernel complained about.

It reads the finished cells of any run (a lab-error is the host's
fault, retried by the next run, and not counted). The `faults` sub-matrix (matrix.yaml) is made for it: sticky
media errors from the device model (lab/devmodel), swapoff cycles under
load (workloads/swapcycle.c), fork with shared swap entries.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import matplotlib.pyplot as plt

from lab.report.analysis import Results
from lab.report.figures import Figure, colours_of, finish
from lab.results.metrics import GIB, PAGE
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


HEADER = ("variant", "cells (failed)", "GiB out", "GiB in",
          "pages verified", "mismatches", "device faults r/w",
          "kernel swap errors r/w", "pages lost (SIGBUS)",
          "procs killed (SIGBUS)",
          "swapoff ok/cycles", "swap on/off failures", "kernel complaints")


def cells_of(row: VariantFaults) -> tuple[str, ...]:
    return (row.variant, f"{row.cells} ({row.failed})",
            f"{row.swapped_out_gib:.2f}", f"{row.swapped_in_gib:.2f}",
            f"{row.verified_pages}", f"{row.mismatches}",
            f"{row.injected_read}/{row.injected_write}",
            f"{row.kernel_read_errors}/{row.kernel_write_errors}",
            f"{row.lost_pages}", f"{row.procs_io_killed}",
            f"{row.swapoff_ok}/{row.swapoff_cycles}", f"{row.swap_failures}",
            f"{row.complaints}")


def markdown(rows: list[VariantFaults], line: str) -> str:
    out = ["# Reliability", "", line, "",
           "Device faults are failed requests at the device model (the "
           "guest's driver retries each up to five times, so one lost "
           "read counts several); kernel swap errors are the guest's "
           "rate-limited \"Read-/Write-error on swap-device\" lines, a "
           "lower bound. A variant passes with 0 mismatches, 0 kernel "
           "complaints, no failed swapon and no failed cell. A page the "
           "kernel could not read back (SIGBUS at it) is lost loudly, "
           "which is allowed: the workload counts it, discards it and "
           "writes it anew (a process killed by SIGBUS elsewhere lost "
           "its data loudly too).", "",
           "| " + " | ".join(HEADER) + " |",
           "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(cells_of(r)) + " |" for r in rows]
    files = [r for r in rows if r.swap_file_cells]
    if files:
        out += ["", "Swap files: after each cell on a swap-file backend "
                "the agent re-read every filler file around the swap file "
                "from the drive; a changed or unreadable one is data a "
                "swap IO wrote or read in the wrong place. " + "; ".join(
                    f"{r.variant} {r.swap_file_cells} cells, "
                    f"{r.filler_files} files, {r.filler_damaged} damaged"
                    for r in files) + "."]
    bad = [r.variant for r in rows if not r.clean]
    out += ["", f"Not clean: {', '.join(bad)}." if bad else
            "Every variant clean: no mismatch, no kernel complaint, "
            "no failed swapon, no failed cell" +
            (", no damaged file." if files else ".")]
    return "\n".join(out) + "\n"


def headline(rows: list[VariantFaults]) -> str:
    bad = [r.variant for r in rows if not r.clean]
    out = min(r.swapped_out_gib for r in rows)
    back = min(r.swapped_in_gib for r in rows)
    faults = sum(r.faults for r in rows)
    lost = sum(r.lost_pages for r in rows)
    if bad:
        return f"Not clean under faults: {', '.join(bad)}"
    return (f"No silent corruption: {len(rows)} variants, each at least "
            f"{out:.2f} GiB swapped out and {back:.2f} GiB back in, "
            f"{faults} device faults, {lost} pages lost loudly")


def figure(res: Results, rows: list[VariantFaults],
           dest: Path) -> Figure | None:
    """GiB swapped out and back per variant, faults and complaints
    written on the bars."""
    if not rows:
        return None
    colours = colours_of(res.source.variants)
    fig, ax = plt.subplots(figsize=(9, 4.8))
    xs = range(len(rows))
    for i, row in zip(xs, rows):
        colour = colours.get(row.variant, "#888888")
        ax.bar(i - 0.2, row.swapped_out_gib, 0.4, color=colour)
        ax.bar(i + 0.2, row.swapped_in_gib, 0.4, color=colour,
               alpha=0.55, hatch="//")
        top = max(row.swapped_out_gib, row.swapped_in_gib)
        ax.annotate(f"{row.faults} faults\n{row.procs_io_killed} killed\n"
                    f"{row.mismatches} mismatch\n{row.complaints} warn",
                    (i, top), textcoords="offset points", xytext=(0, 3),
                    ha="center", va="bottom", fontsize=7,
                    color="#000000" if row.clean else "#D55E00")
    ax.set_xticks(list(xs), [r.variant for r in rows], rotation=20,
                  ha="right")
    ax.set_ylabel("GiB swapped (solid: out, hatched: in)")
    ax.set_ylim(0, max(max(r.swapped_out_gib, r.swapped_in_gib)
                       for r in rows) * 1.45 or 1)
    return finish(fig, res, headline(rows), "reliability", dest,
                   note="verified: every page read back was checked "
                   "against its stamp; faults: failed device requests")
