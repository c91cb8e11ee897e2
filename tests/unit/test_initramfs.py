"""The Python cpio writer, the cached base image and the cell config."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess

import pytest

from lab.errors import LabError
from lab.guest import initramfs
from lab.guest.initramfs import Cpio


def read_newc(data: bytes) -> list[tuple[str, int, bytes]]:
    """All entries of (possibly concatenated) newc archives, as the kernel
    reads them: (name, mode, data), trailers and zero padding skipped."""
    out, pos = [], 0
    while pos < len(data):
        if data[pos:pos + 6] != b"070701":
            if data[pos] == 0:
                pos += 1
                continue
            raise AssertionError(f"bad magic at {pos}")
        f = [int(data[pos + 6 + 8 * i:pos + 14 + 8 * i], 16)
             for i in range(13)]
        namesize, filesize, mode = f[11], f[6], f[1]
        name_at = pos + 110
        name = data[name_at:name_at + namesize - 1].decode()
        body = name_at + namesize + (-(110 + namesize) % 4)
        content = data[body:body + filesize]
        pos = body + filesize + (-filesize % 4)
        if name != "TRAILER!!!":
            out.append((name, mode, content))
    return out


def sample() -> Cpio:
    c = Cpio()
    c.dir("bin")
    c.dir("etc")
    c.file("bin/prog", b"\x7fELF" + bytes(range(256)) * 3, 0o755)
    c.file("etc/odd-size", b"abc", 0o600)
    c.file("etc/empty", b"")
    c.symlink("bin/link", "prog")
    return c


@pytest.mark.skipif(shutil.which("cpio") is None, reason="no cpio tool")
def test_cpio_lists_and_extracts_identically(tmp_path):
    c = sample()
    if os.geteuid() == 0:
        c.chardev("console", 5, 1)
    raw = c.archive()
    assert len(raw) % 512 == 0
    listing = subprocess.run(["cpio", "-t", "--quiet"], input=raw,
                             capture_output=True, check=True).stdout
    names = sorted(listing.decode().split())
    assert names == sorted(["bin", "etc", "bin/prog", "etc/odd-size",
                            "etc/empty", "bin/link"]
                           + (["console"] if os.geteuid() == 0 else []))
    dest = tmp_path / "x"
    dest.mkdir()
    subprocess.run(["cpio", "-id", "--quiet", "--no-absolute-filenames"],
                   input=raw, cwd=dest, check=True)
    assert (dest / "bin/prog").read_bytes() == \
        b"\x7fELF" + bytes(range(256)) * 3
    assert (dest / "bin/prog").stat().st_mode & 0o777 == 0o755
    assert (dest / "etc/odd-size").read_bytes() == b"abc"
    assert (dest / "etc/odd-size").stat().st_mode & 0o777 == 0o600
    assert (dest / "etc/empty").read_bytes() == b""
    assert os.readlink(dest / "bin/link") == "prog"
    if os.geteuid() == 0:
        st = (dest / "console").stat()
        assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (5, 1)
    # and our own reader agrees with cpio
    assert sorted(n for n, _, _ in read_newc(raw)) == names


def test_deterministic_and_duplicates_refused():
    assert sample().gzip() == sample().gzip()
    c = Cpio()
    c.file("a", b"1")
    with pytest.raises(LabError):
        c.file("a", b"2")


def test_render_config_order_and_lists():
    text = initramfs.render_config([("cell", "c"), ("arg", "prog"),
                                    ("arg", "--x=1"), ("arg", "a b"),
                                    ("sysfs.kernel/mm/x", "always")])
    assert text.splitlines()[1:] == ["cell=c", "arg=prog", "arg=--x=1",
                                     "arg=a b",
                                     "sysfs.kernel/mm/x=always"]


@pytest.mark.parametrize("key,value", [("arg", "two\nlines"),
                                       ("a=b", "x"), ("", "x"),
                                       ("arg", "nul\0")])
def test_render_config_refuses(key, value):
    with pytest.raises(LabError):
        initramfs.render_config([(key, value)])


def test_base_image_cached_by_content(tmp_path):
    progs = tmp_path / "progs"
    progs.mkdir()
    tool = progs / "tool"
    tool.write_bytes(b"#!/bin/sh\necho one\n")
    tool.chmod(0o755)
    (progs / "notes.txt").write_text("not executable")
    first = initramfs.base_image(tmp_path / "cache", progs)
    stamp = first.stat().st_mtime_ns
    again = initramfs.base_image(tmp_path / "cache", progs)
    assert again == first and again.stat().st_mtime_ns == stamp
    tool.write_bytes(b"#!/bin/sh\necho two\n")
    changed = initramfs.base_image(tmp_path / "cache", progs)
    assert changed != first
    entries = {n: (m, d) for n, m, d in
               read_newc(gzip.decompress(changed.read_bytes()))}
    assert entries["bin/tool"][1] == b"#!/bin/sh\necho two\n"
    assert "bin/notes.txt" not in entries
    assert entries["init"][0] & 0o777 == 0o755
    assert entries["init"][1] == initramfs.AGENT.read_bytes()
    assert entries["bin/sh"][1] == b"busybox"      # symlink target
    assert entries["dev/console"][0] & 0o170000 == 0o020000


def test_cell_image_concatenates(tmp_path):
    base = initramfs.base_image(tmp_path / "cache", None)
    conf = initramfs.render_config([("cell", "c1")])
    files = initramfs.files_image(tmp_path / "cache",
                                  {"etc/swaplab/calibration": b"42\n"})
    img = initramfs.cell_image(base, conf, tmp_path / "initrd.img", files)
    data = img.read_bytes()
    assert data.startswith(base.read_bytes())
    # gzip members concatenated: decompressing yields both archives
    entries = read_newc(gzip.decompress(data))
    names = [n for n, _, _ in entries]
    assert names.index("init") < names.index(initramfs.CONF_PATH)
    files = {n: d for n, _, d in entries}
    assert files[initramfs.CONF_PATH] == conf.encode()
    assert files["etc/swaplab/calibration"] == b"42\n"


def test_files_image_is_cached_by_content(tmp_path):
    """A brought program's files are packed once per content: the same
    files give the same archive (not rewritten), a changed byte a new
    one, and a library's directories come before it."""
    cache = tmp_path / "cache"
    libs = {"lib/x86_64-linux-gnu/libc.so.6": b"\x7fELF" + b"c" * 64,
            "opt/swaplab-host/tmp/usemem": b"\x7fELF" + b"u" * 64}
    first = initramfs.files_image(cache, libs)
    stamp = first.stat().st_mtime_ns
    again = initramfs.files_image(cache, dict(reversed(libs.items())))
    assert again == first and again.stat().st_mtime_ns == stamp
    changed = initramfs.files_image(
        cache, {**libs, "opt/swaplab-host/tmp/usemem": b"\x7fELF" + b"v"})
    assert changed != first
    entries = read_newc(gzip.decompress(first.read_bytes()))
    names = [n for n, _, _ in entries]
    assert names.index("lib/x86_64-linux-gnu") < \
        names.index("lib/x86_64-linux-gnu/libc.so.6")
    modes = {n: m for n, m, _ in entries}
    assert modes["opt/swaplab-host/tmp/usemem"] & 0o777 == 0o755
