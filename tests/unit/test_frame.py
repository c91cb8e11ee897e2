"""Result frames: round trip, real agent output, and every way a frame
can be damaged in transit."""
from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path

import pytest

from lab.guest import frame, initramfs
from lab.guest.frame import FrameError

PAYLOAD = {"schema": "swaplab-agent/1", "cell": "c1",
           "kernel": {"release": "6.1.192-base-0123456789ab"},
           "text": "line one\nline \"two\"\u00e9"}


def test_round_trip():
    data = frame.encode(PAYLOAD)
    assert data.startswith(b"SWAPLAB-FRAME/1 len=")
    assert data.endswith(b"\nSWAPLAB-END\n")
    assert frame.parse(data) == PAYLOAD


def test_found_after_noise_and_first_frame_wins():
    data = b"\x00garbage\r\n" + frame.encode({"n": 1}) + frame.encode(
        {"n": 2})
    assert frame.parse(data) == {"n": 1}


def test_crc_is_zlib_crc32_over_payload():
    body = b'{"a":1}'
    header = frame.encode(body).split(b"\n", 1)[0].decode()
    assert header == f"SWAPLAB-FRAME/1 len=7 crc32={zlib.crc32(body):08x}"


@pytest.mark.parametrize("data,kind", [
    (b"", "missing"),
    (b"console noise only\n", "missing"),
])
def test_missing(data, kind):
    with pytest.raises(FrameError) as exc:
        frame.parse(data)
    assert exc.value.kind == kind


@pytest.mark.parametrize("cut", [20, 40, 60, -40, -13, -5, -1])
def test_truncated(cut):
    data = frame.encode(PAYLOAD)
    with pytest.raises(FrameError) as exc:
        frame.parse(data[:cut])
    assert exc.value.kind == "truncated", str(exc.value)
    assert "trunc" in str(exc.value) or "cut short" in str(exc.value)


def test_corrupt_checksum():
    data = bytearray(frame.encode(PAYLOAD))
    data[len(data) // 2] ^= 0x01
    with pytest.raises(FrameError) as exc:
        frame.parse(bytes(data))
    assert exc.value.kind == "checksum"
    assert "checksum mismatch" in str(exc.value)


def test_header_garbage():
    with pytest.raises(FrameError) as exc:
        frame.parse(b"SWAPLAB-FRAME/1 len=x crc32=zz\n{}\nSWAPLAB-END\n")
    assert exc.value.kind == "header"


def test_valid_checksum_but_not_json():
    with pytest.raises(FrameError) as exc:
        frame.parse(frame.encode(b"{not json"))
    assert exc.value.kind == "json"
    with pytest.raises(FrameError):
        frame.parse(frame.encode(b"[1, 2]"))


def test_wrong_end_marker():
    data = frame.encode(PAYLOAD).replace(b"SWAPLAB-END", b"SWAPLAB-XXX")
    with pytest.raises(FrameError) as exc:
        frame.parse(data)
    assert exc.value.kind == "truncated"


def _agent_frame(tmp_path: Path, conf: str) -> bytes:
    agent = initramfs.build_agent()
    (tmp_path / "cell.conf").write_text(conf)
    out = tmp_path / "frame"
    proc = subprocess.run([str(agent), str(tmp_path / "cell.conf"),
                           str(out)], capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


def test_real_agent_frame(tmp_path):
    """The C agent (host test mode) frames what Python parses: escaping of
    quotes, newlines, control and non-ASCII bytes survives."""
    conf = initramfs.render_config([
        ("cell", "unit"),
        ("arg", "/bin/sh"), ("arg", "-c"),
        ("arg", 'printf \'{"schema":"x","v":[1,2]}\'; '
                'printf \'tab\\there \\001 \\303\\251 "q" \\\\\\n\' >&2; '
                'exit 4'),
        ("timeout_s", "20")])
    data = _agent_frame(tmp_path, conf)
    payload = frame.parse(data)
    assert payload["schema"] == "swaplab-agent/1"
    assert payload["cell"] == "unit"
    assert payload["pid1"] is False
    wl = payload["workload"]
    assert wl["exit_code"] == 4 and wl["signal"] is None
    assert json.loads(wl["stdout"]) == {"schema": "x", "v": [1, 2]}
    # bytes >= 0x80 arrive as \u00XX (latin-1 view of the raw bytes)
    assert wl["stderr"] == 'tab\there \x01 \xc3\xa9 "q" \\\n'
    assert "vmstat" in payload["before"]
    assert payload["errors"] == [] and payload["status"] == "ok"


def test_real_agent_corrupt_switch(tmp_path):
    conf = initramfs.render_config([("cell", "u"), ("arg", "/bin/true"),
                                    ("test", "corrupt-frame")])
    with pytest.raises(FrameError) as exc:
        frame.parse(_agent_frame(tmp_path, conf))
    assert exc.value.kind == "checksum"


def test_real_agent_workload_timeout(tmp_path):
    conf = initramfs.render_config([("cell", "u"), ("arg", "/bin/sleep"),
                                    ("arg", "30"), ("timeout_s", "1")])
    wl = frame.parse(_agent_frame(tmp_path, conf))["workload"]
    assert wl["timed_out"] is True
    assert wl["signal"] == 9
    assert wl["wall_s"] < 10
