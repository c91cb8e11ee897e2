"""Run one cell: one boot of one kernel with one swap backend and one
workload, and turn whatever happened into a result (lab.guest.verdict).

`run_cell` never raises for anything the guest or QEMU does: the outcome
is "ok" or "failed" with a reason, and the console log is kept.

Interactive use: `boot(build, backend, guest, command)` prints the console
and returns the guest command's exit status.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import IO, Any

from lab import procs
from lab.cache import atomic_write, cache_root, write_error
from lab.errors import LabError
from lab.guest import accel as accel_mod
from lab.guest import backends, devices, hostload, initramfs, qemu
from lab.guest.guestlog import Console, strip_klog
from lab.guest.verdict import build_result, classify
from lab.kernel.artifact import Build
from lab.spec.model import Backend, Guest, Variant
from lab.guest.cellspec import CellResult, CellSpec, WORKLOADS_BUILD


def config_items(spec: CellSpec, setup: backends.Setup
                 ) -> list[tuple[str, str]]:
    """The guest agent's configuration for a cell on a prepared backend
    (key, value pairs, in the order the agent reads them)."""
    items: list[tuple[str, str]] = [("cell", spec.cell_id),
                                    ("device", setup.device),
                                    ("swap_kib", str(spec.guest.swap_mib
                                                     * 1024))]
    items += list(setup.agent)
    items += [(f"sysfs.{k}", v) for k, v in spec.sysfs.items()]
    items += [(f"sysctl.{k}", v) for k, v in spec.sysctl.items()]
    items += [("arg", a) for a in spec.argv]
    items.append(("timeout_s", str(spec.timeout_s)))
    if spec.interactive:
        items.append(("interactive", "1"))
    if spec.trace:
        items.append(("trace", "1"))
    if spec.test:
        items.append(("test", spec.test))
    return items


def _initrd(spec: CellSpec, cache: Path, setup: backends.Setup,
            dest: Path) -> Path:
    devices.build_programs()
    base = initramfs.base_image(
        cache, spec.workloads_dir,
        [*spec.extra_programs, devices.PROBE, devices.DILATE])
    conf = initramfs.render_config(config_items(spec, setup))
    (spec.out_dir / "cell.conf").write_text(conf)
    files = initramfs.files_image(cache, spec.extra_files) \
        if spec.extra_files else None
    return initramfs.cell_image(base, conf, dest, files)


def probe_images(build: Build, cache: Path) -> tuple[Path, Path]:
    base = initramfs.base_image(cache, None)
    conf = initramfs.render_config([("cell", "probe"), ("mode", "probe")])
    dest = cache / "images" / "accel-probe" / "initrd.img"
    return build.bzimage, initramfs.cell_image(base, conf, dest)


def choose_accel(build: Build, cache: Path) -> accel_mod.Accel:
    return accel_mod.detect(cache, lambda: probe_images(build, cache))


def run_cell(spec: CellSpec, cache: Path | None = None,
             acc: accel_mod.Accel | None = None,
             echo: IO[str] | None = None) -> CellResult:
    """Boot, run, collect, classify. Never raises for guest trouble."""
    cache = cache or cache_root()
    spec.out_dir.mkdir(parents=True, exist_ok=True)
    console_log = spec.out_dir / "console.log"
    frame_file = spec.out_dir / "result.frame"
    for stale in (console_log, frame_file, spec.out_dir / "result.json"):
        stale.unlink(missing_ok=True)
    setup = None
    argv: list[str] = []
    timing: dict[str, Any] = {}
    proc = None
    dilated: dict[str, Any] | None = None
    # The device model (nbdkit) lives as long as the cell: stopped after
    # QEMU is gone, whatever happened.
    model = contextlib.ExitStack()
    try:
        if not spec.build.bzimage.is_file():
            raise LabError(f"no kernel image {spec.build.bzimage}")
        acc = acc or choose_accel(spec.build, cache)
        image_dir = cache / "images" / spec.cell_id
        if devices.needs_factor(spec.backend):
            if spec.dilation is None:
                raise LabError(
                    f"backend {spec.backend.name!r} has dilation: auto, "
                    "but no factor was measured for this boot "
                    "(lab.calibrate.dilation.prepared)")
            dilated = spec.dilation
        source = model.enter_context(devices.running(
            spec.backend, spec.guest, image_dir,
            dilated["factor"] if dilated else None,
            spec.out_dir / "nbdkit.log"))
        setup = backends.prepare(spec.backend, spec.guest, image_dir,
                                 source)
        initrd = _initrd(spec, cache, setup, image_dir / "initrd.img")
        qspec = qemu.Spec(
            name=spec.cell_id, kernel=spec.build.bzimage, initrd=initrd,
            memory_mib=spec.guest.memory_mib, vcpus=spec.guest.vcpus,
            accel=acc, backend=setup, result_file=frame_file,
            firmware=spec.guest.firmware,
            cmdline=[spec.guest.cmdline, spec.cmdline], vars_dir=image_dir)
        argv = qemu.command(qspec)
        frame_file.write_bytes(b"")
        limit = spec.timeout_s + spec.boot_allowance_s
        load0 = hostload.sample()
        t0 = time.monotonic()
        errf = open(spec.out_dir / "qemu.stderr", "w+b")
        with errf:
            # Its own session (a Ctrl-C is for the lab, which stops it),
            # and SIGKILLed should the lab itself die by SIGKILL.
            proc = subprocess.Popen(procs.die_with_parent(argv),
                                    stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=errf,
                                    start_new_session=True)
            # stdout=PIPE, buffered: Console reads what has come (read1)
            assert isinstance(proc.stdout, io.BufferedReader)
            reader = Console(proc.stdout, console_log, echo, t0)
            reader.start()
            timed_out = False
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                procs.kill_group(proc)
            reader.join(timeout=30)
            if reader.error is not None:
                raise write_error(console_log, reader.error)
            errf.seek(0)
            qemu_err = errf.read().decode(errors="replace")
        total = time.monotonic() - t0
        timing.update({"host_total_s": round(total, 3),
                       "timeout_s": limit, "timed_out": timed_out,
                       "host_load": hostload.window(
                           load0, hostload.sample()).as_dict()})
        for name, when in reader.marks.items():
            timing[f"host_to_{name}_s"] = round(when, 3)
        console = console_log.read_text(errors="replace") \
            if console_log.exists() else ""
        reason, detail, payload = classify(
            spec, setup, frame_file.read_bytes(), console, timed_out,
            proc.returncode, qemu_err, "agent" in reader.marks)
        result = build_result(spec, setup, acc, reason, detail, payload,
                              console, timing, argv)
        if payload is not None:
            klog = (payload.get("kernel_log") or {}).get("text")
            if klog:
                (spec.out_dir / "guest-dmesg.txt").write_text(
                    strip_klog(klog))
    except Exception as exc:       # noqa: BLE001 - a cell never stops a run
        reason = "boot-failure" if isinstance(exc, qemu.CannotBoot) \
            else "lab-error"
        detail = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, LabError):
            (spec.out_dir / "lab-error.txt").write_text(
                traceback.format_exc())
        result = build_result(spec, setup, acc, reason, detail, None, "",
                              timing, argv)
    finally:
        # QEMU, then its device model, then the images, however the cell
        # ended: on Ctrl-C (or SIGTERM through lab.procs.Terminated)
        # nothing is recorded and the run resumes with this cell.
        if proc is not None:
            procs.kill_group(proc)
        model.close()
        finally_remove_images(cache / "images" / spec.cell_id,
                              spec.keep_images)
    result["dilation"] = dilated
    if devices.injects_faults(spec.backend):
        result["device_faults"] = devices.injected_faults(
            spec.out_dir / "nbdkit.log")
    atomic_write(spec.out_dir / "result.json",
                 json.dumps(result, indent=1, sort_keys=False) + "\n")
    return CellResult(spec.cell_id, result["outcome"], result["reason"],
                      result["detail"], result, spec.out_dir)


def finally_remove_images(image_dir: Path, keep: bool) -> None:
    """A cell's disk images fill up to the swap size: drop them after
    the cell (they are recreated for the next one anyway)."""
    if keep or not image_dir.is_dir():
        return
    for path in image_dir.iterdir():
        if path.is_file() and path.suffix in (".img", ".fd"):
            path.unlink(missing_ok=True)


# ----------------------------------------------------------- interactive

def boot(build: Build, backend: Backend, guest: Guest, command: str,
         cache: Path | None = None, timeout_s: int = 600,
         variant: Variant | None = None, out: IO[str] | None = None,
         expect_suffix: str | None = None,
         workloads_dir: Path | None = WORKLOADS_BUILD,
         trace: bool = False,
         dilated: dict[str, Any] | None = None,
         files: dict[str, bytes] | None = None) -> int:
    """Boot `build` with swap on `backend`, run `command` (busybox sh -c)
    on the guest console, print the console; the command's exit status
    (128+N for a signal; 255 when the guest failed to run it). The
    variant's kernel cmdline and sysfs/sysctl settings apply if given;
    `files` (guest path -> data) go into its initramfs."""
    cache = cache or cache_root()
    out = out or sys.stdout
    # Two lab boots of one variant and backend may run at once: each has
    # its own disk images and logs (sharing a swap image panicked a guest).
    stamp = time.strftime("%Y%m%d-%H%M%S")
    own = f"{build.variant}-{backend.name}-{os.getpid()}"
    spec = CellSpec(
        cell_id=f"boot-{own}",
        build=build, backend=backend, guest=guest,
        argv=["/bin/sh", "-c", command], timeout_s=timeout_s,
        out_dir=cache / "boot" / f"{stamp}-{own}",
        cmdline=variant.cmdline if variant else "",
        sysfs=dict(variant.sysfs) if variant else {},
        sysctl=dict(variant.sysctl) if variant else {},
        interactive=True, expect_suffix=expect_suffix,
        workloads_dir=workloads_dir, trace=trace, dilation=dilated,
        extra_files=dict(files or {}))
    res = run_cell(spec, cache, echo=out)
    wl = res.result.get("workload") or {}
    if res.reason in (None, "workload-error", "integrity-error", "oom") \
            and wl:
        status = wl["exit_code"] if wl.get("exit_code") is not None \
            else 128 + int(wl.get("signal") or 0)
        how = "timed out" if wl.get("timed_out") else f"exit status {status}"
        print(f"\nlab boot: guest command {how}; console log "
              f"{res.console_log}", file=sys.stderr)
        return int(status)
    print(f"\nlab boot: failed ({res.reason}: {res.detail}); console log "
          f"{res.console_log}", file=sys.stderr)
    return 255
