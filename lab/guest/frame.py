"""The guest's result frame: one checksummed JSON document.

    SWAPLAB-FRAME/1 len=N crc32=XXXXXXXX\\n
    <N bytes of JSON>
    \\nSWAPLAB-END\\n

The CRC-32 is zlib's, over the N payload bytes. The agent writes exactly
one frame to the virtio-serial port; `parse` finds it in whatever the host
received and says precisely what is wrong when it cannot be trusted.
"""
from __future__ import annotations

import json
import re
import zlib
from typing import Any

MAGIC = b"SWAPLAB-FRAME/1 "
END = b"\nSWAPLAB-END\n"
HEADER_RE = re.compile(rb"SWAPLAB-FRAME/1 len=(\d+) crc32=([0-9a-f]{8})\n")
MAX_LEN = 256 << 20


class FrameError(Exception):
    """A missing, truncated or corrupt frame; `kind` names which."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind     # missing | header | truncated | checksum | json
        super().__init__(message)


def encode(payload: bytes | str | dict[str, Any]) -> bytes:
    """A frame around `payload` (a dict is serialised as JSON)."""
    if isinstance(payload, dict):
        payload = json.dumps(payload, sort_keys=True)
    if isinstance(payload, str):
        payload = payload.encode()
    crc = zlib.crc32(payload) & 0xFFFFFFFF
    return (b"SWAPLAB-FRAME/1 len=%d crc32=%08x\n" % (len(payload), crc)
            + payload + END)


def parse(data: bytes) -> dict[str, Any]:
    """The JSON object of the first frame in `data`; FrameError if none."""
    start = data.find(MAGIC)
    if start < 0:
        if not data:
            raise FrameError("missing", "no result frame: the channel "
                             "received nothing")
        raise FrameError("missing", f"no result frame in {len(data)} bytes "
                         "received on the channel")
    header = HEADER_RE.match(data, start)
    if header is None:
        line = data[start:start + 80].split(b"\n", 1)[0]
        if b"\n" not in data[start:start + 80]:
            raise FrameError("truncated", "frame header cut short: "
                             f"{line!r}")
        raise FrameError("header", f"malformed frame header: {line!r}")
    length = int(header.group(1))
    want = int(header.group(2), 16)
    if length > MAX_LEN:
        raise FrameError("header", f"frame claims {length} bytes, more "
                         f"than the {MAX_LEN} allowed")
    body = header.end()
    payload = data[body:body + length]
    if len(payload) < length:
        raise FrameError("truncated", f"frame truncated: header says "
                         f"{length} payload bytes, got {len(payload)}")
    tail = data[body + length:body + length + len(END)]
    got = zlib.crc32(payload) & 0xFFFFFFFF
    if got != want:
        raise FrameError("checksum", f"frame checksum mismatch: header "
                         f"crc32={want:08x}, payload crc32={got:08x} "
                         f"({length} bytes)")
    if tail != END:
        if len(tail) < len(END) and END.startswith(tail):
            raise FrameError("truncated", "frame end marker cut short")
        raise FrameError("truncated", f"no end marker after the payload "
                         f"(found {tail!r})")
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise FrameError("json", f"frame payload is not valid JSON: {exc}")
    if not isinstance(obj, dict):
        raise FrameError("json", "frame payload is not a JSON object")
    return obj
