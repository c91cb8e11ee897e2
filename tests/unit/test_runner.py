"""Runner verdicts, snapshot parsing and the acceleration choice, on real
guest results: tests/data/guest-nvme.frame and guest-nvme-ovmf.frame, each
recorded from a TCG boot of the lab's `base` kernel swapping on NVMe
(swaplab-memtest --frac-mem 1.2) with do_swap_page tracing, the first
under SeaBIOS, the second under OVMF (UEFI)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab.errors import LabError
from lab.guest import (accel, backends, cellspec, frame, guestlog, runner,
                       verdict)
from lab.kernel.build import Build
from lab.spec.model import Backend, Guest

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = DATA / "guest-nvme.frame"
REAL_OVMF = DATA / "guest-nvme-ovmf.frame"
GUEST = Guest(256, 2, 512, "seabios", "")
GUEST_OVMF = Guest(256, 2, 512, "ovmf", "")
NVME = Backend("nvme", "nvme", {"mdts": 9})
PANIC_CONSOLE = """Run /init as init process
swaplab-agent: start uptime=3.1
swaplab-agent: workload start uptime=3.2
sysrq: Trigger a crash
Kernel panic - not syncing: sysrq triggered crash
CPU: 1 PID: 70 Comm: sh Not tainted 6.1.192 #1
"""


@pytest.fixture(scope="module")
def real() -> dict:
    return frame.parse(REAL.read_bytes())


@pytest.fixture(scope="module")
def real_ovmf() -> dict:
    return frame.parse(REAL_OVMF.read_bytes())


def spec(tmp_path: Path, payload: dict | None = None, **kw) -> cellspec.CellSpec:
    release = (payload or {}).get("kernel", {}).get("release", "6.1.192")
    build = Build("dev", "000000000000", release, "linux-source-6.1", "",
                  "", [], "", "", 0.0, str(tmp_path))
    kw.setdefault("expect_suffix", release)
    cell = (payload or {}).get("cell", "c1")
    argv = kw.pop("argv", ["swaplab-memtest"])
    guest = kw.pop("guest", GUEST)
    return cellspec.CellSpec(cell, build, NVME, guest, argv, tmp_path, **kw)


def judged(tmp_path, payload=None, console="", timed_out=False, rc=0,
            err="", started=True, setup=None, **kw):
    data = frame.encode(payload) if payload is not None else b""
    s = spec(tmp_path, payload, **kw)
    return verdict.classify(s, setup, data, console, timed_out, rc, err,
                           started)


def test_real_frame_is_ok(tmp_path, real):
    setup = backends.prepare(NVME, GUEST, tmp_path)
    reason, detail, payload = judged(tmp_path, real, setup=setup)
    assert (reason, detail) == (None, "")
    res = verdict.build_result(spec(tmp_path, real), setup,
                              accel.tcg("test"), None, "", payload, "",
                              {}, ["qemu"])
    assert res["outcome"] == "ok"
    assert res["device"]["swap_flags"] == ["SS"]
    assert res["device"]["rotational"] == "0"
    assert res["delta"]["vmstat"]["pswpout"] > 0
    assert res["delta"]["vmstat"]["pswpin"] > 0
    assert res["delta"]["diskstats"]["writes"] > 0
    assert res["workload"]["result"]["mismatched_pages"] == 0
    assert res["before"]["meminfo_kb"]["MemTotal"] > 0
    assert res["trace"]["count"] > 0
    assert res["accel"]["name"] == "tcg"
    assert res["firmware"] == {"efi": False, "efi_platform_size": None,
                               "requested": "seabios"}
    json.dumps(res)


def test_real_ovmf_frame_is_ok(tmp_path, real_ovmf):
    setup = backends.prepare(NVME, GUEST_OVMF, tmp_path)
    reason, detail, payload = judged(tmp_path, real_ovmf, setup=setup,
                                      guest=GUEST_OVMF)
    assert (reason, detail) == (None, "")
    res = verdict.build_result(spec(tmp_path, real_ovmf, guest=GUEST_OVMF),
                              setup, accel.tcg("test"), None, "", payload,
                              "", {}, ["qemu"])
    assert res["outcome"] == "ok"
    assert res["guest"]["firmware"] == "ovmf"
    assert res["firmware"] == {"efi": True, "efi_platform_size": "64",
                               "requested": "ovmf"}
    assert res["delta"]["vmstat"]["pswpin"] > 0
    assert "efi: EFI v2.70 by EDK II" in payload["kernel_log"]["text"]


@pytest.mark.parametrize("frame_name,requested,saw", [
    ("guest-nvme.frame", "ovmf", "absent (not a UEFI boot)"),
    ("guest-nvme-ovmf.frame", "seabios", "present (a UEFI boot)"),
])
def test_wrong_firmware(tmp_path, frame_name, requested, saw):
    payload = frame.parse((DATA / frame_name).read_bytes())
    guest = Guest(256, 2, 512, requested, "")
    r, detail, _ = judged(tmp_path, payload, guest=guest)
    assert r == "wrong-firmware"
    assert detail == (f"firmware {requested} requested, but the guest saw "
                      f"/sys/firmware/efi {saw}")
    res = verdict.build_result(spec(tmp_path, payload, guest=guest), None,
                              None, r, detail, payload, "", {}, [])
    assert res["outcome"] == "failed" and res["reason"] == "wrong-firmware"
    assert res["firmware"]["requested"] == requested
    assert res["firmware"]["efi"] is (requested == "seabios")


@pytest.mark.parametrize("facts", [None, {}, {"efi": None}, {"efi": "1"}])
def test_firmware_unreported_is_wrong_firmware(tmp_path, real, facts):
    """A guest that does not say (an agent before version 2, no sysfs)
    has not proven its firmware."""
    p = copy.deepcopy(real)
    if facts is None:
        del p["firmware"]
    else:
        p["firmware"] = facts
    r, detail, _ = judged(tmp_path, p)
    assert r == "wrong-firmware"
    assert "did not report whether /sys/firmware/efi exists" in detail


def test_firmware_checked_after_identity_and_agent(tmp_path, real_ovmf):
    r, _, _ = judged(tmp_path, real_ovmf, expect_suffix="-base-0123abcd")
    assert r == "wrong-kernel"
    p = dict(real_ovmf, status="error", errors=[
        {"step": "mount", "error": "sysfs on /sys: No such device"}])
    assert judged(tmp_path, p)[0] == "agent-error"


def test_wrong_kernel(tmp_path, real):
    r, detail, _ = judged(tmp_path, real, expect_suffix="-base-0123abcd")
    assert r == "wrong-kernel" and "-base-0123abcd" in detail


def test_other_cells_frame(tmp_path, real):
    p = dict(real, cell="somebody-else")
    s = spec(tmp_path, real)      # expects the real cell id
    r, _, _ = verdict.classify(s, None, frame.encode(p), "", False, 0, "",
                              True)
    assert r == "bad-frame"


def test_agent_error(tmp_path, real):
    p = dict(real, status="error", errors=[
        {"step": "swap", "error": "swapon /dev/nvme0n1: Invalid argument"}])
    r, detail, _ = judged(tmp_path, p)
    assert r == "agent-error" and "swapon" in detail


def test_device_mismatch(tmp_path, real):
    setup = backends.prepare(Backend("hdd", "rotational", {}), GUEST,
                             tmp_path)
    r, detail, _ = judged(tmp_path, real, setup=setup)
    assert r == "device-mismatch" and "rotational" in detail


@pytest.mark.parametrize("change,reason", [
    ({"exit_code": 3, "stderr": "page 7 mismatch"}, "integrity-error"),
    ({"exit_code": 5}, "oom"),
    ({"exit_code": 1}, "workload-error"),
    ({"exit_code": None, "signal": 11}, "workload-error"),
    ({"timed_out": True, "exit_code": None, "signal": 9}, "hang"),
    ({"stdout": "not json"}, "workload-error"),
])
def test_workload_outcomes(tmp_path, real, change, reason):
    p = copy.deepcopy(real)
    p["workload"].update(change)
    r, _, _ = judged(tmp_path, p)
    assert r == reason


def test_oom_kill_by_signal(tmp_path, real):
    p = copy.deepcopy(real)
    p["workload"].update(exit_code=None, signal=9)
    p["kernel_log"]["text"] += "<3>Out of memory: Killed process 71\n"
    assert judged(tmp_path, p)[0] == "oom"


def test_panic(tmp_path):
    r, detail, _ = judged(tmp_path, console=PANIC_CONSOLE)
    assert r == "panic" and "sysrq triggered crash" in detail


def test_panic_before_agent_is_boot_failure(tmp_path):
    console = "VFS: Cannot open root device\nKernel panic - not syncing: " \
              "VFS: Unable to mount root fs\n"
    assert judged(tmp_path, console=console, started=False)[0] == \
        "boot-failure"


def test_init_killed_is_agent_error(tmp_path):
    console = PANIC_CONSOLE.replace(
        "sysrq triggered crash",
        "Attempted to kill init! exitcode=0x00000006")
    assert judged(tmp_path, console=console)[0] == "agent-error"


def test_oom_panic(tmp_path):
    console = "swaplab-agent: start\nOut of memory and no killable " \
              "processes...\nKernel panic - not syncing: System is " \
              "deadlocked on memory\n"
    assert judged(tmp_path, console=console)[0] == "oom"


def test_hang(tmp_path):
    r, detail, _ = judged(tmp_path, console="swaplab-agent: start\nx\n",
                           timed_out=True)
    assert r == "hang" and "before the workload" in detail


def test_qemu_failed_to_start(tmp_path):
    r, detail, _ = judged(tmp_path, rc=1, started=False,
                           err="qemu: could not load kernel '/x'\n")
    assert r == "boot-failure" and "could not load kernel" in detail


@pytest.mark.parametrize("cut", [0, 100, -1])
def test_bad_frame(tmp_path, real, cut):
    data = frame.encode(real)
    data = data[:cut] if cut else b""
    s = spec(tmp_path, real)
    r, detail, _ = verdict.classify(s, None, data, "swaplab-agent: start",
                                   False, 0, "", True)
    assert r == "bad-frame", detail


def test_swap_flags():
    f = guestlog.swap_flags
    assert f("Adding 524284k swap on /dev/sda.  Priority:-2 extents:1 "
             "across:524284k ") == []
    assert f("Adding 524284k swap on /dev/pmem0.  Priority:-2 extents:1 "
             "across:524284k SS") == ["SS"]
    assert f("Adding 4k swap on /dev/x.  Priority:5 extents:1 "
             "across:4k SSDsc") == ["SS", "D", "s", "c"]
    assert f(None) == []


def test_parse_proc_files():
    assert guestlog.parse_kv("pswpin 5\npswpout 7\n") == {"pswpin": 5,
                                                         "pswpout": 7}
    assert guestlog.parse_kv("MemTotal:  233 kB\nHugePages_Total: 0\n") == \
        {"MemTotal": 233, "HugePages_Total": 0}
    ds = guestlog.parse_diskstats(
        " 259  0 nvme0n1 1 2 3 4 5 6 7 8 0 9 10 0 0 0 0 0 0\n")
    assert ds["nvme0n1"][:4] == [1, 2, 3, 4]


def test_config_items_and_spec(tmp_path):
    s = spec(tmp_path)
    s.sysfs = {"kernel/mm/transparent_hugepage/enabled": "always"}
    s.sysctl = {"vm.page-cluster": "0"}
    s.trace = True
    setup = backends.prepare(NVME, GUEST, tmp_path)
    items = runner.config_items(s, setup)
    assert ("device", "/dev/nvme0n1") in items
    assert ("swap_kib", str(512 * 1024)) in items
    assert ("sysfs.kernel/mm/transparent_hugepage/enabled",
            "always") in items
    assert ("sysctl.vm.page-cluster", "0") in items
    assert ("trace", "1") in items
    pm = backends.prepare(Backend("p", "pmem", {"mode": "nvdimm"}), GUEST,
                          tmp_path)
    assert ("pmem_fsdax", "1") in runner.config_items(s, pm)
    assert [v for k, v in items if k == "arg"] == ["swaplab-memtest"]


def test_run_cell_never_raises(tmp_path):
    s = spec(tmp_path / "out")
    s.build = Build("dev", "k", "r", "", "", "", [], "", "", 0.0,
                    str(tmp_path / "nowhere"))
    res = runner.run_cell(s, tmp_path / "cache", acc=accel.tcg("t"))
    assert res.outcome == "failed" and res.reason == "lab-error"
    assert json.loads((tmp_path / "out" / "result.json").read_text())[
        "reason"] == "lab-error"


def test_accel_forced_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SWAPLAB_ACCEL", "tcg")
    a = accel.detect(tmp_path, lambda: pytest.fail("no probe when forced"))
    assert a.name == "tcg" and a.args == ("-accel", "tcg,thread=multi")
    monkeypatch.setenv("SWAPLAB_ACCEL", "bogus")
    with pytest.raises(LabError):
        accel.detect(tmp_path, lambda: None)
    monkeypatch.delenv("SWAPLAB_ACCEL")
    monkeypatch.setattr(accel, "kvm_usable", lambda: None)
    calls = []

    def fake_probe(kernel, initrd, qemu="q", timeout_s=1):
        calls.append(kernel)
        return False, "KVM probe boot did not reach the agent"
    monkeypatch.setattr(accel, "probe", fake_probe)
    images = lambda: (Path("/k"), Path("/i"))   # noqa: E731
    first = accel.detect(tmp_path, images)
    second = accel.detect(tmp_path, images)
    assert first.name == second.name == "tcg"
    assert len(calls) == 1 and second.reason.endswith("(cached)")
    assert list((tmp_path / "state").glob("accel-*.json"))


def test_accel_without_dev_kvm(tmp_path, monkeypatch):
    monkeypatch.delenv("SWAPLAB_ACCEL", raising=False)
    monkeypatch.setattr(accel, "kvm_usable", lambda: "no /dev/kvm")
    a = accel.detect(tmp_path, lambda: pytest.fail("no probe"))
    assert a.name == "tcg" and a.reason == "no /dev/kvm"


def test_workload_schema_checked(tmp_path, real):
    p = copy.deepcopy(real)
    p["workload"]["stdout"] = '{"schema": "swapbench/1"}'
    r, detail, _ = judged(tmp_path, p)     # argv[0] is swaplab-memtest
    assert r == "workload-error" and "swaplab-memtest/1" in detail
    s = spec(tmp_path, p, argv=["swapbench", "--pattern", "seq"])
    r, detail, _ = verdict.classify(s, None, frame.encode(p), "", False, 0,
                                   "", True)
    assert r == "workload-error" and "swapbench/4" in detail
    p["workload"]["stdout"] = '{"schema": "swapbench/4"}'
    for argv in (["swapbench", "--pattern", "seq"],
                 ["swapcycle", "--interval-ms", "5", "--", "swapbench"]):
        s = spec(tmp_path, p, argv=argv)
        r, _, _ = verdict.classify(s, None, frame.encode(p), "", False, 0,
                                  "", True)
        assert r is None, argv
    assert verdict.workload_program(["swapcycle", "--", "swaplab-dilate",
                                    "--kmsg", "--", "swapbench"]) == \
        "swapbench"


def test_images_removed_after_cell(tmp_path):
    d = tmp_path / "images" / "c1"
    d.mkdir(parents=True)
    for name in ("swap.img", "pmem.img", "initrd.img", "OVMF_VARS.fd"):
        (d / name).write_bytes(b"x")
    runner.finally_remove_images(d, keep=True)
    assert len(list(d.iterdir())) == 4
    runner.finally_remove_images(d, keep=False)
    assert list(d.iterdir()) == []


# The boot banners of the debug kernel (everything-debug: KASAN, lockdep,
# PROVE_RCU, DEBUG_VM) and frames of lockdep's and KASAN's own functions
# in a call trace, verbatim from its guest logs: none is a complaint.
DEBUG_BOOT = """\
Linux version 6.1.192-everything-debug-9979bbc8d6c6 (swaplab@swaplab) (gcc (Debian 12.2.0-14+deb12u1) 12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP 2017-03-22
kasan: KernelAddressSanitizer initialized
Running RCU self tests
rcu: Hierarchical RCU implementation.
rcu: \tRCU lockdep checking is enabled.
Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
... MAX_LOCKDEP_SUBCLASSES:  8
... MAX_LOCKDEP_KEYS:        8192
... MAX_LOCKDEP_ENTRIES:     32768
... MAX_LOCKDEP_CHAINS:      65536
 memory used by lock dependency info: 6493 kB
hrtimer: interrupt took 47921700 ns
 ? lockdep_hardirqs_on_prepare+0x1ce/0x1ed
 kasan_save_stack+0x2e/0x4c
 ? print_usage_bug+0x26f/0x26f
Adding 524284k swap on /dev/nvme0n1.  Priority:-2 extents:1 across:524284k SS
"""


def test_debug_kernel_banners_are_no_complaints():
    assert guestlog.log_flags(DEBUG_BOOT) == {}


# First lines of the reports the debug build exists to catch, in 6.1's
# formats (kernel/locking/lockdep.c, mm/kasan/report.c, lib/bug.c,
# kernel/sched/core.c, lib/list_debug.c, kernel/rcu/tree_stall.h).
@pytest.mark.parametrize("line,flags", [
    ("WARNING: possible circular locking dependency detected",
     {"warn", "lockdep"}),
    ("WARNING: possible recursive locking detected", {"warn", "lockdep"}),
    ("WARNING: inconsistent lock state", {"warn", "lockdep"}),
    ("WARNING: bad unlock balance detected!", {"warn"}),
    ("INFO: lockdep is turned off.", {"lockdep"}),
    ("turning off the locking correctness validator.", {"lockdep"}),
    ("BUG: MAX_LOCKDEP_ENTRIES too low!", {"bug"}),
    ("BUG: KASAN: use-after-free in swap_vma_readahead_rfc+0x3c1/0x6a0",
     {"bug", "kasan"}),
    ("BUG: KASAN: slab-out-of-bounds in add_to_swap+0x88/0xf0",
     {"bug", "kasan"}),
    ("kernel BUG at mm/swap_state.c:182!", {"bug"}),
    ("invalid opcode: 0000 [#1] PREEMPT SMP KASAN NOPTI",
     {"oops", "kasan"}),
    ("BUG: sleeping function called from invalid context at "
     "mm/memory.c:5691", {"bug"}),
    ("BUG: Bad page state in process swapbench  pfn:0b6e0", {"bug"}),
    ("WARNING: CPU: 1 PID: 74 at lib/list_debug.c:59 "
     "__list_del_entry_valid+0x9a/0xf0", {"warn"}),
    ("rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", {"lockup"}),
    # the old thp-swapin wrote a THP over a swap file's neighbours
    # (swapalign on nvme-swapfile, 2026-12-06)
    ("EXT4-fs error (device nvme0n1): ext4_get_branch:178: inode #65690: "
     "block 3535587594: comm init: invalid block", {"fs_error"}),
])
def test_debug_reports_are_flagged(line, flags):
    text = DEBUG_BOOT + line + "\nCall Trace:\n <TASK>\n"
    assert set(guestlog.log_flags(text)) == flags


# Lines from real guest logs: thp-swapin on the nvme-faulty backend
# (faults-thp and swapoff-load cells, runs 20261203-130945-faults and
# 20261203-131454-faults); cycle 2 is edited into a failed swapoff.
FAULTY_KLOG = """\
nvme0n1: I/O Cmd(0x1) @ LBA 151552, 2560 blocks, I/O Error (sct 0x2 / sc 0x80)
critical medium error, dev nvme0n1, sector 151552 op 0x1:(WRITE) flags \
0x2004000 phys_seg 1 prio class 2
Write-error on swap-device (259:0:154112)
nvme0n1: I/O Cmd(0x2) @ LBA 555520, 64 blocks, I/O Error (sct 0x2 / sc 0x81)
critical medium error, dev nvme0n1, sector 555520 op 0x0:(READ) flags 0x0 \
phys_seg 8 prio class 2
Read-error on swap-device (259:0:555520)
swapcycle: start dev=/dev/nvme0n1 interval_ms=2000 max_cycles=0 \
push_bytes=175994470 pid=39
swapcycle: cycle=1 swapoff=ok off_ms=885.977 swapon=ok push_ms=6487.289
swapcycle: cycle=2 swapoff=ENOMEM off_ms=340.356 swapon=skipped \
push_ms=4409.021
"""


def test_swap_events_from_a_faulty_device():
    ev = guestlog.swap_events(FAULTY_KLOG)
    assert (ev["read_errors"], ev["write_errors"], ev["io_errors"]) == \
        (1, 1, 2)
    assert ev["swapcycle"] == [
        {"cycle": 1, "swapoff": "ok", "off_ms": 885.977, "swapon": "ok",
         "push_ms": 6487.289},
        {"cycle": 2, "swapoff": "ENOMEM", "off_ms": 340.356,
         "swapon": "skipped", "push_ms": 4409.021}]
    # a device error is no kernel complaint: the cell is judged by its
    # data and the kernel's own warnings
    assert guestlog.log_flags(FAULTY_KLOG) == {}
    assert guestlog.swap_events("") == {"read_errors": 0, "write_errors": 0,
                                      "io_errors": 0, "swapcycle": []}


def test_concurrent_boots_have_their_own_images(tmp_path, monkeypatch,
                                                capsys):
    """Two `lab boot`s of one variant and backend at once: each process
    gets its own image directory (swap.img) and log directory."""
    seen = []

    def fake_run(spec, cache, echo=None):
        seen.append(spec)
        return cellspec.CellResult(spec.cell_id, "failed", "lab-error",
                                   "not booted", {}, spec.out_dir)
    monkeypatch.setattr(runner, "run_cell", fake_run)
    build = Build("base", "000000000000", "6.1.192-base-000000000000",
                  "linux-source-6.1", "", "", [], "", "", 0.0, str(tmp_path))
    for pid in (101, 102):
        monkeypatch.setattr(runner.os, "getpid", lambda pid=pid: pid)
        assert runner.boot(build, NVME, GUEST, "true", cache=tmp_path) == 255
    assert [s.cell_id for s in seen] == ["boot-base-nvme-101",
                                         "boot-base-nvme-102"]
    assert seen[0].out_dir != seen[1].out_dir
    assert capsys.readouterr().err.count("lab boot: failed") == 2
