"""What a boot's outcome was: "ok" or "failed" with a reason, and the
cell's result document. Reasons:

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
"""
from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from lab.guest import accel as accel_mod
from lab.guest import backends, textout
from lab.guest.cellspec import CellSpec
from lab.guest.frame import FrameError, parse
from lab.guest.guestlog import (MARK_WORKLOAD, OOM_RE, PANIC_RE, deltas,
                                log_flags, snapshot, strip_klog, swap_events,
                                swap_flags)

SCHEMAS = {"swapbench": "swapbench/4", "swaprace": "swaprace/1",
           "swaplab-memtest": "swaplab-memtest/1"}
# Programs that run the workload named after their "--" in the same
# process (exec): the output is the workload's.
WRAPPERS = ("swapcycle", "swaplab-dilate")
REASONS = ("panic", "hang", "agent-error", "integrity-error", "wrong-kernel",
           "wrong-firmware", "bad-frame", "oom", "boot-failure",
           "workload-error", "parse-failed", "device-mismatch", "lab-error")


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
    if spec.interactive or spec.output == "none":
        return None, "", payload
    if spec.output == "text":
        parsed = text_figures(spec, wl.get("stdout") or "")
        if not parsed.problems:
            return None, "", payload
        first = " | ".join(parsed.unparsed[:3])
        return "parse-failed", "; ".join(parsed.problems)[:400] + (
            f"; first unparsed lines: {first[:300]}" if first else
            "; the workload printed nothing"), payload
    try:
        doc = json.loads(wl.get("stdout") or "")
    except ValueError as exc:
        return "workload-error", f"workload stdout is not JSON: {exc}", \
            payload
    want = SCHEMAS.get(workload_program(spec.argv) or "")
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or (want and schema != want):
        return "workload-error", (f"workload stdout is not a "
                                  f"{want or 'JSON object'} document "
                                  f"(schema {schema!r})"), payload
    bad = mismatched_pages(doc)
    if bad:
        return "integrity-error", (f"the workload exited 0 but counted "
                                   f"{bad} mismatched pages"), payload
    return None, "", payload


def text_figures(spec: CellSpec, stdout: str) -> textout.Parsed:
    """The figures the workload's parse rules read in its output."""
    return textout.read_figures(spec.parse,
                                workload_program(spec.argv) or "workload",
                                stdout)


def mismatched_pages(doc: dict[str, Any]) -> int:
    """Pages a workload document counts as read back wrong, by the
    processes and by their fork children (swapbench's and swaprace's
    `total`): any makes the cell an integrity error, whatever the exit
    code said."""
    total = doc.get("total")
    if not isinstance(total, dict):
        return 0
    return sum(n for n in (total.get("mismatches"),
                           total.get("fork_mismatches"))
               if isinstance(n, int) and not isinstance(n, bool) and n > 0)


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
    res["swap_file_check"] = payload.get("swap_file_check")
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
        if spec.output == "text":
            parsed = text_figures(spec, out or "")
            wl["parsed"] = parsed.figures
            wl["unparsed"] = parsed.unparsed
            wl["stdout_text"] = (out or "")[-4000:]
        elif out:
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

