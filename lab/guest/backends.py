"""Swap backends: the disk image, the QEMU arguments and what the guest
must report for each backend kind.

- rotational: virtio-scsi + scsi-hd rotation_rate=N (guest: /dev/sda,
  rotational=1). The disk is a chain of QEMU block nodes: a *source*
  (today a sparse raw file) under an optional throttle filter that stands
  in for a device model. A later device model is another `BlockSource`
  (an NBD export from nbdkit, say) put under the same frontend.
- nvme: QEMU's NVMe controller with mdts (default 9: a 2 MiB THP is one
  IO); guest /dev/nvme0n1, rotational=0, max_hw_sectors_kb = 4 KiB << mdts.
- pmem, mode nvdimm: an NVDIMM backed by a shared file (machine
  nvdimm=on, ACPI NFIT); mode memmap: RAM-simulated pmem, the seeds'
  setup (guest RAM grows by the swap size, cmdline memmap=SIZE!OFFSET,
  X86_PMEM_LEGACY). Both give /dev/pmem0, rotational=0, dax=1 (the
  agent turns the NVDIMM's raw namespace into fsdax first).
- zram: compressed RAM in the guest (kernels/zram.config), no QEMU
  device; the agent sets compressor and size, guest /dev/zram0,
  rotational=0, a synchronous device like pmem.

Images live in the cache, are sparse and are recreated for every cell.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lab.errors import LabError
from lab.spec.model import Backend, Guest

NODE = "swapdisk"          # block node name of the device's top node
MIB = 1 << 20


class BlockSource(Protocol):
    """Where the swap disk's blocks come from (bottom of the node chain)."""

    def prepare(self) -> None: ...
    def blockdev(self) -> dict[str, Any]: ...
    def describe(self) -> dict[str, Any]: ...


def direct_io_ok(directory: Path) -> bool:
    """Whether files in `directory` can be opened with O_DIRECT."""
    probe = directory / ".odirect-probe"
    try:
        fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(fd)
    probe.unlink(missing_ok=True)
    return True


@dataclass
class FileSource:
    """A sparse raw image file, recreated by prepare()."""
    path: Path
    size_mib: int
    direct: bool | None = None     # None: O_DIRECT when the host FS can

    def prepare(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        with open(self.path, "wb") as f:
            f.truncate(self.size_mib * MIB)
        if self.direct is None:
            self.direct = direct_io_ok(self.path.parent)

    def blockdev(self) -> dict[str, Any]:
        direct = bool(self.direct)
        return {"driver": "raw",
                "file": {"driver": "file", "filename": str(self.path),
                         "aio": "native" if direct else "threads",
                         "cache": {"direct": direct, "no-flush": False}}}

    def describe(self) -> dict[str, Any]:
        return {"type": "file", "path": str(self.path),
                "size_mib": self.size_mib, "direct_io": bool(self.direct)}


@dataclass
class Setup:
    """One cell's backend, ready for QEMU."""
    backend: Backend
    device: str                          # the swap device in the guest
    args: list[str]                      # QEMU arguments
    machine: list[str] = field(default_factory=list)   # -machine opts
    memory: list[str] = field(default_factory=list)    # -m suboptions
    extra_ram_mib: int = 0               # guest RAM added (memmap pmem)
    cmdline: list[str] = field(default_factory=list)
    expect: dict[str, str] = field(default_factory=dict)
    agent: list[tuple[str, str]] = field(default_factory=list)  # config
    source: dict[str, Any] | None = None
    image: Path | None = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.backend.name, "kind": self.backend.kind,
                "params": dict(self.backend.params), "device": self.device,
                "expect": dict(self.expect), "source": self.source,
                "agent_config": [list(kv) for kv in self.agent],
                "qemu_args": list(self.args), "machine": list(self.machine),
                "memory": list(self.memory), "cmdline": list(self.cmdline),
                "extra_ram_mib": self.extra_ram_mib}

    def check(self, device: dict[str, Any] | None) -> list[str]:
        """What the guest saw that differs from what this backend is."""
        if not device:
            return ["the guest reported no swap device"]
        problems = swap_file_problems(self.expect.get("swap_file"), device)
        queue = device.get("queue") or {}
        for key, want in self.expect.items():
            if key == "swap_file":
                continue
            have = device.get("name") if key == "name" else queue.get(key)
            if have is None:
                problems.append(f"{key}: not reported, expected {want}")
            elif str(have) != want:
                problems.append(f"{key}: guest saw {have}, backend "
                                f"{self.backend.name} expects {want}")
        return problems


