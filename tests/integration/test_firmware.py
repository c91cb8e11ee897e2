"""Boot the `base` variant under each guest firmware and make the guest
prove which one started it: under OVMF (UEFI, through the kernel's EFI
stub) /sys/firmware/efi exists, under SeaBIOS it does not. A short
swapbench run on NVMe swap checks the guest works as usual; the boot to
the start of the workload is measured under both.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from lab.guest import cellspec
from lab.guest import qemu, runner
from lab.kernel.build import Build
from lab.spec.model import Backend, Guest

pytestmark = pytest.mark.slow

NVME = Backend("nvme", "nvme", {"mdts": 9})
# 1.2x RAM in one task, written then read back and verified: short, and
# it swaps both ways.
SWAPBENCH = ["swapbench", "--pattern", "seq", "--size-frac-mem", "1.2",
             "--passes", "2"]
TIMINGS: dict[str, dict[str, float]] = {}


def guest(firmware: str) -> Guest:
    return Guest(memory_mib=256, vcpus=2, swap_mib=512, firmware=firmware,
                 cmdline="")


@pytest.fixture(scope="module")
def lab_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("swaplab-firmware-cache")


@pytest.fixture(autouse=True)
def need_ovmf():
    if not any(p.is_file() for p in qemu.OVMF_CODE):
        pytest.skip("ovmf is not installed (Debian package ovmf)")


def spec(build: Build, firmware: str, out: Path, argv: list[str],
         timeout_s: int = 300) -> cellspec.CellSpec:
    return cellspec.CellSpec(
        cell_id=f"fw-{out.name}", build=build, backend=NVME,
        guest=guest(firmware), argv=argv, out_dir=out, timeout_s=timeout_s)


@pytest.mark.parametrize("firmware", ["seabios", "ovmf"])
def test_boot_proves_firmware(base_build, lab_cache, tmp_path, firmware):
    assert qemu.has_efi_stub(base_build.bzimage)
    s = spec(base_build, firmware, tmp_path / firmware, SWAPBENCH)
    res = runner.run_cell(s, lab_cache)
    r = res.result
    assert res.ok, f"{res.reason}: {res.detail} (log {res.console_log})"
    assert r["kernel"]["release"].endswith(s.identity)
    assert r["firmware"]["requested"] == firmware
    assert r["firmware"]["efi"] is (firmware == "ovmf")
    if firmware == "ovmf":
        assert r["firmware"]["efi_platform_size"] == "64"
        pflash = [a for a in r["qemu_argv"] if "if=pflash" in a]
        assert len(pflash) == 2
    else:
        assert r["firmware"]["efi_platform_size"] is None
        assert not any("pflash" in a for a in r["qemu_argv"])
    wl = r["workload"]["result"]
    assert wl["status"] == "ok" and wl["total"]["mismatches"] == 0
    delta = r["delta"]["vmstat"]
    assert delta.get("pswpout", 0) > 0 and delta.get("pswpin", 0) > 0
    t = r["timing"]
    TIMINGS[firmware] = {
        "host_to_first_output_s": t["host_to_first_output_s"],
        "host_to_agent_s": t["host_to_agent_s"],
        "host_to_workload_s": t["host_to_workload_s"],
        "guest_uptime_at_workload_s": t["guest_uptime_at_workload_s"],
        # before the kernel's clock starts: firmware, EFI stub, loading
        "before_kernel_s": round(t["host_to_workload_s"]
                                 - t["guest_uptime_at_workload_s"], 3),
        "workload_s": r["workload"]["wall_s"]}
    print(f"\n{firmware}: {TIMINGS[firmware]}")


def test_boot_times():
    if set(TIMINGS) != {"seabios", "ovmf"}:
        pytest.skip("a firmware boot did not run")
    sea, efi = TIMINGS["seabios"], TIMINGS["ovmf"]
    print(f"\nboot to workload start (host): seabios "
          f"{sea['host_to_workload_s']:.2f} s, ovmf "
          f"{efi['host_to_workload_s']:.2f} s (before the kernel: "
          f"{sea['before_kernel_s']:.2f} s vs {efi['before_kernel_s']:.2f} "
          f"s)")
    # The 5 s target is SeaBIOS's, on an idle host; allow for a busy one.
    assert sea["host_to_workload_s"] <= 10
    # OVMF's firmware phase is slower under TCG; it must still come up
    # well within the runner's boot allowance.
    assert efi["host_to_workload_s"] < cellspec.BOOT_ALLOWANCE_S / 2


def test_firmware_mismatch_is_reported(base_build, lab_cache, tmp_path,
                                       monkeypatch):
    """A cell that asks for OVMF but whose QEMU boots SeaBIOS (no pflash
    drives) fails as wrong-firmware, from what the real guest saw."""
    monkeypatch.setattr(qemu, "ovmf_args", lambda vars_dir: [])
    s = spec(base_build, "ovmf", tmp_path / "mismatch",
             ["swapbench", "--size", "8M", "--passes", "1"], timeout_s=60)
    res = runner.run_cell(s, lab_cache)
    assert res.reason == "wrong-firmware", f"{res.reason}: {res.detail}"
    assert "/sys/firmware/efi absent" in res.detail
    assert res.result["firmware"] == {"efi": False,
                                      "efi_platform_size": None,
                                      "requested": "ovmf"}
