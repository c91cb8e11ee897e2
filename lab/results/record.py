"""Reading a cell result (the runner's swaplab-cell/1 document): the
pieces that the session's checks and the reports both need."""
from __future__ import annotations

from typing import Any, Mapping


KERNEL_COMPLAINTS = ("warn", "bug", "oops", "panic", "kasan", "lockdep",
                     "gpf", "lockup")
# A cell during which other work took more than this share of the host's
# CPU (lab.guest.hostload) is set aside like a failed one: under TCG the
# guest ran slower by an unknown amount. On a quiet host the share is
# about 1 % (the sandbox's own daemons).
MAX_FOREIGN_SHARE = 0.10


def workload_doc(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The workload's own JSON document in a cell result ({} if none)."""
    return (result.get("workload") or {}).get("result") or {}


def host_busy(result: Mapping[str, Any]) -> str | None:
    """Why a cell's measurement is set aside for a busy host, or None
    (also for results from before the load was recorded)."""
    load = (result.get("timing") or {}).get("host_load") or {}
    share = load.get("foreign_share")
    if isinstance(share, (int, float)) and share > MAX_FOREIGN_SHARE:
        return (f"host-busy: other work took {share:.0%} of the host's "
                f"CPU (over {MAX_FOREIGN_SHARE:.0%})")
    return None


def complaints(result: Mapping[str, Any]) -> dict[str, int]:
    """Kernel complaints in the guest log: count by kind, those seen."""
    flags = result.get("kernel_log_flags") or {}
    counts = {name: (flags.get(name) or {}).get("count") or 0
              for name in KERNEL_COMPLAINTS}
    return {name: n for name, n in counts.items() if n}
