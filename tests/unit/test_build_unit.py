"""Build bookkeeping that needs no kernel: keys, release, logs, lock."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.kernel import build as build_mod
from lab.kernel import debian, tree
from lab.kernel.build import (Build, Builder, input_digest, last_errors,
                       load_build, object_dir_name, read_bzimage_release)
from lab.cache import atomic_write, locked
from lab.errors import LabError
from lab.progress import Progress
from lab.spec.matrix import load_matrix
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


def test_variants_share_an_object_dir_per_fragment_list() -> None:
    matrix = load_matrix(ROOT / "matrix.yaml")
    names = {v: object_dir_name(matrix.variants[v]) for v in
             ("upstream", "base", "beyond", "everything-debug",
              "beyond-debug")}
    # The quick variants differ only in patches: one directory for all.
    assert names["upstream"] == names["base"] == names["beyond"] \
        == ".swaplab-obj-lab-base"
    # A different config never shares: its objects differ everywhere.
    assert names["everything-debug"] == names["beyond-debug"] \
        == ".swaplab-obj-lab-base+debug"


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


class FakeMake:
    """Stands in for the tree, the patches and make: 'compiles' a bzImage
    whose release ends in the LOCALVERSION it is given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.makes = 0
        pristine = tree.Pristine("linux-source-6.1", "6.1.0-1",
                                 Path("/nonexistent"), "c0ffee")
        monkeypatch.setattr(debian, "installed_version", lambda p: "6.1.0-1")
        monkeypatch.setattr(Builder, "pristine", lambda self, p: pristine)
        monkeypatch.setattr(tree, "apply_series", lambda p, patches: "c0ffee")
        monkeypatch.setattr(tree, "checkout",
                            lambda p, c, path: path.mkdir(parents=True,
                                                          exist_ok=True))
        monkeypatch.setattr(Builder, "_configure",
                            lambda self, v, work, objdir, out: (
                                objdir.mkdir(exist_ok=True),
                                b"CONFIG_SWAP=y\n")[1])
        monkeypatch.setattr(Builder, "_make", self.make)

    def make(self, work, objdir, out, progress, log, name, *args) -> None:
        self.makes += 1
        local = next(a for a in args if a.startswith("LOCALVERSION="))
        image = objdir / "arch/x86/boot/bzImage"
        image.parent.mkdir(parents=True, exist_ok=True)
        fake_bzimage(image, "6.1.0" + local.split("=", 1)[1])


def test_half_written_build_directory_is_redone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build killed after its files were copied but before meta.json
    (the marker, written last) is not used: the next build redoes it and
    the directory holds only the new build's files."""
    matrix = load_matrix(make_tree(tmp_path / "m"))
    variant = matrix.variants["base"]
    root = tmp_path / "cache"
    fake = FakeMake(monkeypatch)
    real_write = build_mod.atomic_write

    def killed(path: Path, data) -> None:
        if path.name == "meta.json":
            raise KeyboardInterrupt        # the run dies right here
        real_write(path, data)
    monkeypatch.setattr(build_mod, "atomic_write", killed)
    with pytest.raises(KeyboardInterrupt):
        Builder(matrix, root).build(variant, Progress("base"))
    [half] = (root / "builds").iterdir()
    assert (half / "bzImage").is_file() and not (half / "meta.json").exists()
    (half / "leftover").write_text("from the killed run")
    monkeypatch.setattr(build_mod, "atomic_write", real_write)
    builder = Builder(matrix, root)
    assert builder.up_to_date(variant) is None, "never used half-written"
    build = builder.build(variant, Progress("base"))
    assert fake.makes == 2 and Path(build.directory) == half
    assert sorted(p.name for p in half.iterdir()) == [
        "build.log", "bzImage", "config", "meta.json"]
    assert builder.up_to_date(variant) == build
    # Its marker damaged (or the image gone), the build is redone again.
    (half / "meta.json").write_text('{"variant": "ba')
    assert builder.up_to_date(variant) is None
    assert builder.build(variant, Progress("base")) == build
    assert fake.makes == 3
    (half / "bzImage").unlink()
    assert builder.up_to_date(variant) is None
    # A state file cut short is no state at all.
    builder.build(variant, Progress("base"))
    builder.state_file("base").write_text('{"input": "')
    assert builder.up_to_date(variant) is None


def test_a_workloads_fragments_make_a_kernel_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """base, and base with a workload's `net` fragment: each keeps its
    own build state and log, so cells of both in one run build each
    once and each build's log survives the other's."""
    from dataclasses import replace
    matrix = load_matrix(make_tree(tmp_path / "m"))
    (tmp_path / "m" / "kernels" / "net.config").write_text("CONFIG_NET=y\n")
    matrix.fragments["net"] = tmp_path / "m" / "kernels" / "net.config"
    base = matrix.variants["base"]
    net = replace(base, fragments=base.fragments + ("net",))
    fake = FakeMake(monkeypatch)
    builder = Builder(matrix, tmp_path / "cache")
    assert matrix.kernel_name(base) == "base"
    assert matrix.kernel_name(net) == "base+net"
    builder.build(base, Progress("base"))
    builder.build(net, Progress("base"))
    assert fake.makes == 2
    assert builder.up_to_date(base) and builder.up_to_date(net)
    logs = tmp_path / "cache" / "logs"
    assert sorted(p.name for p in logs.iterdir()) == [
        "build-base+net.log", "build-base.log"]
    builder.build(base, Progress("base"))
    builder.build(net, Progress("base"))
    assert fake.makes == 2
    # The fragment is one of the build's inputs.
    assert input_digest(matrix, net, "v", "gcc") != \
        input_digest(matrix, base, "v", "gcc")


def test_second_lab_process_waits_with_message(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; "
            "from lab.cache import locked\n"
            "with locked(Path(sys.argv[1])):\n"
            "    print('got it', flush=True)\n")
    with locked(tmp_path):
        waiter = subprocess.Popen([sys.executable, "-c", code,
                                   str(tmp_path)], cwd=ROOT, text=True,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        line = waiter.stderr.readline()
        assert line.startswith(f"waiting for the cache lock {tmp_path}/lock "
                               f"held by pid {os.getpid()} since ")
        assert waiter.poll() is None, "it waits while the lock is held"
    out, _ = waiter.communicate(timeout=30)
    assert waiter.returncode == 0 and out == "got it\n"
    assert (tmp_path / "lock").read_text().startswith(
        f"pid {waiter.pid} since ")
