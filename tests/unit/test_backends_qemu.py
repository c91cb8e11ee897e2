"""QEMU argv per backend (from the real matrix.yaml) and guest checks."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from lab.errors import LabError
from lab.guest import accel, backends, qemu
from lab.spec import matrix as mx
from lab.spec import swapdev
from lab.spec.fields import as_named
from lab.spec.model import Backend, Guest
from lab.spec.yamlsrc import load

ROOT = Path(__file__).resolve().parents[2]


class _Sections:
    """The backends and guest of the real matrix.yaml, parsed by the
    matrix module's own section parsers (the file's patch series may not
    exist in this checkout)."""

    def __init__(self, path: Path) -> None:
        root = load(path.read_text(), str(path))
        self.backends = as_named(root.value["backends"], "backends",
                                  swapdev.backend)
        self.guest = mx._guest(root.value["guest"])


MATRIX = _Sections(ROOT / "matrix.yaml")
GUEST = MATRIX.guest


def argv_for(setup: backends.Setup, tmp_path: Path, guest: Guest = GUEST,
             **kw) -> list[str]:
    spec = qemu.Spec(name="cell-1", kernel=Path("/k/bzImage"),
                     initrd=Path("/k/initrd"), memory_mib=guest.memory_mib,
                     vcpus=guest.vcpus, accel=accel.tcg("test"),
                     backend=setup, result_file=tmp_path / "result.frame",
                     vars_dir=tmp_path, **kw)
    return qemu.command(spec)


def opt(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_common_arguments(tmp_path):
    setup = backends.prepare(MATRIX.backends["nvme"], GUEST, tmp_path)
    argv = argv_for(setup, tmp_path, cmdline=["quiet", ""])
    assert argv[0] == "qemu-system-x86_64"
    assert opt(argv, "-accel") == ["tcg,thread=multi"]
    assert opt(argv, "-smp") == [str(GUEST.vcpus)]
    assert opt(argv, "-m") == [f"{GUEST.memory_mib}M"]
    assert "-no-reboot" in argv and "-nodefaults" in argv
    assert opt(argv, "-append") == ["console=ttyS0 panic=-1 rdinit=/init "
                                    "rootfstype=ramfs quiet"]
    assert "chardev:console" in opt(argv, "-serial")
    assert f"file,id=result,path={tmp_path}/result.frame" in \
        opt(argv, "-chardev")
    assert any("name=org.swaplab.result" in d for d in opt(argv, "-device"))
    assert opt(argv, "-machine") == ["pc"]
    assert not any("pflash" in d for d in opt(argv, "-drive"))


def test_rotational(tmp_path):
    be = MATRIX.backends["rotational"]
    setup = backends.prepare(be, GUEST, tmp_path)
    argv = argv_for(setup, tmp_path)
    devices = opt(argv, "-device")
    assert "virtio-scsi-pci,id=swapscsi" in devices
    assert any(d.startswith("scsi-hd,") and "rotation_rate=7200" in d
               and "drive=swapdisk" in d for d in devices)
    # the device model does the delaying: no throttle on top of it
    assert be.params["model"] == "disk" and opt(argv, "-object") == []
    assert setup.device == "/dev/sda"
    assert setup.expect == {"name": "sda", "rotational": "1"}


def test_rotational_throttled_without_model(tmp_path):
    be = Backend("hdd", "rotational", {"rotation_rate": 7200,
                                       "throttle_iops": 150,
                                       "throttle_bps": 120})
    setup = backends.prepare(be, GUEST, tmp_path)
    argv = argv_for(setup, tmp_path)
    group = opt(argv, "-object")
    assert group == [f"throttle-group,id=swapthrottle,x-iops-total=150,"
                     f"x-bps-total={120 * 1024 * 1024}"]
    node = json.loads(opt(argv, "-blockdev")[0])
    assert node["driver"] == "throttle" and node["node-name"] == "swapdisk"
    assert node["file"]["file"]["filename"] == str(tmp_path / "swap.img")
    assert setup.device == "/dev/sda"
    assert setup.expect == {"name": "sda", "rotational": "1"}


def test_rotational_unthrottled_and_other_source(tmp_path):
    class Nbd:
        def prepare(self): pass
        def blockdev(self): return {"driver": "nbd", "server": {
            "type": "unix", "path": "/run/x.sock"}}
        def describe(self): return {"type": "nbd"}

    be = Backend("hdd", "rotational", {"rotation_rate": 5400})
    setup = backends.prepare(be, GUEST, tmp_path, source=Nbd())
    argv = argv_for(setup, tmp_path)
    assert opt(argv, "-object") == []
    node = json.loads(opt(argv, "-blockdev")[0])
    assert node == {"driver": "nbd", "server": {"type": "unix",
                                                 "path": "/run/x.sock"},
                    "node-name": "swapdisk"}
    assert any("rotation_rate=5400" in d for d in opt(argv, "-device"))


def test_nvme(tmp_path):
    setup = backends.prepare(MATRIX.backends["nvme"], GUEST, tmp_path)
    argv = argv_for(setup, tmp_path)
    assert "nvme,serial=swaplab0,drive=swapdisk,mdts=9" in \
        opt(argv, "-device")
    assert setup.device == "/dev/nvme0n1"
    assert setup.expect["max_hw_sectors_kb"] == "2048"
    assert setup.expect["rotational"] == "0"


def test_pmem_nvdimm(tmp_path):
    setup = backends.prepare(MATRIX.backends["dax-pmem"], GUEST, tmp_path)
    argv = argv_for(setup, tmp_path)
    assert opt(argv, "-machine") == ["pc,nvdimm=on"]
    assert opt(argv, "-m") == [f"{GUEST.memory_mib}M,slots=2,maxmem="
                               f"{GUEST.memory_mib + GUEST.swap_mib + 1024}M"]
    assert opt(argv, "-object") == [
        f"memory-backend-file,id=swapmem,share=on,mem-path="
        f"{tmp_path}/pmem.img,size={GUEST.swap_mib}M"]
    assert "nvdimm,id=swapnvdimm,memdev=swapmem" in opt(argv, "-device")
    assert setup.device == "/dev/pmem0"
    # DAX: the agent turns the raw namespace into fsdax, the guest must
    # then report dax=1
    assert setup.agent == [("pmem_fsdax", "1")]
    assert setup.expect["dax"] == "1"
    raw = backends.prepare(Backend("raw", "pmem", {"mode": "nvdimm",
                                                   "dax": "false"}),
                           GUEST, tmp_path)
    assert raw.agent == [] and raw.expect["dax"] == "0"


def test_pmem_memmap(tmp_path):
    be = Backend("ram-pmem", "pmem", {"mode": "memmap"})
    guest = Guest(memory_mib=512, vcpus=2, swap_mib=1024,
                  firmware="seabios", cmdline="")
    setup = backends.prepare(be, guest, tmp_path)
    argv = argv_for(setup, tmp_path, guest)
    assert opt(argv, "-m") == ["1536M"]
    append = opt(argv, "-append")[0]
    # low in RAM, at half of it, on a 128 MiB section boundary
    assert "memmap=1024M!256M" in append
    assert setup.device == "/dev/pmem0" and setup.image is None
    assert setup.agent == [] and setup.expect["dax"] == "1"


def test_images_sparse_and_recreated(tmp_path):
    be = MATRIX.backends["nvme"]
    setup = backends.prepare(be, GUEST, tmp_path)
    img = setup.image
    assert img.stat().st_size == GUEST.swap_mib << 20
    assert img.stat().st_blocks == 0
    img.write_bytes(b"old data")
    backends.prepare(be, GUEST, tmp_path)
    assert img.stat().st_size == GUEST.swap_mib << 20
    assert img.stat().st_blocks == 0


def test_ovmf(tmp_path):
    if not any(p.is_file() for p in qemu.OVMF_CODE):
        pytest.skip("ovmf not installed")
    setup = backends.prepare(MATRIX.backends["nvme"], GUEST, tmp_path)
    argv = argv_for(setup, tmp_path, firmware="ovmf")
    drives = opt(argv, "-drive")
    assert len(drives) == 2 and "readonly=on" in drives[0]
    vars_copy = Path(drives[1].rsplit("file=", 1)[1])
    assert vars_copy.parent == tmp_path and vars_copy.is_file()
    with pytest.raises(LabError):
        argv_for(setup, tmp_path, firmware="coreboot")


SWAPS_HEAD = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
SWAPS_DISK = SWAPS_HEAD + "/dev/sda  partition\t524284\t\t0\t\t-2\n"
SWAPS_FILE = SWAPS_HEAD + "/run/swapfs/swapfile  file\t491516\t0\t-2\n"
# as 6.1 logs a swap file written into 128 KiB holes (a guest's, swapfile.c)
ADDING_FILE = ("Adding 491516k swap on /run/swapfs/swapfile.  Priority:-2 "
               "extents:3841 across:1003516k SS")


def test_check_device_facts(tmp_path):
    setup = backends.prepare(MATRIX.backends["rotational"], GUEST, tmp_path)
    disk = {"name": "sda", "queue": {"rotational": "1"},
            "proc_swaps": SWAPS_DISK}
    assert setup.check(disk) == []
    problems = setup.check(dict(disk, queue={"rotational": "0"}))
    assert problems and "rotational" in problems[0]
    assert setup.check(None) == ["the guest reported no swap device"]
    # swap on the device means no swap file
    assert "expected one partition" in \
        setup.check(dict(disk, proc_swaps=SWAPS_FILE))[0]


def test_a_swap_file_backend(tmp_path):
    """swap_file: the drive holds the file system and, fragmented, the
    filler files; the agent is told the layout; the guest must show one
    swap file, fragmented into extents."""
    frag = Backend("nvme-file", "nvme", {"mdts": 9,
                                         "swap_file": "fragmented"})
    setup = backends.prepare(frag, GUEST, tmp_path)
    assert ("swap_file", "fragmented") in setup.agent
    assert setup.source and setup.source["size_mib"] == \
        2 * (GUEST.swap_mib + backends.SWAP_FILE_FS_MIB)
    whole = Backend("nvme-file1", "nvme", {"swap_file": "contiguous"})
    assert backends.disk_mib(whole, GUEST) == \
        GUEST.swap_mib + backends.SWAP_FILE_FS_MIB
    good = {"name": "nvme0n1", "queue": {"rotational": "0",
                                         "max_hw_sectors_kb": "2048"},
            "proc_swaps": SWAPS_FILE, "swapon_line": ADDING_FILE,
            "swap_file": {"path": "/run/swapfs/swapfile",
                          "fragmented": True}}
    assert setup.check(good) == []
    assert backends.swap_extents(ADDING_FILE) == 3841
    one = dict(good, swapon_line=ADDING_FILE.replace("3841", "1"))
    assert "has 1 extents" in setup.check(one)[0]
    assert "expected one file" in \
        setup.check(dict(good, proc_swaps=SWAPS_DISK))[0]
    assert "expected a fragmented" in setup.check(
        dict(good, swap_file={"fragmented": False}))[0]


def test_bad_params(tmp_path):
    with pytest.raises(LabError):
        backends.prepare(Backend("x", "pmem", {"mode": "dimm"}), GUEST,
                         tmp_path)
    with pytest.raises(LabError):
        backends.prepare(Backend("x", "tape", {}), GUEST, tmp_path)
    with pytest.raises(LabError):
        backends.prepare(Backend("x", "rotational", {"rotation_rate": 1}),
                         GUEST, tmp_path)
    with pytest.raises(LabError):
        backends.prepare(MATRIX.backends["dax-pmem"],
                         replace(GUEST, swap_mib=1023), tmp_path)


def test_efi_stub_detection(tmp_path):
    pe = bytearray(4096)
    pe[:2] = b"MZ"
    pe[0x3c:0x40] = (0x80).to_bytes(4, "little")
    pe[0x80:0x84] = b"PE\0\0"
    (tmp_path / "efi").write_bytes(bytes(pe))
    legacy = bytearray(pe)
    legacy[:2] = b"\xea\x05"
    (tmp_path / "legacy").write_bytes(bytes(legacy))
    assert qemu.has_efi_stub(tmp_path / "efi")
    assert not qemu.has_efi_stub(tmp_path / "legacy")
    setup = backends.prepare(MATRIX.backends["nvme"], GUEST, tmp_path)
    spec = qemu.Spec(name="c", kernel=tmp_path / "legacy",
                     initrd=tmp_path / "i", memory_mib=256, vcpus=1,
                     accel=accel.tcg("t"), backend=setup,
                     result_file=tmp_path / "r", firmware="ovmf",
                     vars_dir=tmp_path)
    if any(p.is_file() for p in qemu.OVMF_CODE):
        with pytest.raises(qemu.CannotBoot):
            qemu.command(spec)


def test_zram(tmp_path):
    be = MATRIX.backends["zram"]
    setup = backends.prepare(be, GUEST, tmp_path)
    argv = argv_for(setup, tmp_path)
    # No QEMU device: compressed RAM is the guest's own.
    assert not any("swapdisk" in a for a in argv)
    assert opt(argv, "-m") == [f"{GUEST.memory_mib}M"]
    assert setup.device == "/dev/zram0" and setup.image is None
    assert setup.agent == [("zram_comp", "lzo-rle")]
    assert setup.expect == {"name": "zram0", "rotational": "0"}
    with pytest.raises(LabError, match="not on a block source"):
        backends.prepare(be, GUEST, tmp_path,
                         backends.FileSource(tmp_path / "x", 8))
