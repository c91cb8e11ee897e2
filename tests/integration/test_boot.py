"""Boot the guest under QEMU (TCG here) with every swap backend, and make
it fail in every way the runner must recognise.

The kernel is the lab's `base` variant, built by the session fixture,
and every boot checks the guest's identity (-VARIANT-KEY).
"""
from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from lab import procs
from lab.guest import cellspec
from lab.guest import runner
from lab.kernel.build import Build, read_bzimage_release
from lab.spec.model import Backend, Guest


pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
MEMTEST = REPO / "workloads" / "agent" / "build" / "swaplab-memtest"


def bare_build(bzimage: Path, variant: str = "dev",
               key: str = "000000000000") -> Build:
    """Build(...) for a bzImage that is not a lab build."""
    return Build(variant=variant, key=key,
                 release=read_bzimage_release(bzimage),
                 tree="linux-source-6.1", tree_version="", commit="",
                 patches=[], config_sha256="", compiler="", seconds=0.0,
                 directory=str(bzimage.parent))


@pytest.fixture(scope="module")
def kernel(base_build: Build) -> tuple[Build, str | None]:
    """The lab's `base` variant, really built (tests/integration/conftest).
    None: check the guest's identity as -VARIANT-KEY."""
    return base_build, None


@pytest.fixture(scope="module")
def lab_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("swaplab-boot-cache")


@pytest.fixture(scope="module")
def guest() -> Guest:
    # small: the swap test writes 1.5x RAM once and reads it back
    return Guest(memory_mib=256, vcpus=2, swap_mib=512,
                 firmware="seabios", cmdline="")

BACKENDS = {
    "rotational": Backend("rotational", "rotational",
                          {"rotation_rate": 7200, "throttle_iops": 2000,
                           "throttle_bps": 200}),
    "nvme": Backend("nvme", "nvme", {"mdts": 9}),
    "dax-pmem": Backend("dax-pmem", "pmem", {"mode": "nvdimm"}),
    "ram-pmem": Backend("ram-pmem", "pmem", {"mode": "memmap"}),
}
TIMINGS: dict[str, dict] = {}


def make_spec(kernel, guest, out: Path, backend: str, argv: list[str],
              **kw) -> cellspec.CellSpec:
    build, expect = kernel
    kw.setdefault("expect_suffix", expect)
    return cellspec.CellSpec(
        cell_id=f"t-{out.name}", build=build, backend=BACKENDS[backend],
        guest=guest, argv=argv, out_dir=out, workloads_dir=None,
        extra_programs=[MEMTEST], **kw)


def qemu_running(name: str) -> bool:
    return bool(procs.pids_matching(b"qemu-system",
                                    f"swaplab-{name}".encode()))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_backend_swaps(kernel, guest, lab_cache, tmp_path, backend):
    spec = make_spec(kernel, guest, tmp_path / backend, backend,
                     ["swaplab-memtest", "--frac-mem", "1.5"],
                     timeout_s=400)
    res = runner.run_cell(spec, lab_cache)
    r = res.result
    assert res.ok, f"{res.reason}: {res.detail} (log {res.console_log})"
    dev = r["device"]
    assert dev["rotational"] == ("1" if backend == "rotational" else "0")
    if backend in ("dax-pmem", "ram-pmem"):
        assert dev["path"] == "/dev/pmem0" and dev["name"] == "pmem0"
        assert dev["queue"]["dax"] == "1"
    if backend == "dax-pmem":
        assert dev["pmem_namespace"] == "fsdax"
    if backend == "nvme":
        assert dev["queue"]["max_hw_sectors_kb"] == "2048"
    assert ("SS" in dev["swap_flags"]) == (backend != "rotational")
    assert "swap on " + dev["path"] in dev["swapon_line"]
    delta = r["delta"]["vmstat"]
    assert delta.get("pswpout", 0) > 0 and delta.get("pswpin", 0) > 0
    wl = r["workload"]["result"]
    assert wl["status"] == "ok" and wl["mismatched_pages"] == 0
    assert wl["pswpin"] > 0
    assert r["kernel"]["release"].endswith(spec.identity)
    # lab/guest/qemu.py: the initramfs root cannot be swapped
    assert r["rootfs"] == {"type": "ramfs"}
    assert "rootfstype=ramfs" in r["kernel"]["cmdline"].split()
    assert r["accel"]["name"] in ("tcg", "kvm")
    assert res.console_log.stat().st_size > 0
    TIMINGS[backend] = {
        "boot_to_workload_s": r["timing"]["host_to_workload_s"],
        "guest_uptime_at_workload_s":
            r["timing"]["guest_uptime_at_workload_s"],
        "workload_s": r["workload"]["wall_s"],
        "pswpout": delta["pswpout"], "pswpin": delta["pswpin"],
        "write_s": wl["write_s"], "verify_s": wl["verify_s"]}
    print(f"\n{backend}: {TIMINGS[backend]}")


def test_boot_time_target():
    if not TIMINGS:
        pytest.skip("no backend test ran")
    best = min(t["boot_to_workload_s"] for t in TIMINGS.values())
    print(f"\nboot to workload start (host): "
          f"{ {k: v['boot_to_workload_s'] for k, v in TIMINGS.items()} }")
    # the 5 s target holds on an idle host; allow for a busy one here
    assert best <= 10


