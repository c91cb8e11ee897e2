"""The device model (lab/devmodel, nbdkit filter) on the host, no guest:
nbdkit serves a file through the filter and a tiny NBD client times
requests. Delays are made large (milliseconds) so that the host's own
overhead (a few hundred microseconds on a busy machine) stays small.
"""
from __future__ import annotations

import os
import socket
import struct
import time
from pathlib import Path

import pytest

from lab.errors import LabError
from lab.guest import devices
from lab.spec.model import Backend, Guest

pytestmark = pytest.mark.skipif(
    not os.path.exists("/usr/bin/nbdkit"), reason="nbdkit not installed")

MIB = 1 << 20
REQ_MAGIC, REPLY_MAGIC = 0x25609513, 0x67446698
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH = 0, 1, 2, 3


class Nbd:
    """Minimal NBD client: fixed newstyle, NBD_OPT_EXPORT_NAME, simple
    replies, several requests in flight."""

    def __init__(self, path: Path) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(str(path))
        head = self._recv(18)
        assert head[:16] == b"NBDMAGICIHAVEOPT", head
        flags = struct.unpack(">H", head[16:])[0]
        cflags = 1 | (2 if flags & 2 else 0)
        self.s.sendall(struct.pack(">I", cflags))
        self.s.sendall(b"IHAVEOPT" + struct.pack(">II", 1, 0))
        self.size, self.tflags = struct.unpack(">QH", self._recv(10))
        if not cflags & 2:
            self._recv(124)
        self.handle = 0

    def _recv(self, n: int) -> bytes:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.s.recv_into(view[got:], n - got)
            if not k:
                raise EOFError("NBD server closed the connection")
            got += k
        return bytes(buf)

    def send(self, cmd: int, offset: int, length: int,
             data: bytes = b"") -> int:
        self.handle += 1
        self.s.sendall(struct.pack(">IHHQQI", REQ_MAGIC, 0, cmd,
                                   self.handle, offset, length) + data)
        return self.handle

    def reply(self, lengths: dict[int, int]) -> tuple[int, bytes]:
        handle, err, data = self.reply_status(lengths)
        assert err == 0, err
        return handle, data

    def reply_status(self, lengths: dict[int, int]) -> tuple[int, int,
                                                             bytes]:
        """(handle, NBD error, data); a failed read carries no data."""
        magic, err, handle = struct.unpack(">IIQ", self._recv(16))
        assert magic == REPLY_MAGIC, magic
        return handle, err, b"" if err else self._recv(
            lengths.get(handle, 0))

    def status(self, cmd: int, offset: int, length: int,
               data: bytes = b"") -> int:
        """The NBD error of one request (0: it succeeded)."""
        h = self.send(cmd, offset, length, data)
        got, err, _ = self.reply_status({h: length if cmd == CMD_READ
                                         else 0})
        assert got == h
        return err

    def read(self, offset: int, length: int) -> bytes:
        h = self.send(CMD_READ, offset, length)
        got, data = self.reply({h: length})
        assert got == h
        return data

    def write(self, offset: int, data: bytes) -> None:
        h = self.send(CMD_WRITE, offset, len(data), data)
        assert self.reply({})[0] == h

    def flush(self) -> None:
        h = self.send(CMD_FLUSH, 0, 0)
        assert self.reply({})[0] == h

    def close(self) -> None:
        self.send(CMD_DISC, 0, 0)
        self.s.close()


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    devices.build_programs()


def serve(tmp_path: Path, backend: Backend, size_mib: int = 64,
          factor: float | None = None) -> devices.ModelSource:
    guest = Guest(memory_mib=256, vcpus=1, swap_mib=size_mib,
                  firmware="seabios", cmdline="")
    src = devices.source_for(backend, guest, tmp_path, factor)
    assert src is not None
    src.prepare()
    return src


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - t0) * 1e3


# disk: s=2 ms, F=20 ms, knee 0.25, 6000 rpm (5 ms half turn), 50 MB/s
DISK = Backend("rot", "rotational", {
    "model": "disk", "seek_short_ms": 2, "seek_full_ms": 20,
    "seek_knee": 0.25, "rpm": 6000, "transfer_mb_s": 50})


