"""Run one cell: one boot of one kernel with one swap backend and one
workload, and turn whatever happened into a result.

`run_cell` never raises for anything the guest or QEMU does: the outcome
is "ok" or "failed" with a reason, and the console log is kept. Reasons:

  panic            the guest kernel panicked (console "Kernel panic")
  hang             no result within the timeout (QEMU killed), or the
                   workload overran its in-guest timeout
  agent-error      the agent reported an error (a setting did not apply,
                   mkswap/swapon failed, ...) or crashed (init killed)
  integrity-error  the workload's data check failed (exit code 3)
  wrong-kernel     the guest's release does not end in -VARIANT-KEY
  wrong-firmware   the guest did not boot through the requested firmware
                   (ovmf: /sys/firmware/efi must exist; seabios: must not)
  bad-frame        the result frame is missing, truncated or corrupt
  oom              the OOM killer ended the workload (or the guest)
  boot-failure     QEMU did not start, or the guest died before the agent
  workload-error   the workload failed otherwise (exit code, signal,
                   stdout that is not JSON)
  device-mismatch  the guest saw a device unlike the backend (e.g. a
                   rotational flag of 0 on the rotational backend)
  lab-error        a bug or host problem in the lab itself

Interactive use: `boot(build, backend, guest, command)` prints the console
and returns the guest command's exit status.
"""
from __future__ import annotations

import contextlib
import json
import math
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from lab import procs
from lab.cache import atomic_write, cache_root, write_error
from lab.errors import LabError
from lab.guest import accel as accel_mod
from lab.guest import backends, devices, initramfs, qemu
from lab.guest.frame import FrameError, parse
from lab.kernel.build import Build
from lab.paths import REPO
from lab.spec.matrix import Backend, Cell, Guest, Matrix, Variant

WORKLOADS_BUILD = REPO / "workloads" / "build"
BOOT_ALLOWANCE_S = 60       # host timeout = workload timeout + this
SCHEMAS = {"swapbench": "swapbench/3", "swaplab-memtest": "swaplab-memtest/1"}
# Programs that run the workload named after their "--" in the same
# process (exec): the output is the workload's.
WRAPPERS = ("swapcycle", "swaplab-dilate")
REASONS = ("panic", "hang", "agent-error", "integrity-error", "wrong-kernel",
           "wrong-firmware", "bad-frame", "oom", "boot-failure",
           "workload-error", "device-mismatch", "lab-error")
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
)


@dataclass
class CellSpec:
    """Everything one boot needs."""
    cell_id: str
    build: Build
    backend: Backend
    guest: Guest
    argv: list[str]                         # the workload, in the guest
    out_dir: Path                           # console log, result.json
    timeout_s: int = 600                    # the workload's
    sysfs: dict[str, str] = field(default_factory=dict)
    sysctl: dict[str, str] = field(default_factory=dict)
    cmdline: str = ""                       # variant's kernel cmdline
    trace: bool = False                     # do_swap_page durations
    interactive: bool = False               # workload on the console
    test: str = ""                          # agent test switch
    extra_files: dict[str, bytes] = field(default_factory=dict)
    workloads_dir: Path | None = WORKLOADS_BUILD
    extra_programs: list[Path] = field(default_factory=list)
    expect_suffix: str | None = None        # default: -VARIANT-KEY
    boot_allowance_s: int = BOOT_ALLOWANCE_S
    labels: dict[str, Any] = field(default_factory=dict)   # into result
    keep_images: bool = False               # keep the disk image after
    # The device model's time dilation (lab.calibrate.dilation), measured
    # before the boot; required when the backend asks for `auto`.
    dilation: dict[str, Any] | None = None

    @property
    def identity(self) -> str:
        if self.expect_suffix is not None:
            return self.expect_suffix
        return f"-{self.build.variant}-{self.build.key}"


@dataclass
class CellResult:
    cell_id: str
    outcome: str                 # ok | failed
    reason: str | None
    detail: str
    result: dict[str, Any]
    out_dir: Path

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def console_log(self) -> Path:
        return self.out_dir / "console.log"


