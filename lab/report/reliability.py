"""The reliability section of a report: for each variant, how much was
swapped out and back in with every page verified, which device faults
were injected and survived, what the guest kernel complained about.

It reads the finished cells of any run (a lab-error is the host's
fault, retried by the next run, and not counted). The `faults` sub-matrix (matrix.yaml) is made for it: sticky
media errors from the device model (lab/devmodel), swapoff cycles under
load (workloads/swapcycle.c), fork with shared swap entries.
"""
from __future__ import annotations

from pathlib import Path


from lab.report.analysis import Results
from lab.report.figstyle import (COLUMN, DARK, Figure, colours_of, finish,
                                 new_figure)
from lab.results.faults import VariantFaults


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
    """GiB swapped out and back per variant (a row each), and at the end
    of each row whether its cells were clean, or what went wrong."""
    if not rows:
        return None
    colours = colours_of(res.source.variants)
    fig, ax, _ = new_figure((7.0, 1.9 + 0.42 * len(rows)), COLUMN)
    ys = range(len(rows))
    for y, row in zip(ys, rows):
        colour = colours.get(row.variant, "#888888")
        ax.barh(y - 0.2, row.swapped_out_gib, 0.4, color=colour)
        ax.barh(y + 0.2, row.swapped_in_gib, 0.4, color=colour,
                alpha=0.55, hatch="//")
        end = max(row.swapped_out_gib, row.swapped_in_gib)
        ax.annotate("clean" if row.clean else verdict(row), (end, y),
                    xytext=(4, 0), textcoords="offset points",
                    va="center", color=DARK if row.clean else "#D55E00")
    ax.set_yticks(list(ys), [r.variant for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("GiB swapped (solid out, hatched in)")
    ax.set_xlim(0, max(max(r.swapped_out_gib, r.swapped_in_gib)
                       for r in rows) * 1.6 or 1)
    return finish(fig, headline(rows), "reliability", dest,
                  res.provenance(), note="every page read back was "
                  "checked against its stamp")


def verdict(row: VariantFaults) -> str:
    """What made a variant's cells not clean, shortest first."""
    parts = [f"{n} {what}" for n, what in (
        (row.mismatches, "wrong"), (row.filler_damaged, "files hit"),
        (row.complaints, "warn"), (row.failed, "failed"),
        (row.swap_failures, "swapon")) if n]
    return ", ".join(parts[:2])
