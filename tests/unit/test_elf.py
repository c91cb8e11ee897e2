"""What a program needs in the guest, on real binaries of this host:
the lab's static swapbench, Debian's dynamic /bin/true, and programs
built here against a library of their own."""
from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from lab import elf
from lab.paths import REPO

SWAPBENCH = REPO / "workloads" / "build" / "swapbench"
LIB = "int answer(void) { return 42; }\n"
MAIN = ("int answer(void);\n"
        "int main(void) { return answer() == 42 ? 0 : 1; }\n")


def test_a_static_program_needs_only_itself() -> None:
    assert elf.read(SWAPBENCH).interpreter is None
    assert elf.closure(SWAPBENCH) == [SWAPBENCH]


def test_a_dynamic_program_brings_its_interpreter_and_libc() -> None:
    true = Path(shutil.which("true") or "/bin/true")
    info = elf.read(true)
    assert info.interpreter == "/lib64/ld-linux-x86-64.so.2"
    assert "libc.so.6" in info.needed
    files = elf.closure(true)
    assert files[:2] == [true, Path(info.interpreter)]
    assert Path("/lib/x86_64-linux-gnu/libc.so.6") in files
    assert len(files) == len({p.resolve() for p in files})


def build(tmp_path: Path, rpath: str | None) -> Path:
    """prog linked against libanswer.so in lib/, with `rpath` or none."""
    (tmp_path / "lib").mkdir(exist_ok=True)
    (tmp_path / "lib.c").write_text(LIB)
    (tmp_path / "main.c").write_text(MAIN)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o",
                    str(tmp_path / "lib" / "libanswer.so"),
                    str(tmp_path / "lib.c")], check=True)
    prog = tmp_path / "prog"
    subprocess.run(["gcc", "-o", str(prog), str(tmp_path / "main.c"),
                    "-L", str(tmp_path / "lib"), "-lanswer",
                    *([f"-Wl,-rpath,{rpath}"] if rpath else [])],
                   check=True)
    return prog


def test_libraries_are_found_by_the_run_path_and_origin(tmp_path) -> None:
    prog = build(tmp_path, "$ORIGIN/lib")
    assert elf.read(prog).search == ("$ORIGIN/lib",)
    files = elf.closure(prog)
    assert tmp_path / "lib" / "libanswer.so" in files
    assert any(p.name == "libc.so.6" for p in files)


def test_a_library_found_nowhere_is_named(tmp_path) -> None:
    prog = build(tmp_path, None)
    with pytest.raises(elf.ElfError, match="needs libanswer.so .for prog.,"
                       " found nowhere"):
        elf.closure(prog)


def test_what_cannot_run_in_the_guest_is_said(tmp_path) -> None:
    with pytest.raises(elf.ElfError, match="cannot read .*: No such file"):
        elf.closure(tmp_path / "missing")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(elf.ElfError, match="is not an ELF executable"):
        elf.closure(script)
    arm = tmp_path / "arm"
    data = bytearray(SWAPBENCH.read_bytes())
    struct.pack_into("<H", data, 18, 183)       # EM_AARCH64
    arm.write_bytes(bytes(data))
    with pytest.raises(elf.ElfError, match="machine 183, not x86-64"):
        elf.closure(arm)
    cut = tmp_path / "cut"
    cut.write_bytes(SWAPBENCH.read_bytes()[:40])
    with pytest.raises(elf.ElfError, match="truncated"):
        elf.closure(cut)


def test_validate_names_the_program_key_and_the_problem(tmp_path) -> None:
    from lab.errors import MatrixError
    from lab.spec.matrix import parse_matrix
    text = (REPO / "matrix.yaml").read_text().replace(
        "  thp-swpout-rate:\n", "  mine:\n    program: ./bin/mine\n"
        "    output: none\n  thp-swpout-rate:\n", 1)
    (tmp_path / "kernels").symlink_to(REPO / "kernels")
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    line = text.splitlines().index("    program: ./bin/mine") + 1
    where = f"{path}:{line}: workloads.mine.program: "
    with pytest.raises(MatrixError) as info:
        parse_matrix(text, path, REPO / "patches")
    assert str(info.value).startswith(where + "cannot read ")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mine").write_text("#!/bin/sh\n")
    with pytest.raises(MatrixError) as info:
        parse_matrix(text, path, REPO / "patches")
    assert str(info.value).startswith(where)
    assert "is not an ELF executable" in str(info.value)
    shutil.copy(SWAPBENCH, tmp_path / "bin" / "mine")
    m = parse_matrix(text, path, REPO / "patches")
    mine = m.workloads["mine"]
    assert (mine.program, mine.path) == ("./bin/mine",
                                         str(tmp_path / "bin" / "mine"))
    # A name without a '/' is still one of the lab's own programs.
    assert m.workloads["seq-seed"].path == ""