# ------------------------------------------------------------ from matrix

def cell_spec(matrix: Matrix, cell: Cell, build: Build,
              out_dir: Path) -> CellSpec:
    """A matrix cell as a CellSpec (variant settings, then workload's;
    the variant's timeout_scale stretches the workload's timeout and the
    boot allowance for a slow debug kernel)."""
    variant = matrix.variants[cell.variant]
    workload = matrix.workloads[cell.workload]
    scale = variant.timeout_scale
    return CellSpec(
        cell_id=cell.id, build=build, backend=matrix.backends[cell.backend],
        guest=matrix.guest, argv=[workload.program, *workload.args],
        out_dir=out_dir, timeout_s=math.ceil(workload.timeout_s * scale),
        boot_allowance_s=math.ceil(BOOT_ALLOWANCE_S * scale),
        sysfs={**variant.sysfs, **workload.sysfs},
        sysctl={**variant.sysctl, **workload.sysctl},
        cmdline=variant.cmdline, trace=workload.trace,
        labels={"variant": cell.variant, "backend": cell.backend,
                "workload": cell.workload, "repeat": cell.repeat})


def config_items(spec: CellSpec, setup: backends.Setup) -> list[tuple]:
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


# --------------------------------------------------------------- console

class Console(threading.Thread):
    """Reads QEMU's stdout (the guest console): log file, optional echo,
    host timestamps of the agent's markers."""

    def __init__(self, stream: IO[bytes], log: Path,
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


# ---------------------------------------------------------------- verdict

def firmware_problem(requested: str, seen: dict[str, Any] | None) -> str:
    """Why the guest's firmware facts (the agent's "firmware" object) do
    not prove the requested firmware; "" when they do. OVMF starts the
    kernel through its EFI stub, so /sys/firmware/efi exists; under
    SeaBIOS it does not."""
    efi = (seen or {}).get("efi")
    if not isinstance(efi, bool):
        return (f"firmware {requested} requested, but the guest did not "
                "report whether /sys/firmware/efi exists")
    want = requested == "ovmf"
    if efi == want:
        return ""
    saw = "present (a UEFI boot)" if efi else "absent (not a UEFI boot)"
    return (f"firmware {requested} requested, but the guest saw "
            f"/sys/firmware/efi {saw}")


def classify(spec: CellSpec, setup: backends.Setup | None,
             frame_data: bytes, console: str, timed_out: bool,
             qemu_rc: int | None, qemu_err: str,
             agent_started: bool) -> tuple[str | None, str,
                                           dict[str, Any] | None]:
    """(reason or None, detail, the agent's payload if it could be read)."""
    payload = None
    frame_error = None
    try:
        payload = parse(frame_data)
    except FrameError as exc:
        frame_error = exc
    last = [ln for ln in console.splitlines() if ln.strip()][-1:] or [""]
    panic = PANIC_RE.search(console)

    if payload is None:
        if timed_out:
            where = "in the workload" if MARK_WORKLOAD.decode() in console \
                else "before the workload" if agent_started \
                else "before the agent started"
            return "hang", (f"no result within {spec.timeout_s} s + "
                            f"{spec.boot_allowance_s} s ({where}); last "
                            f"console line: {last[0][:200]}"), None
        if panic:
            text = panic.group(0).strip()
            if "Attempted to kill init" in text:
                return "agent-error", f"the agent (init) died: {text}", None
            if OOM_RE.search(console):
                return "oom", f"guest ran out of memory: {text}", None
            if not agent_started:
                return "boot-failure", f"panic before the agent: {text}", \
                    None
            return "panic", text, None
        if not agent_started:
            why = qemu_err.strip().splitlines()[-1:] if qemu_err.strip() \
                else [f"last console line: {last[0][:200]}"]
            return "boot-failure", (f"QEMU exited ({qemu_rc}) before the "
                                    f"agent started: {why[0][:300]}"), None
        return "bad-frame", f"{frame_error}", None

    release = (payload.get("kernel") or {}).get("release", "")
    if not release.endswith(spec.identity):
        return "wrong-kernel", (f"guest runs {release!r}, expected a release "
                                f"ending in {spec.identity!r}"), payload
    if payload.get("cell") != spec.cell_id:
        return "bad-frame", (f"the frame is for cell {payload.get('cell')!r}"
                             f", not {spec.cell_id!r}"), payload
    if payload.get("status") != "ok":
        errs = payload.get("errors") or []
        text = "; ".join(f"{e.get('step')}: {e.get('error')}"
                         for e in errs) or "status " + str(
                             payload.get("status"))
        return "agent-error", text, payload
    wrong_fw = firmware_problem(spec.guest.firmware, payload.get("firmware"))
    if wrong_fw:
        return "wrong-firmware", wrong_fw, payload
    if setup is not None:
        problems = setup.check(payload.get("device"))
        if problems:
            return "device-mismatch", "; ".join(problems), payload
    wl = payload.get("workload")
    if wl is None:
        return "agent-error", "the agent did not run the workload", payload
    log = strip_klog((payload.get("kernel_log") or {}).get("text") or "")
    code, sig = wl.get("exit_code"), wl.get("signal")
    if wl.get("timed_out"):
        return "hang", (f"the workload overran its {spec.timeout_s} s "
                        "timeout and was killed"), payload
    if code == 5 or (sig == signal.SIGKILL and OOM_RE.search(log)):
        return "oom", f"workload killed by the OOM killer (exit {code}, " \
            f"signal {sig})", payload
    if code == 3:
        return "integrity-error", ("the workload's data check failed: "
                                   + (wl.get("stderr") or "")[-300:]
                                   .strip()), payload
    if code != 0:
        what = f"exit code {code}" if code is not None else f"signal {sig}"
        return "workload-error", (f"the workload ended with {what}: "
                                  + (wl.get("stderr") or "")[-300:]
                                  .strip()), payload
    if not spec.interactive:
        try:
            doc = json.loads(wl.get("stdout") or "")
        except ValueError as exc:
            return "workload-error", f"workload stdout is not JSON: {exc}", \
                payload
        want = SCHEMAS.get(workload_program(spec.argv))
        schema = doc.get("schema") if isinstance(doc, dict) else None
        if not isinstance(doc, dict) or (want and schema != want):
            return "workload-error", (f"workload stdout is not a "
                                      f"{want or 'JSON object'} document "
                                      f"(schema {schema!r})"), payload
    return None, "", payload


def workload_program(argv: list[str]) -> str | None:
    """The name of the program whose output a cell reads: argv[0], or
    what a wrapper (swapcycle -- swapbench ...) runs."""
    while argv and Path(argv[0]).name in WRAPPERS and "--" in argv:
        argv = argv[argv.index("--") + 1:]
    return Path(argv[0]).name if argv else None


def build_result(spec: CellSpec, setup: backends.Setup | None,
                 acc: accel_mod.Accel | None, reason: str | None,
                 detail: str, payload: dict[str, Any] | None,
                 console: str, timing: dict[str, Any],
                 argv: list[str]) -> dict[str, Any]:
    res: dict[str, Any] = {
        "schema": "swaplab-cell/1",
        "cell": dict({"id": spec.cell_id}, **spec.labels),
        "outcome": "failed" if reason else "ok",
        "reason": reason, "detail": detail,
        "kernel": {"variant": spec.build.variant, "key": spec.build.key,
                   "expected_release": spec.build.release,
                   "expected_suffix": spec.identity,
                   "bzimage": str(spec.build.bzimage), "release": None,
                   "cmdline": None},
        "accel": acc.describe() if acc else None,
        "backend": setup.describe() if setup else {
            "name": spec.backend.name, "kind": spec.backend.kind,
            "params": dict(spec.backend.params)},
        "guest": {"memory_mib": spec.guest.memory_mib,
                  "vcpus": spec.guest.vcpus,
                  "swap_mib": spec.guest.swap_mib,
                  "firmware": spec.guest.firmware,
                  "cmdline": spec.guest.cmdline},
        "timing": timing, "qemu_argv": argv,
        "console_log": "console.log",
        "console_flags": log_flags(console),
    }
    if payload is None:
        return res
    kern = payload.get("kernel") or {}
    res["kernel"]["release"] = kern.get("release")
    res["kernel"]["cmdline"] = (kern.get("cmdline") or "").strip()
    res["firmware"] = dict(payload.get("firmware") or {},
                           requested=spec.guest.firmware)
    res["rootfs"] = payload.get("rootfs")
    dev = payload.get("device")
    if dev:
        dev = dict(dev)
        dev["swap_flags"] = swap_flags(dev.get("swapon_line"))
        dev["rotational"] = (dev.get("queue") or {}).get("rotational")
    res["device"] = dev
    res["settings"] = payload.get("settings", [])
    before, after = snapshot(payload.get("before")), \
        snapshot(payload.get("after"))
    res["before"], res["after"] = before, after
    res["delta"] = deltas(before, after, (dev or {}).get("name"))
    wl = payload.get("workload")
    if wl is not None:
        wl = dict(wl)
        out = wl.pop("stdout", None)
        wl["result"] = None
        if out:
            try:
                wl["result"] = json.loads(out)
            except ValueError:
                wl["stdout_text"] = out[-4000:]
    res["workload"] = wl
    res["trace"] = payload.get("trace")
    klog = payload.get("kernel_log") or {}
    klog_text = strip_klog(klog.get("text") or "")
    res["kernel_log_flags"] = log_flags(klog_text)
    res["swap_events"] = swap_events(klog_text)
    res["agent"] = {"version": payload.get("agent_version"),
                    "status": payload.get("status"),
                    "errors": payload.get("errors", []),
                    "warnings": payload.get("warnings", []),
                    "times": payload.get("times"),
                    "flags": klog.get("flags", [])}
    times = payload.get("times") or {}
    if wl and wl.get("start_uptime_s") is not None:
        timing["guest_uptime_at_workload_s"] = wl["start_uptime_s"]
    timing["guest_uptime_at_agent_s"] = times.get("agent_start_uptime_s")
    return res


# ------------------------------------------------------------------- run

def _initrd(spec: CellSpec, cache: Path, setup: backends.Setup,
            dest: Path) -> Path:
    devices.build_programs()
    base = initramfs.base_image(
        cache, spec.workloads_dir,
        [*spec.extra_programs, devices.PROBE, devices.DILATE])
    conf = initramfs.render_config(config_items(spec, setup))
    (spec.out_dir / "cell.conf").write_text(conf)
    return initramfs.cell_image(base, conf, dest, spec.extra_files)


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
        t0 = time.monotonic()
        errf = open(spec.out_dir / "qemu.stderr", "w+b")
        with errf:
            # Its own session (a Ctrl-C is for the lab, which stops it),
            # and SIGKILLed should the lab itself die by SIGKILL.
            proc = subprocess.Popen(procs.die_with_parent(argv),
                                    stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=errf,
                                    start_new_session=True)
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
                       "timeout_s": limit, "timed_out": timed_out})
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
         dilated: dict[str, Any] | None = None) -> int:
    """Boot `build` with swap on `backend`, run `command` (busybox sh -c)
    on the guest console, print the console; the command's exit status
    (128+N for a signal; 255 when the guest failed to run it). The
    variant's kernel cmdline and sysfs/sysctl settings apply if given."""
    cache = cache or cache_root()
    out = out or sys.stdout
    stamp = time.strftime("%Y%m%d-%H%M%S")
    spec = CellSpec(
        cell_id=f"boot-{build.variant}-{backend.name}",
        build=build, backend=backend, guest=guest,
        argv=["/bin/sh", "-c", command], timeout_s=timeout_s,
        out_dir=cache / "boot" / f"{stamp}-{build.variant}-{backend.name}",
        cmdline=variant.cmdline if variant else "",
        sysfs=dict(variant.sysfs) if variant else {},
        sysctl=dict(variant.sysctl) if variant else {},
        interactive=True, expect_suffix=expect_suffix,
        workloads_dir=workloads_dir, trace=trace, dilation=dilated)
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