def disk_ms(dist_frac: float, nbytes: int, p=DISK.params) -> float:
    s, f, k = p["seek_short_ms"], p["seek_full_ms"], p["seek_knee"]
    tk = (s * (1 - k) + 2 * k * f) / (1 + k)
    if dist_frac == 0:
        seek = rot = 0.0
    else:
        seek = s + (tk - s) * (dist_frac / k) ** 0.5 if dist_frac < k \
            else tk + (f - tk) * (dist_frac - k) / (1 - k)
        rot = 30000 / p["rpm"]
    return seek + rot + nbytes / (p["transfer_mb_s"] * 1e3)


def best_of(n: int, fn) -> float:
    return min(fn() for _ in range(n))


def test_disk_latency_follows_formula(tmp_path):
    src = serve(tmp_path, DISK, 64)
    try:
        c = Nbd(src.socket)
        size = c.size
        assert size == 64 * MIB

        def jump(frm: int, to: int, n: int = 4096) -> float:
            c.read(frm, 4096)           # head now at frm + 4096
            return timed(c.read, to, n)

        cases = [
            ("adjacent", lambda: jump(0, 4096), disk_ms(0, 4096)),
            ("adjacent-64k", lambda: jump(0, 4096, 65536),
             disk_ms(0, 65536)),
            ("short", lambda: jump(0, 4096 + 1 * MIB),
             disk_ms(MIB / size, 4096)),
            ("knee", lambda: jump(0, 4096 + size // 4),
             disk_ms(0.25, 4096)),
            ("half", lambda: jump(0, 4096 + size // 2),
             disk_ms(0.5, 4096)),
            ("full", lambda: jump(0, size - 4096),
             disk_ms((size - 8192) / size, 4096)),
            ("backwards", lambda: jump(size // 2, 0),
             disk_ms((size // 2 + 4096) / size, 4096)),
        ]
        for name, fn, want in cases:
            got = best_of(3, fn)
            assert want * 0.97 - 0.05 <= got <= want + 3.0, \
                f"{name}: {got:.3f} ms, model {want:.3f} ms"
        # eight adjacent 4 KiB pages in one request cost little more
        one = best_of(3, lambda: jump(0, 4096 + size // 3, 4096))
        eight = best_of(3, lambda: jump(0, 4096 + size // 3, 32768))
        assert eight < 1.5 * one
        c.close()
    finally:
        src.close()


def test_disk_one_request_at_a_time(tmp_path):
    src = serve(tmp_path, DISK, 64)
    try:
        c = Nbd(src.socket)
        c.read(0, 4096)
        # six reads of the same block: each finds the head just past it
        # (4 KiB away), whatever order the server threads take them in
        n = 6
        t0 = time.perf_counter()
        hs = {c.send(CMD_READ, 0, 4096): 4096 for _ in range(n)}
        for _ in range(n):
            c.reply(hs)
        got = (time.perf_counter() - t0) * 1e3
        want = n * disk_ms(4096 / c.size, 4096)
        assert want * 0.97 <= got <= want * 1.1 + 5
        c.close()
    finally:
        src.close()


SSD = Backend("ssd", "nvme", {"model": "ssd", "read_us": 10000,
                              "write_us": 4000, "bandwidth_mb_s": 1000,
                              "parallel": 4})


def test_ssd_latency_and_parallelism(tmp_path):
    src = serve(tmp_path, SSD, 64)
    try:
        c = Nbd(src.socket)
        # The model's delays are lower bounds, whatever the host's load.
        # The upper bounds only tell the model's behaviour from another
        # (a write that waits like a read, channels that serialize): a
        # busy host adds its own time, so the figures themselves are
        # tests/bench/bench_devices.py's to print.
        one = best_of(3, lambda: timed(c.read, 12345 * 4096, 4096))
        assert 10.0 <= one < 10.0 + 20
        w = best_of(3, lambda: timed(c.write, 4096, b"x" * 4096))
        assert 4.0 <= w < 10.0
        # 12 reads at once on 4 channels: 3 rounds of 10 ms, not 12
        t0 = time.perf_counter()
        hs = {c.send(CMD_READ, i * MIB, 4096): 4096 for i in range(12)}
        for _ in range(12):
            c.reply(hs)
        got = (time.perf_counter() - t0) * 1e3
        assert 30.0 <= got < 90.0, got      # serial: 120 ms
        c.close()
    finally:
        src.close()


def test_ssd_bandwidth_limit(tmp_path):
    be = Backend("ssd", "nvme", dict(SSD.params, bandwidth_mb_s=100))
    src = serve(tmp_path, be, 64)
    try:
        c = Nbd(src.socket)

        def read_16_mib() -> float:
            t0 = time.perf_counter()
            hs = {c.send(CMD_READ, i * 4 * MIB, 4 * MIB): 4 * MIB
                  for i in range(4)}
            for _ in range(4):
                c.reply(hs)
            return (time.perf_counter() - t0) * 1e3

        # 16 MiB at 100 MB/s: 168 ms even on 4 channels. Moving 16 MiB
        # through this client costs 25-90 ms of its own on a busy host,
        # and more while a kernel builds (334 ms seen once): the best of
        # three keeps the cap, and no try may beat the model.
        got = best_of(3, read_16_mib)
        # the cap is the lower bound; the upper one allows a busy host
        assert 16 * MIB / 1e5 + 10 <= got < 16 * MIB / 1e5 + 10 + 400
        c.close()
    finally:
        src.close()


def test_scale_multiplies_delays(tmp_path):
    be = Backend("ssd", "nvme", {"model": "ssd", "read_us": 2000,
                                 "dilation": "auto"})
    src = serve(tmp_path, be, 64, factor=3.0)
    try:
        assert src.scale == 3.0 and src.describe()["dilation"]["factor"] \
            == 3.0
        c = Nbd(src.socket)
        got = best_of(3, lambda: timed(c.read, 0, 4096))
        assert 6.0 <= got < 2 * 6.0      # x3, neither x1 nor applied twice
        c.close()
    finally:
        src.close()


@pytest.mark.parametrize("backend", [DISK, SSD], ids=["disk", "ssd"])
def test_data_unchanged(tmp_path, backend):
    fast = Backend(backend.name, backend.kind,
                   dict(backend.params, dilation="0.01"))
    src = serve(tmp_path, fast, 16)
    rnd = __import__("random").Random(7)
    written: dict[int, bytes] = {}
    try:
        c = Nbd(src.socket)
        for i in range(200):
            off = rnd.randrange(0, 16 * MIB // 512 - 64) * 512
            data = rnd.randbytes(rnd.choice((512, 4096, 65536)))
            c.write(off, data)
            written[off] = data
        c.flush()
        shadow = bytearray(16 * MIB)
        for off, data in written.items():   # dict keeps write order
            shadow[off:off + len(data)] = data
        assert c.read(0, 8 * MIB) + c.read(8 * MIB, 8 * MIB) == shadow
        c.close()
    finally:
        src.close()
    assert src.path.read_bytes() == bytes(shadow)


def test_stop_leaves_nothing(tmp_path):
    src = serve(tmp_path, SSD, 8)
    pid, sock = src.proc.pid, src.socket
    assert sock.exists() and pid in devices.stray_nbdkit()
    src.close()
    assert not sock.exists() and not sock.parent.exists()
    assert not Path(f"/proc/{pid}").exists()      # reaped, not a zombie
    assert src.proc is None


def test_params_from_matrix():
    be = Backend("r", "rotational", {"model": "disk", "rotation_rate": 5400,
                                     "seek_full_ms": "12"})
    p = devices.model_params(be)
    assert p["rpm"] == 5400 and p["seek_full_ms"] == 12.0
    nom = devices.nominal(devices.model_params(
        Backend("r", "rotational", {"model": "disk"})), "disk")
    assert 7.0 <= nom["random_4k_ms"] <= 9.5        # ~8 ms, 7200 rpm
    with pytest.raises(LabError):
        devices.model_params(Backend("n", "nvme", {"model": "disk"}))
    with pytest.raises(LabError):
        devices.dilation_setting(Backend("n", "nvme", {"dilation": "x"}))
    assert devices.source_for(Backend("n", "nvme", {}), Guest(
        memory_mib=1, vcpus=1, swap_mib=1, firmware="seabios",
        cmdline=""), Path("/nonexistent")) is None
    with pytest.raises(LabError):
        devices.scale_for(Backend("n", "nvme", {"model": "ssd",
                                                "dilation": "auto"}), None)


def test_ready_as_soon_as_prepared(tmp_path: Path) -> None:
    """prepare() returns once nbdkit accepts connections (its pid file),
    not when the socket file appears (at bind(), before listen(): QEMU
    connecting then was refused now and then, a boot failure)."""
    backend = Backend("n", "nvme", {"model": "ssd"})
    for _ in range(30):
        src = serve(tmp_path, backend, size_mib=16)
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(src.socket))
        finally:
            src.close()


EIO = 5
FAST_SSD = {"model": "ssd", "read_us": 0, "write_us": 0}


def faulty(tmp_path: Path, **rates: float) -> devices.ModelSource:
    """A fast SSD model with the given fault rates, logging to
    tmp_path/nbdkit.log, started."""
    be = Backend("bad", "nvme", dict(FAST_SSD, **rates))
    guest = Guest(memory_mib=256, vcpus=1, swap_mib=8, firmware="seabios",
                  cmdline="")
    src = devices.source_for(be, guest, tmp_path,
                             log=tmp_path / "nbdkit.log")
    assert src is not None
    src.prepare()
    return src


def test_written_blocks_go_bad_until_rewritten(tmp_path):
    """read_error_rate 1: every write leaves its blocks unreadable (a
    latent sector error) until it is written again; never-written blocks
    and the swap header (block 0) read fine."""
    src = faulty(tmp_path, read_error_rate=1)
    try:
        c = Nbd(src.socket)
        c.write(0, b"h" * 4096)
        assert c.read(0, 4096) == b"h" * 4096
        assert c.status(CMD_READ, 5 * 4096, 4096) == 0
        c.write(4 * 4096, b"x" * 8192)               # blocks 4 and 5
        assert c.status(CMD_READ, 5 * 4096, 4096) == EIO
        assert c.status(CMD_READ, 3 * 4096, 8192) == EIO   # touches 4
        assert c.status(CMD_READ, 6 * 4096, 4096) == 0
        c.close()
    finally:
        src.close()
    assert devices.injected_faults(src.log) == {"read_errors": 2,
                                                "write_errors": 0}


def test_bad_blocks_refuse_writes_and_keep_old_data(tmp_path):
    """write_error_rate 1: every write but the header's fails and stores
    nothing; reads are unaffected."""
    src = faulty(tmp_path, write_error_rate=1)
    try:
        c = Nbd(src.socket)
        c.write(0, b"h" * 4096)
        assert c.status(CMD_WRITE, 4096, 4096, b"y" * 4096) == EIO
        assert c.read(4096, 4096) == bytes(4096)
        assert c.read(0, 4096) == b"h" * 4096
        c.close()
    finally:
        src.close()
    assert devices.injected_faults(src.log) == {"read_errors": 0,
                                                "write_errors": 1}


def test_fault_rates_validated():
    with pytest.raises(LabError, match="read_error_rate"):
        devices.model_params(Backend("n", "nvme", {"model": "ssd",
                                                   "read_error_rate": -1}))
    assert devices.injects_faults(Backend("n", "nvme", {
        "model": "ssd", "write_error_rate": 0.001}))
    assert not devices.injects_faults(Backend("n", "nvme", {"model": "ssd"}))


def test_faults_are_drawn_per_block_and_by_seed(tmp_path):
    """A quarter of the blocks of one 1 MiB write go bad, not all or none
    of them (a draw per request would favour large writes); the seed, not
    the arrival order, decides which."""
    def bad_blocks(seed: int, where: Path) -> set[int]:
        where.mkdir()
        src = faulty(where, read_error_rate=0.25, error_seed=seed)
        try:
            c = Nbd(src.socket)
            c.write(MIB, bytes(MIB))                  # blocks 256..511
            bad = {b for b in range(256, 512)
                   if c.status(CMD_READ, b * 4096, 4096) == EIO}
            c.close()
        finally:
            src.close()
        return bad

    one = bad_blocks(1, tmp_path / "a")
    assert 32 <= len(one) <= 96, len(one)            # 64 expected
    assert bad_blocks(1, tmp_path / "b") == one
    assert bad_blocks(2, tmp_path / "c") != one
