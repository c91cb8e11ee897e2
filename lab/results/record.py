"""Reading a cell result (the runner's swaplab-cell/1 document): the
pieces that the session's checks and the reports both need."""
from __future__ import annotations

from typing import Any, Mapping


KERNEL_COMPLAINTS = ("warn", "bug", "oops", "panic", "kasan", "lockdep",
                     "gpf", "lockup")


def workload_doc(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The workload's own JSON document in a cell result ({} if none)."""
    return (result.get("workload") or {}).get("result") or {}


def complaints(result: Mapping[str, Any]) -> dict[str, int]:
    """Kernel complaints in the guest log: count by kind, those seen."""
    flags = result.get("kernel_log_flags") or {}
    counts = {name: (flags.get(name) or {}).get("count") or 0
              for name in KERNEL_COMPLAINTS}
    return {name: n for name, n in counts.items() if n}
