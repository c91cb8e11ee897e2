"""Guest initramfs: a newc cpio written in Python (no root), gzip'd.

The base image holds the agent as /init, busybox-static with symlinked
applets, and the workload binaries in /bin; it is cached under
<cache>/initramfs/ by the content hash of everything that goes in. Each
cell appends a tiny second archive with its config file
(/etc/swaplab/cell.conf) and any extra files: Linux unpacks concatenated
cpio archives in order, so the cell's files land on top of the base.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from lab.cache import atomic_write
from lab.errors import LabError
from lab.paths import REPO

RECIPE = "swaplab-initramfs-1"
AGENT_DIR = REPO / "workloads" / "agent"
AGENT = AGENT_DIR / "build" / "swaplab-agent"
BUSYBOX = Path("/bin/busybox")
CONF_PATH = "etc/swaplab/cell.conf"
# Applets linked into /bin; PID 1 is the agent, so no init/linuxrc.
APPLETS = (
    "sh ash cat chmod cp cut dd df dmesg du echo env false find free grep "
    "head hexdump kill ln ls mkdir mknod mkswap mount mv nproc ps readlink "
    "rm rmdir sed seq sh sleep sort stat swapoff swapon sync sysctl tail "
    "tee test timeout top touch tr true umount uname uptime vi wc xargs "
    "awk [ poweroff reboot").split()
DIRS = ("bin", "sbin", "dev", "etc", "etc/swaplab", "proc", "root", "run",
        "sys", "tmp", "usr", "usr/bin", "mnt")


@dataclass
class Cpio:
    """A newc ("070701") archive built in memory; owners and modes are
    whatever the caller says, so no root is needed."""
    entries: list[bytes] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    _ino: int = 1000

    def _add(self, name: str, mode: int, data: bytes = b"",
             rdev: tuple[int, int] = (0, 0), nlink: int = 1) -> None:
        name = name.strip("/")
        if not name or name in self.names:
            raise LabError(f"initramfs: bad or duplicate path '{name}'")
        self.names.add(name)
        self._ino += 1
        raw = name.encode() + b"\0"
        fields = (self._ino, mode, 0, 0, nlink, 0, len(data), 0, 0,
                  rdev[0], rdev[1], len(raw), 0)
        head = b"070701" + b"".join(b"%08x" % f for f in fields)
        self.entries.append(head + raw + _pad(len(head) + len(raw))
                            + data + _pad(len(data)))

    def dir(self, name: str, mode: int = 0o755) -> None:
        self._add(name, stat.S_IFDIR | mode, nlink=2)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._add(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._add(name, stat.S_IFLNK | 0o777, target.encode())

    def chardev(self, name: str, major: int, minor: int,
                mode: int = 0o600) -> None:
        self._add(name, stat.S_IFCHR | mode, rdev=(major, minor))

    def archive(self) -> bytes:
        trailer = Cpio()
        trailer._ino = -1
        trailer._add("TRAILER!!!", 0, nlink=1)
        out = b"".join(self.entries) + trailer.entries[0]
        return out + b"\0" * (-len(out) % 512)

    def gzip(self) -> bytes:
        return gzip.compress(self.archive(), compresslevel=6, mtime=0)


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 4)


def make_in(directory: Path, what: str, *products: Path) -> None:
    """`make -C directory` (a no-op when up to date); every one of
    `products` must exist afterwards."""
    proc = subprocess.run(["make", "-s", "-C", str(directory)],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not all(p.is_file() for p in products):
        raise LabError(f"building {what} failed:\n"
                       + (proc.stderr or proc.stdout)[-2000:])


def build_agent() -> Path:
    """Make the agent (a no-op when it is up to date)."""
    make_in(AGENT_DIR, "the guest agent", AGENT)
    return AGENT


def workload_files(directory: Path | None) -> list[Path]:
    """The executables directly in `directory` (sorted), for /bin."""
    if directory is None or not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir()
                  if p.is_file() and os.access(p, os.X_OK))


def base_inputs(agent: Path, workloads: list[Path],
                busybox: Path = BUSYBOX) -> str:
    """Content hash of everything the base image is made of."""
    h = hashlib.sha256(RECIPE.encode() + b"\0")
    h.update(" ".join(APPLETS).encode() + b"\0")
    for label, path in [("agent", agent), ("busybox", busybox)] + \
            [("bin/" + p.name, p) for p in workloads]:
        h.update(label.encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def base_archive(agent: Path, workloads: list[Path],
                 busybox: Path = BUSYBOX) -> Cpio:
    cpio = Cpio()
    for d in DIRS:
        cpio.dir(d, 0o1777 if d == "tmp" else 0o755)
    cpio.chardev("dev/console", 5, 1)
    cpio.chardev("dev/null", 1, 3, 0o666)
    cpio.file("init", agent.read_bytes(), 0o755)
    cpio.file("bin/busybox", busybox.read_bytes(), 0o755)
    for applet in dict.fromkeys(APPLETS):
        cpio.symlink(f"bin/{applet}", "busybox")
    for prog in workloads:
        if f"bin/{prog.name}" in cpio.names:
            raise LabError(f"workload binary {prog} clashes with an "
                           "initramfs file of the same name")
        cpio.file(f"bin/{prog.name}", prog.read_bytes(), 0o755)
    return cpio


def base_image(cache: Path, workloads_dir: Path | None,
               extra_programs: Sequence[Path] = (),
               busybox: Path = BUSYBOX) -> Path:
    """The cached base initramfs (.cpio.gz), built when its inputs change."""
    if not busybox.is_file():
        raise LabError(f"{busybox} not found: install busybox-static")
    agent = build_agent()
    progs = workload_files(workloads_dir) + list(extra_programs)
    digest = base_inputs(agent, progs, busybox)
    path = cache / "initramfs" / f"base-{digest[:16]}.cpio.gz"
    if not path.is_file():
        atomic_write(path, base_archive(agent, progs, busybox).gzip())
    return path


def render_config(items: list[tuple[str, str]]) -> str:
    """The cell config: one key=value per line, order kept (lists repeat
    keys). Values cannot hold newlines: there is no quoting."""
    lines = ["# swaplab cell config, read by the guest agent"]
    for key, value in items:
        value = str(value)
        if not key or "=" in key or any(c in key for c in "\n\r#") \
                or key != key.strip():
            raise LabError(f"cell config: bad key {key!r}")
        if "\n" in value or "\r" in value or "\0" in value:
            raise LabError(f"cell config: the value of {key} holds a "
                           f"newline or NUL: {value!r}")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def files_archive(files: dict[str, bytes]) -> bytes:
    """A cpio.gz of files by path (ELF files executable)."""
    cpio = Cpio()
    # The kernel's unpacker creates no missing parents: a library at
    # lib/x86_64-linux-gnu/ needs its directories first.
    parents = sorted({str(p) for name in files
                      for p in Path(name).parents if str(p) != "."})
    for d in parents:
        cpio.dir(d)
    for name, data in sorted(files.items()):
        cpio.file(name, data, 0o755 if data[:4] == b"\x7fELF" else 0o644)
    return cpio.gzip()


def files_image(cache: Path, files: dict[str, bytes]) -> Path:
    """files_archive(files), cached by content: a brought program's
    libraries (17 MiB for the Redis cells) are compressed once, not at every
    cell's boot."""
    digest = hashlib.sha256()
    for name, data in sorted(files.items()):
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(data).digest())
    path = cache / "initramfs" / f"files-{digest.hexdigest()[:16]}.cpio.gz"
    if not path.is_file():
        atomic_write(path, files_archive(files))
    return path


def cell_image(base: Path, config: str, dest: Path,
               files: Path | None = None) -> Path:
    """base + the cell's files (files_image) + its config, concatenated
    into `dest` (the kernel unpacks concatenated archives in order)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        out.write(base.read_bytes())
        if files is not None:
            out.write(files.read_bytes())
        out.write(files_archive({CONF_PATH: config.encode()}))
    return dest
