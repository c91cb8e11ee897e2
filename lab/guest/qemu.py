"""The QEMU command line of one guest boot.

The console (ttyS0) goes to QEMU's stdout, which the runner reads, logs
and timestamps; the result travels on a separate virtio-serial port
(org.swaplab.result) whose host side is a file.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from lab.errors import LabError
from lab.guest.accel import QEMU, Accel
from lab.guest.backends import Setup

RESULT_PORT = "org.swaplab.result"
# rootfstype=ramfs: the initramfs root is ramfs, not tmpfs, so the
# agent's, busybox's and the workloads' pages are unevictable (6.5 MiB).
# On tmpfs the workload's pressure swapped them out, and their return
# added up to ~170 major faults per run that the workload did not cause
# (docs/guest.md, "The root file system").
BASE_CMDLINE = ("console=ttyS0", "panic=-1", "rdinit=/init",
                "rootfstype=ramfs")
OVMF_CODE = (Path("/usr/share/OVMF/OVMF_CODE_4M.fd"),
             Path("/usr/share/OVMF/OVMF_CODE.fd"))
OVMF_VARS = {"OVMF_CODE_4M.fd": "OVMF_VARS_4M.fd",
             "OVMF_CODE.fd": "OVMF_VARS.fd"}


class CannotBoot(LabError):
    """This kernel cannot boot with this firmware (a boot failure)."""


def has_efi_stub(bzimage: Path) -> bool:
    """Whether the bzImage is also a PE/COFF image (CONFIG_EFI_STUB)."""
    with open(bzimage, "rb") as f:
        head = f.read(4096)
    if head[:2] != b"MZ" or len(head) < 0x40:
        return False
    pe = int.from_bytes(head[0x3c:0x40], "little")
    return head[pe:pe + 4] == b"PE\0\0"


@dataclass
class Spec:
    name: str
    kernel: Path
    initrd: Path
    memory_mib: int
    vcpus: int
    accel: Accel
    backend: Setup
    result_file: Path
    firmware: str = "seabios"
    cmdline: list[str] = field(default_factory=list)   # added after base
    vars_dir: Path | None = None     # OVMF: where the VARS copy goes
    qemu: str = QEMU


def ovmf_args(vars_dir: Path) -> list[str]:
    """UEFI firmware: OVMF code read-only, a fresh VARS copy per boot.
    The kernel must have CONFIG_EFI_STUB for OVMF to start it."""
    for code in OVMF_CODE:
        if code.is_file():
            vars_src = code.with_name(OVMF_VARS[code.name])
            vars_dir.mkdir(parents=True, exist_ok=True)
            vars_copy = vars_dir / vars_src.name
            shutil.copyfile(vars_src, vars_copy)
            return ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,"
                              f"file={code}",
                    "-drive", f"if=pflash,format=raw,unit=1,"
                              f"file={vars_copy}"]
    raise LabError("firmware ovmf: no OVMF image found in /usr/share/OVMF "
                   "(install the Debian package ovmf)")


def kernel_cmdline(spec: Spec) -> str:
    words = list(BASE_CMDLINE) + list(spec.backend.cmdline)
    for part in spec.cmdline:
        words += part.split()
    return " ".join(w for w in words if w)


def command(spec: Spec) -> list[str]:
    machine = ",".join(["pc"] + spec.backend.machine)
    memory = ",".join([f"{spec.memory_mib + spec.backend.extra_ram_mib}M"]
                      + spec.backend.memory)
    argv = [spec.qemu, "-name", f"swaplab-{spec.name}",
            "-machine", machine, *spec.accel.args,
            "-smp", str(spec.vcpus), "-m", memory,
            "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot",
            "-chardev", "stdio,id=console,signal=off",
            "-serial", "chardev:console",
            "-device", "virtio-serial-pci,id=swaplabser",
            "-chardev", f"file,id=result,path={spec.result_file}",
            "-device", "virtserialport,bus=swaplabser.0,chardev=result,"
                       f"name={RESULT_PORT}"]
    if spec.firmware == "ovmf":
        if spec.kernel.is_file() and not has_efi_stub(spec.kernel):
            raise CannotBoot(f"firmware ovmf: {spec.kernel} has no EFI "
                             "stub (build it with CONFIG_EFI=y and "
                             "CONFIG_EFI_STUB=y)")
        argv += ovmf_args(spec.vars_dir or spec.result_file.parent)
    elif spec.firmware != "seabios":
        raise LabError(f"firmware {spec.firmware!r}: expected seabios or "
                       "ovmf")
    argv += ["-kernel", str(spec.kernel), "-initrd", str(spec.initrd),
             "-append", kernel_cmdline(spec)]
    return argv + list(spec.backend.args)
