"""Runner verdicts, snapshot parsing and the acceleration choice, on a real
guest result (tests/data/guest-nvme.frame, recorded from a TCG boot of the
lab kernel swapping on NVMe with do_swap_page tracing)."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab import accel, backends, frame, runner
from lab.build import Build
from lab.errors import LabError
from lab.matrix import Backend, Guest

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = DATA / "guest-nvme.frame"
GUEST = Guest(256, 2, 512, "seabios", "")
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


def spec(tmp_path: Path, payload: dict | None = None, **kw) -> runner.CellSpec:
    release = (payload or {}).get("kernel", {}).get("release", "6.1.192")
    build = Build("dev", "000000000000", release, "linux-source-6.1", "",
                  "", [], "", "", 0.0, str(tmp_path))
    kw.setdefault("expect_suffix", release)
    cell = (payload or {}).get("cell", "c1")
    argv = kw.pop("argv", ["swaplab-memtest"])
    return runner.CellSpec(cell, build, NVME, GUEST, argv, tmp_path, **kw)


def verdict(tmp_path, payload=None, console="", timed_out=False, rc=0,
            err="", started=True, setup=None, **kw):
    data = frame.encode(payload) if payload is not None else b""
    s = spec(tmp_path, payload, **kw)
    return runner.classify(s, setup, data, console, timed_out, rc, err,
                           started)


def test_real_frame_is_ok(tmp_path, real):
    setup = backends.prepare(NVME, GUEST, tmp_path)
    reason, detail, payload = verdict(tmp_path, real, setup=setup)
    assert (reason, detail) == (None, "")
    res = runner.build_result(spec(tmp_path, real), setup,
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
    json.dumps(res)


def test_wrong_kernel(tmp_path, real):
    r, detail, _ = verdict(tmp_path, real, expect_suffix="-base-0123abcd")
    assert r == "wrong-kernel" and "-base-0123abcd" in detail


def test_other_cells_frame(tmp_path, real):
    p = dict(real, cell="somebody-else")
    s = spec(tmp_path, real)      # expects the real cell id
    r, _, _ = runner.classify(s, None, frame.encode(p), "", False, 0, "",
                              True)
    assert r == "bad-frame"


def test_agent_error(tmp_path, real):
    p = dict(real, status="error", errors=[
        {"step": "swap", "error": "swapon /dev/nvme0n1: Invalid argument"}])
    r, detail, _ = verdict(tmp_path, p)
    assert r == "agent-error" and "swapon" in detail


def test_device_mismatch(tmp_path, real):
    setup = backends.prepare(Backend("hdd", "rotational", {}), GUEST,
                             tmp_path)
    r, detail, _ = verdict(tmp_path, real, setup=setup)
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
    r, _, _ = verdict(tmp_path, p)
    assert r == reason


def test_oom_kill_by_signal(tmp_path, real):
    p = copy.deepcopy(real)
    p["workload"].update(exit_code=None, signal=9)
    p["kernel_log"]["text"] += "<3>Out of memory: Killed process 71\n"
    assert verdict(tmp_path, p)[0] == "oom"


def test_panic(tmp_path):
    r, detail, _ = verdict(tmp_path, console=PANIC_CONSOLE)
    assert r == "panic" and "sysrq triggered crash" in detail


def test_panic_before_agent_is_boot_failure(tmp_path):
    console = "VFS: Cannot open root device\nKernel panic - not syncing: " \
              "VFS: Unable to mount root fs\n"
    assert verdict(tmp_path, console=console, started=False)[0] == \
        "boot-failure"


def test_init_killed_is_agent_error(tmp_path):
    console = PANIC_CONSOLE.replace(
        "sysrq triggered crash",
        "Attempted to kill init! exitcode=0x00000006")
    assert verdict(tmp_path, console=console)[0] == "agent-error"


def test_oom_panic(tmp_path):
    console = "swaplab-agent: start\nOut of memory and no killable " \
              "processes...\nKernel panic - not syncing: System is " \
              "deadlocked on memory\n"
    assert verdict(tmp_path, console=console)[0] == "oom"


def test_hang(tmp_path):
    r, detail, _ = verdict(tmp_path, console="swaplab-agent: start\nx\n",
                           timed_out=True)
    assert r == "hang" and "before the workload" in detail


def test_qemu_failed_to_start(tmp_path):
    r, detail, _ = verdict(tmp_path, rc=1, started=False,
                           err="qemu: could not load kernel '/x'\n")
    assert r == "boot-failure" and "could not load kernel" in detail


@pytest.mark.parametrize("cut", [0, 100, -1])
def test_bad_frame(tmp_path, real, cut):
    data = frame.encode(real)
    data = data[:cut] if cut else b""
    s = spec(tmp_path, real)
    r, detail, _ = runner.classify(s, None, data, "swaplab-agent: start",
                                   False, 0, "", True)
    assert r == "bad-frame", detail


def test_swap_flags():
    f = runner.swap_flags
    assert f("Adding 524284k swap on /dev/sda.  Priority:-2 extents:1 "
             "across:524284k ") == []
    assert f("Adding 524284k swap on /dev/pmem0.  Priority:-2 extents:1 "
             "across:524284k SS") == ["SS"]
    assert f("Adding 4k swap on /dev/x.  Priority:5 extents:1 "
             "across:4k SSDsc") == ["SS", "D", "s", "c"]
    assert f(None) == []


def test_parse_proc_files():
    assert runner.parse_kv("pswpin 5\npswpout 7\n") == {"pswpin": 5,
                                                         "pswpout": 7}
    assert runner.parse_kv("MemTotal:  233 kB\nHugePages_Total: 0\n") == \
        {"MemTotal": 233, "HugePages_Total": 0}
    ds = runner.parse_diskstats(
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
    r, detail, _ = verdict(tmp_path, p)     # argv[0] is swaplab-memtest
    assert r == "workload-error" and "swaplab-memtest/1" in detail
    s = spec(tmp_path, p, argv=["swapbench", "--pattern", "seq"])
    r, _, _ = runner.classify(s, None, frame.encode(p), "", False, 0, "",
                              True)
    assert r is None


def test_images_removed_after_cell(tmp_path):
    d = tmp_path / "images" / "c1"
    d.mkdir(parents=True)
    for name in ("swap.img", "pmem.img", "initrd.img", "OVMF_VARS.fd"):
        (d / name).write_bytes(b"x")
    runner.finally_remove_images(d, keep=True)
    assert len(list(d.iterdir())) == 4
    runner.finally_remove_images(d, keep=False)
    assert list(d.iterdir()) == []
