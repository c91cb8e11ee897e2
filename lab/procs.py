"""Host processes by command line, to prove the lab left none behind."""
from __future__ import annotations

import os
from pathlib import Path


def pids_matching(*needles: bytes) -> list[int]:
    """PIDs whose NUL-separated command line contains every needle."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if all(n in cmd for n in needles):
            out.append(int(pid))
    return out
