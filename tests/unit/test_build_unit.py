"""Build bookkeeping that needs no kernel: keys, release, logs, lock."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab.build import (Build, input_digest, last_errors, load_build,
                       read_bzimage_release)
from lab.cache import atomic_write, locked
from lab.errors import LabError
from lab.matrix import load_matrix
from tests.unit.test_matrix import make_tree

ROOT = Path(__file__).resolve().parents[2]


def fake_bzimage(path: Path, release: str) -> None:
    data = bytearray(4096)
    data[0x202:0x206] = b"HdrS"
    text = f"{release} (swaplab@swaplab) #1 SMP\0".encode()
    data[0x400:0x400 + len(text)] = text
    data[0x20e:0x210] = (0x400 - 0x200).to_bytes(2, "little")
    path.write_bytes(bytes(data))


def test_release_read_from_setup_header(tmp_path: Path) -> None:
    image = tmp_path / "bzImage"
    fake_bzimage(image, "6.1.192-base-0123456789ab")
    assert read_bzimage_release(image) == "6.1.192-base-0123456789ab"
    image.write_bytes(b"\0" * 4096)
    with pytest.raises(LabError, match="not a bzImage"):
        read_bzimage_release(image)


def test_input_digest_follows_patches_and_fragments(tmp_path: Path) -> None:
    matrix = load_matrix(make_tree(tmp_path))
    variant = matrix.variants["readahead"]
    first = input_digest(matrix, variant, "6.1.192-3", "gcc 12")
    assert first == input_digest(matrix, variant, "6.1.192-3", "gcc 12")
    assert first != input_digest(matrix, variant, "6.1.192-4", "gcc 12")
    assert first != input_digest(matrix, variant, "6.1.192-3", "gcc 13")
    series = matrix.series_dir("linux-source-6.1", "readahead")
    (series / "0001-x.patch").write_text("diff\n")
    (series / "series").write_text("0001-x.patch\n")
    second = input_digest(matrix, variant, "6.1.192-3", "gcc 12")
    assert second != first
    (series / "0001-x.patch").write_text("diff changed\n")
    assert input_digest(matrix, variant, "6.1.192-3", "gcc 12") != second
    (tmp_path / "kernels" / "lab-base.config").write_text("CONFIG_X=y\n")
    assert input_digest(matrix, variant, "6.1.192-3", "gcc 12") not in (
        first, second)


def test_load_build_needs_meta_and_image(tmp_path: Path) -> None:
    meta = dict(variant="base", key="0123456789ab",
                release="6.1.192-base-0123456789ab", tree="linux-source-6.1",
                tree_version="6.1.192-3", commit="c0ffee", patches=[],
                config_sha256="00", compiler="gcc", seconds=1.0,
                directory=str(tmp_path))
    assert load_build(tmp_path) is None
    atomic_write(tmp_path / "meta.json", json.dumps(meta))
    assert load_build(tmp_path) is None, "no bzImage yet"
    fake_bzimage(tmp_path / "bzImage", meta["release"])
    assert load_build(tmp_path) == Build(**meta)
    (tmp_path / "meta.json").write_text("{ truncated")
    assert load_build(tmp_path) is None


def test_last_errors_prefers_error_lines(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("  CC mm/a.o\n../mm/swap.c:12:1: error: expected ';'\n"
                   "make[2]: *** [mm/swap.o] Error 1\n  CC mm/b.o\n")
    text = last_errors(log)
    assert "error: expected ';'" in text and "Error 1" in text
    assert "CC mm/b.o" not in text


def test_second_lab_process_refuses_with_message(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; "
            "from lab.cache import locked; from lab.errors import LabError\n"
            "try:\n"
            "    with locked(Path(sys.argv[1]), wait=False): pass\n"
            "except LabError as e: print(e); sys.exit(3)\n")
    with locked(tmp_path):
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)],
                              capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 3
    assert "in use by another lab process (pid" in proc.stdout
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, "free again once the holder is done"