def swap_file_problems(layout: str | None,
                       device: dict[str, Any]) -> list[str]:
    """What the guest showed that differs from swap on a file (`layout`)
    or, with no layout, from swap on the device itself: the kernel's
    swap list names the area's type, and a fragmented file must have
    more than one extent."""
    swaps = str(device.get("proc_swaps") or "").splitlines()[1:]
    kinds = [f[1] for f in (line.split() for line in swaps) if len(f) > 1]
    want = "file" if layout else "partition"
    if kinds != [want]:
        return [f"swap areas {kinds or 'none'} in /proc/swaps, expected "
                f"one {want}"]
    if not layout:
        return []
    info = device.get("swap_file") or {}
    if info.get("fragmented") != (layout == "fragmented"):
        return [f"swap file fragmented={info.get('fragmented')}, expected "
                f"a {layout} one"]
    extents = swap_extents(device.get("swapon_line"))
    if layout == "fragmented" and (extents or 0) < 2:
        return [f"the fragmented swap file has {extents} extents"]
    return []


def swap_extents(line: str | None) -> int | None:
    """N in the kernel's "Adding ...k swap on X.  Priority:P extents:N"."""
    m = re.search(r"extents:(\d+)", line or "")
    return int(m.group(1)) if m else None


def _blockdev_arg(node: dict[str, Any]) -> list[str]:
    return ["-blockdev", json.dumps(node, separators=(",", ":"))]


def throttled(source: BlockSource, iops: int, mib_s: int,
              group: str = "swapthrottle") -> tuple[list[str],
                                                    dict[str, Any]]:
    """Put `source` under a throttle filter; (object args, top node)."""
    bottom = source.blockdev()
    if not iops and not mib_s:
        return [], dict(bottom, **{"node-name": NODE})
    limits = []
    if iops:
        limits.append(f"x-iops-total={iops}")
    if mib_s:
        limits.append(f"x-bps-total={mib_s * MIB}")
    obj = ["-object", ",".join([f"throttle-group,id={group}"] + limits)]
    return obj, {"driver": "throttle", "node-name": NODE,
                 "throttle-group": group, "file": bottom}


# A swap file's file system: its metadata, and the room the agent leaves
# free (SLACK_BYTES in workloads/agent/swapfile.c).
SWAP_FILE_FS_MIB = 64


def disk_mib(backend: Backend, guest: Guest) -> int:
    """The drive's size: the swap size, or with a swap file room for its
    file system too, and for the filler files between its blocks (half
    the drive) when it is fragmented."""
    layout = backend.params.get("swap_file")
    if layout is None:
        return guest.swap_mib
    factor = 2 if layout == "fragmented" else 1
    return factor * (guest.swap_mib + SWAP_FILE_FS_MIB)


def swap_file_setup(backend: Backend) -> tuple[list[tuple[str, str]],
                                               dict[str, str]]:
    """The agent's swap_file key and what the guest must show for it."""
    layout = backend.params.get("swap_file")
    if layout is None:
        return [], {}
    return [("swap_file", str(layout))], {"swap_file": str(layout)}


def _int(backend: Backend, key: str, default: int) -> int:
    value = backend.params.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise LabError(f"backend {backend.name}: {key} must be an "
                       f"integer, got {value!r}")


def rotational(backend: Backend, guest: Guest, image_dir: Path,
               source: BlockSource | None = None) -> Setup:
    src = source or FileSource(image_dir / "swap.img",
                               disk_mib(backend, guest))
    src.prepare()
    rate = _int(backend, "rotation_rate", 7200)
    if rate < 2:
        raise LabError(f"backend {backend.name}: rotation_rate {rate} "
                       "would make the disk non-rotational (use >= 1025)")
    # a device model (lab.guest.devices) replaces the throttle stand-in
    modelled = str(backend.params.get("model", "none")) != "none"
    objs, top = throttled(src, 0 if modelled else
                          _int(backend, "throttle_iops", 0),
                          0 if modelled else
                          _int(backend, "throttle_bps", 0))
    args = objs + _blockdev_arg(top) + [
        "-device", "virtio-scsi-pci,id=swapscsi",
        "-device", f"scsi-hd,bus=swapscsi.0,drive={NODE},"
                   f"rotation_rate={rate},serial=swaplab-swap"]
    agent, file_expect = swap_file_setup(backend)
    return Setup(backend, "/dev/sda", args,
                 expect={"name": "sda", "rotational": "1", **file_expect},
                 agent=agent, source=src.describe(),
                 image=getattr(src, "path", None))