def test_brought_files_avoid_what_the_agent_mounts_over(tmp_path) -> None:
    from lab.guest import cellspec
    prog = build(tmp_path, "$ORIGIN/lib")        # tmp_path is under /tmp
    files = cellspec.brought_files(str(prog))
    hidden = cellspec.HIDDEN_PREFIX.lstrip("/")
    assert f"{hidden}{prog}" in files
    assert f"{hidden}{tmp_path}/lib/libanswer.so" in files
    # The interpreter and the system's libraries keep their own paths,
    # where the guest's ld.so looks for them.
    assert "lib64/ld-linux-x86-64.so.2" in files
    assert "lib/x86_64-linux-gnu/libc.so.6" in files
    assert files[f"{hidden}{prog}"] == prog.read_bytes()
    assert cellspec.guest_path(Path("/opt/tools/usemem")) == \
        "/opt/tools/usemem"
    assert cellspec.guest_path(Path("/tmpfoo/x")) == "/tmpfoo/x"


def test_needs_bring_other_programs_under_their_own_names(tmp_path) -> None:
    """`needs:` paths are checked like `program:`, keep a symbolic link's
    own name (a multi-call binary such as redis-server tells its part by
    it), and go into the cell with their libraries."""
    from lab.errors import MatrixError
    from lab.spec.matrix import parse_matrix
    from lab.spec.model import Cell
    from lab.guest import cellspec
    (tmp_path / "kernels").symlink_to(REPO / "kernels")
    (tmp_path / "bin").mkdir()
    true = Path(shutil.which("true") or "/bin/true")
    (tmp_path / "bin" / "server").symlink_to(true)
    text = (REPO / "matrix.yaml").read_text().replace(
        "  thp-swpout-rate:\n", "  mine:\n    program: swapbench\n"
        "    needs: [./bin/server, ./bin/client]\n"
        "  thp-swpout-rate:\n", 1)
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    line = text.splitlines().index(
        "    needs: [./bin/server, ./bin/client]") + 1
    with pytest.raises(MatrixError) as info:
        parse_matrix(text, path, REPO / "patches")
    assert str(info.value).startswith(
        f"{path}:{line}: workloads.mine.needs[1]: cannot read ")
    (tmp_path / "bin" / "client").write_bytes(b"\x7fELF\x01\x01")
    with pytest.raises(MatrixError) as info:
        parse_matrix(text, path, REPO / "patches")
    assert "is not a 64-bit little-endian ELF file" in str(info.value)
    shutil.copy(SWAPBENCH, tmp_path / "bin" / "client")
    m = parse_matrix(text, path, REPO / "patches")
    assert m.workloads["mine"].needs == (str(tmp_path / "bin" / "server"),
                                         str(tmp_path / "bin" / "client"))
    plan = m.plan(Cell(1, "base", "nvme", "mine"))
    spec = cellspec.cell_spec(plan, None, tmp_path)    # type: ignore
    hidden = cellspec.HIDDEN_PREFIX.lstrip("/")
    assert spec.extra_files[f"{hidden}{tmp_path}/bin/server"] == \
        true.read_bytes()
    assert "lib/x86_64-linux-gnu/libc.so.6" in spec.extra_files
    assert plan.measures()["workload"]["needs"] == list(
        m.workloads["mine"].needs)


def test_lab_boot_brings_programs_onto_the_guests_path(tmp_path) -> None:
    """`lab boot --bring PROG -- PROG args` runs a program of this host by
    its name in the guest: its files go in (under the hidden prefix for
    /tmp), its directory goes first on PATH, and what cannot run is named
    with the option."""
    from lab.errors import LabError
    from lab.guest import cellspec
    prog = tmp_path / "usemem"
    shutil.copy(SWAPBENCH, prog)
    files, line = cellspec.brought_by_hand([prog], ["usemem", "-n", "2",
                                                    "250 m"])
    guest = cellspec.guest_path(prog)
    assert files[guest.lstrip("/")] == prog.read_bytes()
    assert line == f"PATH={Path(guest).parent}:$PATH; usemem -n 2 '250 m'"
    assert cellspec.brought_by_hand([], ["true"]) == ({}, "true")
    (tmp_path / "notes").write_text("not a program\n")
    with pytest.raises(LabError, match=f"^--bring {tmp_path}/notes: "):
        cellspec.brought_by_hand([tmp_path / "notes"], ["notes"])
    with pytest.raises(LabError, match="^--bring /nonexistent: "):
        cellspec.brought_by_hand([Path("/nonexistent")], ["x"])
