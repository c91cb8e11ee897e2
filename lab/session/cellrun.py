"""One matrix cell, end to end on this machine: spec -> guest -> record.

Builds the cell's spec (with the host-calibrated CPU-work loop the
workloads read from /etc/swaplab/calibration), boots it through the
runner and assembles the provenance the result store requires. The pytest
plugin in lab/cells calls this; nothing here stops a matrix on a guest
failure.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import subprocess
from pathlib import Path
from typing import Any

from lab import elf
from lab.cache import atomic_write
from lab.calibrate import dilation
from lab.errors import LabError
from lab.guest import accel, qemu, runner
from lab.paths import REPO
from lab.guest import cellspec
from lab.kernel.artifact import Build
from lab.results import store
from lab.results.record import complaints, filler_damage, workload_doc
from lab.spec.model import CellPlan

SWAPBENCH = cellspec.WORKLOADS_BUILD / "swapbench"
CALIBRATION_US = 24
GUEST_CALIBRATION = "etc/swaplab/calibration"


def calibration(cache: Path, binary: Path = SWAPBENCH) -> bytes:
    """The work-loop calibration for this host and swapbench binary,
    measured once (`swapbench --calibrate`) and kept in the cache."""
    if not binary.is_file():
        raise LabError(f"{binary} is missing; build it with "
                       "'make -C workloads'")
    digest = hashlib.sha256(binary.read_bytes()).hexdigest()[:16]
    path = cache / "calibration" / f"swapbench-{digest}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Parallel workers must agree on one calibration: it is part of every
    # cell's inputs, so the first one measures and the others wait.
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            tmp = path.with_suffix(".new")
            proc = subprocess.run(
                [str(binary), "--calibrate", str(tmp), "--work-us",
                 str(CALIBRATION_US)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise LabError(f"calibrating the work loop failed: "
                               f"{proc.stderr.strip()}")
            atomic_write(path, tmp.read_bytes())
            tmp.unlink()
    return path.read_bytes()


@functools.cache
def qemu_version() -> str:
    return accel.qemu_version()


def programs(plan: CellPlan) -> list[Path]:
    """The binaries a cell runs: its program and any argument that names
    another (swapcycle runs swapbench) in workloads/build, or a program
    brought by the user with its interpreter and libraries."""
    wl = plan.workload
    if wl.path:
        return elf.closure(Path(wl.path))
    names = dict.fromkeys((wl.program, *wl.args))
    return [cellspec.WORKLOADS_BUILD / n for n in names
            if "/" not in n and (cellspec.WORKLOADS_BUILD / n).is_file()]


def inputs(plan: CellPlan, build: Build, cache: Path) -> str:
    """The store's inputs hash, including what the matrix does not pin:
    the binaries the cell runs and the agent, the calibration and the
    base kernel command line. Only the cell's own programs: a study
    measured in pieces keeps its cells when another workload's program
    is rebuilt or a new one is added."""
    extra = {"calibration": calibration(cache).decode(errors="replace"),
             # every guest's kernel command line starts with it: a result
             # from another (rootfstype=tmpfs, say) is not this cell's
             "base_cmdline": " ".join(qemu.BASE_CMDLINE)}
    for path in programs(plan) + sorted(
            (REPO / "workloads/agent/build").glob("*")):
        if path.is_file():
            extra[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return store.inputs_hash(plan, build.key, extra)


def provenance(plan: CellPlan, build: Build, result: dict[str, Any],
               started: str, ended: str) -> dict[str, Any]:
    workload, backend = plan.workload, plan.backend
    wl_json = workload_doc(result)
    return {
        "tree": {"package": build.tree, "version": build.tree_version},
        "patches": build.patches,
        "config_sha256": build.config_sha256,
        "build_key": build.key,
        "kernel_release": (result.get("kernel") or {}).get("release"),
        "qemu_version": qemu_version(),
        "qemu_argv": result.get("qemu_argv") or [],
        "accel": (result.get("accel") or {}).get("name", "unknown"),
        "dilation": (result.get("dilation") or {}).get("factor"),
        "backend": {"name": backend.name, "kind": backend.kind,
                    "params": dict(backend.params)},
        "guest_device": result.get("device"),
        "guest_firmware": result.get("firmware"),
        "workload": {"name": workload.name,
                     "argv": [workload.program, *workload.args],
                     "seed": (wl_json.get("config") or {}).get("seed")},
        "matrix_sha256": store.sha256_file(plan.matrix_file),
        "started": started, "ended": ended,
        # the machine that booted the guest (not checked: results stored
        # before it was recorded lack it)
        "host": store.host_info(),
    }


def execute(plan: CellPlan, build: Build, out_dir: Path,
            cache: Path) -> tuple[cellspec.CellResult, dict[str, Any]]:
    """Boot the cell; its result and provenance (never raises for what
    the guest does)."""
    spec = dilation.prepared(cellspec.cell_spec(plan, build, out_dir), cache)
    spec.extra_files[GUEST_CALIBRATION] = calibration(cache)
    started = store.now_utc()
    res = runner.run_cell(spec, cache)
    return res, provenance(plan, build, res.result, started,
                           store.now_utc())


def sanity(result: dict[str, Any]) -> list[str]:
    """What makes a cell's measurement untrustworthy beyond its outcome:
    kernel complaints in the guest log, data mismatches. (A guest that
    did not prove its identity or firmware has already failed: classify.)"""
    flags = result.get("kernel_log_flags") or {}
    problems = [f"guest kernel log has {name}: "
                f"{flags[name].get('first', '')}"
                for name in complaints(result)]
    total = workload_doc(result).get("total") or {}
    for key, who in (("mismatches", ""), ("fork_mismatches",
                                          " seen by forked children")):
        if total.get(key):
            problems.append(f"{total[key]} data mismatches{who}")
    damage = filler_damage(result)
    if damage and damage[1]:
        # the file system around a swap file lost data
        check = result["swap_file_check"]
        problems.append(
            f"the swap file's file system lost data: {check.get('bad')} of "
            f"{check.get('files')} filler files changed, "
            f"{check.get('unreadable')} unreadable (first: "
            f"{check.get('first_bad')})")
    return problems
