"""What a program needs to run in the guest: its ELF header checked
(64-bit x86-64, executable), and, for a dynamically linked one, its
interpreter and the shared libraries it needs, found the way ld.so
finds them (DT_RPATH when there is no DT_RUNPATH, DT_RUNPATH with
$ORIGIN, then the system's library directories), transitively.

The guest's initramfs has no libraries of its own: a workload brought
by the user (matrix.yaml `program:` as a path) goes in with everything
this module lists, at the same absolute paths.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

EM_X86_64 = 62
ET_EXEC, ET_DYN = 2, 3
PT_DYNAMIC, PT_INTERP = 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 1, 5, 15, 29
# Debian's ld.so searches these without an ld.so.cache (`ld.so --help`),
# and the guest has no cache: a library only /etc/ld.so.conf.d names on
# the host (/usr/local/lib, say) would not be found there, so it is not
# looked for here either (link the program with a run path instead).
SYSTEM_DIRS = (Path("/lib/x86_64-linux-gnu"),
               Path("/usr/lib/x86_64-linux-gnu"), Path("/lib"),
               Path("/usr/lib"))


class ElfError(Exception):
    """A file that cannot run in the guest, and why."""


@dataclass(frozen=True)
class Elf:
    path: Path
    interpreter: str | None         # PT_INTERP, None when static
    needed: tuple[str, ...]         # DT_NEEDED sonames
    search: tuple[str, ...]         # DT_RUNPATH, else DT_RPATH, entries


def _header(data: bytes, path: Path) -> tuple[int, int, int, int, int]:
    """e_type, e_machine, e_phoff, e_phentsize, e_phnum."""
    if data[:4] != b"\x7fELF":
        raise ElfError(f"{path} is not an ELF executable")
    if data[4] != 2 or data[5] != 1:
        raise ElfError(f"{path} is not a 64-bit little-endian ELF file "
                       "(the guest is x86-64)")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != EM_X86_64:
        raise ElfError(f"{path} is for ELF machine {e_machine}, not x86-64 "
                       f"({EM_X86_64})")
    e_phoff, = struct.unpack_from("<Q", data, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    return e_type, e_machine, e_phoff, e_phentsize, e_phnum


def _segments(data: bytes, phoff: int, phentsize: int, phnum: int
              ) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_vaddr, p_filesz) of each program header."""
    out = []
    for i in range(phnum):
        off = phoff + i * phentsize
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = \
            struct.unpack_from("<IIQQQQ", data, off)
        out.append((p_type, p_offset, p_vaddr, p_filesz))
    return out


def _file_offset(segs: list[tuple[int, int, int, int]], vaddr: int) -> int:
    """Where the virtual address `vaddr` lies in the file (PT_LOAD)."""
    for p_type, p_offset, p_vaddr, p_filesz in segs:
        if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return p_offset + vaddr - p_vaddr
    return vaddr            # prelinked at 0: the address is the offset


def read(path: Path, executable: bool = True) -> Elf:
    """The ELF facts of `path`: an x86-64 executable (or, with
    executable False, a shared library)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ElfError(f"cannot read {path}: {exc.strerror}") from None
    try:
        e_type, _, phoff, phentsize, phnum = _header(data, path)
        if executable and e_type not in (ET_EXEC, ET_DYN):
            raise ElfError(f"{path} is an ELF file of type {e_type}, not an "
                           "executable")
        segs = _segments(data, phoff, phentsize, phnum)
        interp = None
        dyn = None
        for p_type, p_offset, _vaddr, p_filesz in segs:
            if p_type == PT_INTERP:
                interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0") \
                    .decode()
            elif p_type == PT_DYNAMIC:
                dyn = (p_offset, p_filesz)
        if dyn is None:
            return Elf(path, interp, (), ())
        entries = [struct.unpack_from("<qQ", data, dyn[0] + i)
                   for i in range(0, dyn[1], 16)]
        strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    except struct.error:
        raise ElfError(f"{path} is a truncated ELF file") from None
    if strtab is None:
        return Elf(path, interp, (), ())
    base = _file_offset(segs, strtab)

    def string(off: int) -> str:
        end = data.index(b"\0", base + off)
        return data[base + off:end].decode()

    needed, rpath, runpath = [], [], []
    for tag, val in entries:
        if tag == DT_NULL:
            break
        if tag == DT_NEEDED:
            needed.append(string(val))
        elif tag == DT_RPATH:
            rpath += string(val).split(":")
        elif tag == DT_RUNPATH:
            runpath += string(val).split(":")
    return Elf(path, interp, tuple(needed), tuple(runpath or rpath))


def _find(soname: str, origin: Path, search: tuple[str, ...]) -> Path | None:
    dirs = [Path(d.replace("$ORIGIN", str(origin))
                 .replace("${ORIGIN}", str(origin))) for d in search if d]
    for d in [*dirs, *SYSTEM_DIRS]:
        if (d / soname).is_file():
            return d / soname
    return None


def closure(program: Path) -> list[Path]:
    """The files the guest needs to run `program`: the program, then its
    interpreter and every shared library it needs, transitively (each
    once, in the order found). Raises ElfError naming what is wrong or
    missing."""
    top = read(program)
    out = [program]
    if top.interpreter is None:
        return out                  # static
    interp = Path(top.interpreter)
    if not interp.is_file():
        raise ElfError(f"{program} needs the ELF interpreter {interp}, "
                       "which is not on this host")
    out.append(interp)
    todo = [top]
    seen = {interp.resolve()}
    while todo:
        elf = todo.pop(0)
        for soname in elf.needed:
            lib = _find(soname, elf.path.resolve().parent, elf.search)
            if lib is None:
                raise ElfError(f"{program} needs {soname} (for "
                               f"{elf.path.name}), found nowhere in its "
                               "run path or the system's library "
                               "directories")
            if lib.resolve() in seen:
                continue
            seen.add(lib.resolve())
            out.append(lib)
            todo.append(read(lib, executable=False))
    return out