def nvme(backend: Backend, guest: Guest, image_dir: Path,
         source: BlockSource | None = None) -> Setup:
    src = source or FileSource(image_dir / "swap.img",
                               disk_mib(backend, guest))
    src.prepare()
    mdts = _int(backend, "mdts", 9)
    top = dict(src.blockdev(), **{"node-name": NODE})
    args = _blockdev_arg(top) + [
        "-device", f"nvme,serial=swaplab0,drive={NODE},mdts={mdts}"]
    agent, file_expect = swap_file_setup(backend)
    expect = {"name": "nvme0n1", "rotational": "0", **file_expect}
    if 0 < mdts <= 10:      # the guest caps transfers at 4 MiB anyway
        expect["max_hw_sectors_kb"] = str(4 << mdts)
    return Setup(backend, "/dev/nvme0n1", args, expect=expect, agent=agent,
                 source=src.describe(), image=getattr(src, "path", None))


def pmem(backend: Backend, guest: Guest, image_dir: Path,
         source: BlockSource | None = None) -> Setup:
    mode = str(backend.params.get("mode", "nvdimm"))
    size = guest.swap_mib
    # DAX: memmap pmem has struct pages (dax=1) as it is; an NVDIMM's raw
    # namespace has none, so the agent turns it into fsdax first (param
    # dax: false keeps it raw).
    dax = str(backend.params.get("dax", "true")).lower() not in (
        "0", "false", "no")
    expect = {"name": "pmem0", "rotational": "0", "dax": "1" if dax
              else "0"}
    if mode == "memmap":
        expect["dax"] = "1"
        # RAM-simulated: the region sits low in guest RAM (QEMU puts the
        # initrd at the top), aligned to 128 MiB memory sections.
        offset = max(128, (guest.memory_mib // 2) // 128 * 128)
        return Setup(backend, "/dev/pmem0", [], extra_ram_mib=size,
                     cmdline=[f"memmap={size}M!{offset}M"], expect=expect,
                     source={"type": "ram", "size_mib": size,
                             "offset_mib": offset})
    if mode != "nvdimm":
        raise LabError(f"backend {backend.name}: pmem mode must be nvdimm "
                       f"or memmap, not {mode!r}")
    if source is not None:
        raise LabError("an NVDIMM is backed by a file, not a block source")
    if size % 2:
        raise LabError(f"swap size {size} MiB: an NVDIMM needs a multiple "
                       "of 2 MiB")
    img = FileSource(image_dir / "pmem.img", size)
    img.prepare()
    args = ["-object", f"memory-backend-file,id=swapmem,share=on,"
                       f"mem-path={img.path},size={size}M",
            "-device", "nvdimm,id=swapnvdimm,memdev=swapmem"]
    maxmem = guest.memory_mib + size + 1024
    return Setup(backend, "/dev/pmem0", args, machine=["nvdimm=on"],
                 memory=["slots=2", f"maxmem={maxmem}M"], expect=expect,
                 agent=[("pmem_fsdax", "1")] if dax else [],
                 source={"type": "nvdimm-file", "path": str(img.path),
                         "size_mib": size},
                 image=img.path)


def zram(backend: Backend, guest: Guest, image_dir: Path,
         source: BlockSource | None = None) -> Setup:
    """Swap on compressed RAM inside the guest: no QEMU device; the agent
    sets the compressor and the size (the guest's swap size) through
    sysfs before mkswap. The compressed pages live in the guest's own
    RAM."""
    if source is not None:
        raise LabError("zram lives in guest RAM, not on a block source")
    comp = str(backend.params.get("compressor", "lzo-rle"))
    return Setup(backend, "/dev/zram0", [],
                 expect={"name": "zram0", "rotational": "0"},
                 agent=[("zram_comp", comp)],
                 source={"type": "zram", "size_mib": guest.swap_mib,
                         "compressor": comp})


KINDS = {"rotational": rotational, "nvme": nvme, "pmem": pmem, "zram": zram}


def prepare(backend: Backend, guest: Guest, image_dir: Path,
            source: BlockSource | None = None) -> Setup:
    """Recreate the backend's image under `image_dir`; its QEMU setup."""
    if backend.kind not in KINDS:
        raise LabError(f"backend {backend.name}: unknown kind "
                       f"{backend.kind!r}; expected one of "
                       f"{', '.join(KINDS)}")
    if guest.swap_mib < 1:
        raise LabError("the guest's swap size must be at least 1 MiB")
    return KINDS[backend.kind](backend, guest, image_dir, source)
