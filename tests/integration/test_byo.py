"""A program brought by the user, end to end (issue 26): a dynamically
linked C program, given by a path relative to the matrix file, goes into
the guest with its ELF interpreter and libraries, runs there, and its
usemem-style lines become metrics through the `usemem` preset; one that
prints nothing its rules read fails its cell as parse-failed, logs kept.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab import elf
from lab.kernel.build import Build
from lab.results.store import Store
from tests.integration.conftest import cell_session
from tests.integration.test_matrix_run import tiny_matrix

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# Touches SIZE MiB the way usemem does, and says so in usemem's words
# (one line per process); with "quiet" it prints nothing.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

int main(int argc, char **argv)
{
	size_t bytes = (size_t)atoi(argv[1]) << 20;
	struct timeval t0, t1;
	unsigned long usecs;
	char *p = malloc(bytes);

	if (!p)
		return 1;
	gettimeofday(&t0, NULL);
	memset(p, 0x5a, bytes);
	gettimeofday(&t1, NULL);
	usecs = (t1.tv_sec - t0.tv_sec) * 1000000UL + t1.tv_usec - t0.tv_usec;
	if (argc > 2 && !strcmp(argv[2], "quiet"))
		return 0;
	printf("%zu bytes / %lu usecs = %lu KB/s\n", bytes, usecs + 1,
	       (unsigned long)(bytes / 1024 * 1000000UL / (usecs + 1)));
	return 0;
}
"""

BYO = tiny_matrix("", """\
  touch:
    program: ./bin/touch64
    args: ["64"]
    parse: usemem
    timeout: 120
  silent:
    program: ./bin/touch64
    args: ["64", quiet]
    parse: usemem
    timeout: 120
""")


def byo_matrix(tmp_path: Path) -> tuple[Path, Path]:
    """PROGRAM built dynamically at ./bin/touch64 and BYO's matrix beside
    it: (the program, the matrix file)."""
    for name in ("kernels", "patches"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "bin").mkdir()
    src, binary = tmp_path / "touch64.c", tmp_path / "bin" / "touch64"
    src.write_text(PROGRAM)
    subprocess.run(["gcc", "-O2", "-Wall", "-o", str(binary), str(src)],
                   check=True)
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(BYO)
    return binary, matrix

def test_a_dynamic_program_runs_in_the_guest_and_is_parsed(
        base_build: Build, lab_root: Path, tmp_path: Path) -> None:
    binary, matrix = byo_matrix(tmp_path)
    files = elf.closure(binary)
    assert elf.read(binary).interpreter, "dynamically linked"
    assert any(p.name.startswith("libc.so") for p in files)
    session = cell_session(matrix, lab_root, "-q", "--new-run",
                           timeout=900)
    assert session.returncode == 1, session.stdout[-3000:]
    assert "1 failed, 1 passed" in session.stdout, session.stdout[-3000:]
    run = Store(lab_root).open("latest")
    records = run.records()
    ok = records["base-nvme-touch-r1"].result
    assert ok["outcome"] == "ok"
    kbps = ok["workload"]["parsed"]["touch64.kbps"]
    assert kbps["lines"] == 1 and kbps["value"] > 0
    assert ok["workload"]["parsed"]["touch64.bytes"]["value"] == 64 << 20
    bad = records["base-nvme-silent-r1"].result
    assert bad["reason"] == "parse-failed"
    assert "kbps: no line matched" in bad["detail"]
    assert "the workload printed nothing" in bad["detail"]
    assert (run.log_dir("base-nvme-silent-r1") / "console.log").is_file()


def test_lab_boot_runs_a_brought_program_by_hand(
        base_build: Build, lab_root: Path, tmp_path: Path) -> None:
    """The by-hand half of issue 26's usemem target: `lab boot --bring`
    runs the same dynamically linked program in the same guest by its
    name, and its own line reaches the console."""
    binary, matrix = byo_matrix(tmp_path)
    boot = subprocess.run(
        [sys.executable, "-m", "lab", "--cache", str(lab_root), "boot",
         "base", "--backend", "nvme", "--file", str(matrix), "--bring",
         str(binary), "--", "touch64", "64"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert boot.returncode == 0, boot.stderr[-2000:]
    assert re.search(r"^67108864 bytes / \d+ usecs = \d+ KB/s\r?$",
                     boot.stdout, re.M), boot.stdout[-2000:]