def test_trace_do_swap_page(kernel, guest, lab_cache, tmp_path):
    spec = make_spec(kernel, guest, tmp_path / "trace", "nvme",
                     ["swaplab-memtest", "--frac-mem", "1.3"],
                     timeout_s=400, trace=True)
    res = runner.run_cell(spec, lab_cache)
    assert res.ok, f"{res.reason}: {res.detail}"
    tr = res.result["trace"]
    assert "error" not in tr, tr
    assert tr["count"] > 0 and tr["percentiles_ns"]["p50"] > 0
    assert sum(c for _, c in tr["histogram"]) == tr["count"]
    # every swap-in fault went through do_swap_page
    assert tr["count"] >= res.result["delta"]["vmstat"]["pswpin"] // 8


def test_panic(kernel, guest, lab_cache, tmp_path):
    spec = make_spec(kernel, guest, tmp_path / "panic", "nvme",
                     ["/bin/sh", "-c", "echo c > /proc/sysrq-trigger"],
                     timeout_s=60)
    t0 = time.monotonic()
    res = runner.run_cell(spec, lab_cache)
    assert res.reason == "panic", res.detail
    assert "sysrq" in res.detail.lower() or "Fatal" in res.detail \
        or "panic" in res.detail.lower()
    assert time.monotonic() - t0 < 60
    assert "Kernel panic" in res.console_log.read_text()
    assert res.result["console_flags"]["panic"]["count"] >= 1
    assert not qemu_running(spec.cell_id)


def test_hang_killed_at_timeout(kernel, guest, lab_cache, tmp_path):
    spec = make_spec(kernel, guest, tmp_path / "hang", "nvme",
                     ["/bin/true"], timeout_s=5, boot_allowance_s=20,
                     test="hang-agent")
    t0 = time.monotonic()
    res = runner.run_cell(spec, lab_cache)
    took = time.monotonic() - t0
    assert res.reason == "hang", res.detail
    assert 25 <= took < 60
    assert res.result["timing"]["timed_out"] is True
    assert "agent hangs" in res.console_log.read_text()
    assert not qemu_running(spec.cell_id)


def test_workload_overrun_in_guest(kernel, guest, lab_cache, tmp_path):
    spec = make_spec(kernel, guest, tmp_path / "overrun", "nvme",
                     ["/bin/sleep", "600"], timeout_s=3)
    res = runner.run_cell(spec, lab_cache)
    assert res.reason == "hang", res.detail
    assert res.result["workload"]["timed_out"] is True


def test_oom_kill_in_guest(kernel, guest, lab_cache, tmp_path):
    """A workload that wants more than RAM and swap have left is killed
    by the guest's OOM killer: a failed cell named oom, with the killer's
    report in its log, and QEMU gone."""
    # 3.1 x MemTotal: below RAM + swap (256 + 512 MiB), so the
    # kernel's overcommit check lets the mapping through, and above what
    # is left of them once the kernel has its share
    spec = make_spec(kernel, guest, tmp_path / "oom", "nvme",
                     ["swaplab-memtest", "--frac-mem", "3.1"], timeout_s=300)
    res = runner.run_cell(spec, lab_cache)
    assert res.reason == "oom", f"{res.reason}: {res.detail}"
    assert res.result["kernel_log_flags"]["oom"]["count"] >= 1
    assert "Out of memory" in res.console_log.read_text()
    assert not qemu_running(spec.cell_id)


def test_corrupt_frame(kernel, guest, lab_cache, tmp_path):
    spec = make_spec(kernel, guest, tmp_path / "corrupt", "nvme",
                     ["swaplab-memtest", "--mib", "8"], timeout_s=60,
                     test="corrupt-frame")
    res = runner.run_cell(spec, lab_cache)
    assert res.reason == "bad-frame", res.detail
    assert "checksum" in res.detail
    assert "frame corrupted" in res.console_log.read_text()


def test_integrity_error(kernel, guest, lab_cache, tmp_path):
    spec = make_spec(kernel, guest, tmp_path / "integrity", "nvme",
                     ["swaplab-memtest", "--mib", "8", "--corrupt"],
                     timeout_s=60)
    res = runner.run_cell(spec, lab_cache)
    assert res.reason == "integrity-error", res.detail


def test_agent_error_bad_setting(kernel, guest, lab_cache, tmp_path):
    spec = make_spec(kernel, guest, tmp_path / "setting", "nvme",
                     ["swaplab-memtest", "--mib", "8"], timeout_s=60,
                     sysfs={"kernel/mm/transparent_hugepage/enabled":
                            "sometimes"},
                     sysctl={"vm.page-cluster": "0"})
    res = runner.run_cell(spec, lab_cache)
    assert res.reason == "agent-error", res.detail
    assert "transparent_hugepage/enabled" in res.detail
    settings = {s["name"]: s for s in res.result["settings"]}
    assert settings["vm.page-cluster"]["ok"] is True
    assert settings["vm.page-cluster"]["readback"] == "0"
    assert settings["kernel/mm/transparent_hugepage/enabled"]["ok"] is False


def test_wrong_kernel(kernel, guest, lab_cache, tmp_path):
    build, _ = kernel
    fake = bare_build(build.bzimage, variant="thp-stage2",
                      key="0123456789ab")
    spec = make_spec((fake, None), guest, tmp_path / "wrong", "nvme",
                     ["swaplab-memtest", "--mib", "8"], timeout_s=60)
    res = runner.run_cell(spec, lab_cache)
    assert res.reason == "wrong-kernel", res.detail
    assert "-thp-stage2-0123456789ab" in res.detail


def test_boot_interactive(kernel, guest, lab_cache):
    build, expect = kernel
    out = io.StringIO()
    status = runner.boot(build, BACKENDS["nvme"], guest,
                         "cat /proc/swaps; uname -r; exit 7",
                         cache=lab_cache, timeout_s=60, out=out,
                         expect_suffix=expect, workloads_dir=None)
    text = out.getvalue()
    assert status == 7
    assert "/dev/nvme0n1" in text and build.release in text
