"""What one boot needs (CellSpec), made from the matrix for a cell, and
what it produced (CellResult)."""
from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from lab import elf
from lab.errors import LabError
from lab.kernel.artifact import Build
from lab.paths import REPO
from lab.spec.model import Backend, CellPlan, Guest, ParseRule

WORKLOADS_BUILD = REPO / "workloads" / "build"
# What the guest agent mounts over the initramfs (mounts() in
# workloads/agent/agent.c): files unpacked there are hidden once it runs.
GUEST_MOUNTS = ("/proc", "/sys", "/dev", "/tmp", "/run")
HIDDEN_PREFIX = "/opt/swaplab-host"
BOOT_ALLOWANCE_S = 60       # host timeout = workload timeout + this


@dataclass
class CellSpec:
    """Everything one boot needs."""
    cell_id: str
    build: Build
    backend: Backend
    guest: Guest
    argv: list[str]                         # the workload, in the guest
    out_dir: Path                           # console log, result.json
    timeout_s: int = 600                    # the workload's
    sysfs: dict[str, str] = field(default_factory=dict)
    sysctl: dict[str, str] = field(default_factory=dict)
    cmdline: str = ""                       # variant's kernel cmdline
    trace: bool = False                     # do_swap_page durations
    output: str = "json"                    # how its stdout is read
    parse: tuple[ParseRule, ...] = ()       # for output "text"
    interactive: bool = False               # workload on the console
    test: str = ""                          # agent test switch
    extra_files: dict[str, bytes] = field(default_factory=dict)
    workloads_dir: Path | None = WORKLOADS_BUILD
    extra_programs: list[Path] = field(default_factory=list)
    expect_suffix: str | None = None        # default: -VARIANT-KEY
    boot_allowance_s: int = BOOT_ALLOWANCE_S
    labels: dict[str, Any] = field(default_factory=dict)   # into result
    keep_images: bool = False               # keep the disk image after
    # The device model's time dilation (lab.calibrate.dilation), measured
    # before the boot; required when the backend asks for `auto`.
    dilation: dict[str, Any] | None = None

    @property
    def identity(self) -> str:
        if self.expect_suffix is not None:
            return self.expect_suffix
        return f"-{self.build.variant}-{self.build.key}"


@dataclass
class CellResult:
    cell_id: str
    outcome: str                 # ok | failed
    reason: str | None
    detail: str
    result: dict[str, Any]
    out_dir: Path

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def console_log(self) -> Path:
        return self.out_dir / "console.log"


# ------------------------------------------------------------ from matrix

def cell_spec(plan: CellPlan, build: Build, out_dir: Path) -> CellSpec:
    """A planned cell as a CellSpec (the variant's timeout_scale stretches
    the boot allowance for a slow debug kernel, as it does the
    workload's timeout)."""
    workload, cell = plan.workload, plan.cell
    return CellSpec(
        cell_id=cell.id, build=build, backend=plan.backend,
        guest=plan.guest,
        argv=[guest_path(Path(workload.path)) if workload.path else
              workload.program, *workload.args],
        out_dir=out_dir, timeout_s=plan.timeout_s,
        boot_allowance_s=math.ceil(BOOT_ALLOWANCE_S *
                                   plan.variant.timeout_scale),
        sysfs=plan.sysfs, sysctl=plan.sysctl,
        cmdline=plan.variant.cmdline, trace=workload.trace,
        output=workload.output, parse=workload.parse,
        extra_files={f: data for path in (workload.path, *workload.needs)
                     for f, data in brought_files(path).items()},
        labels={"variant": cell.variant, "backend": cell.backend,
                "workload": cell.workload, "repeat": cell.repeat})


def guest_path(host: Path) -> str:
    """Where a brought file goes in the guest: its path on this host,
    unless the agent mounts a file system over that directory, where it
    would be hidden (a program built under /tmp, say): then under
    HIDDEN_PREFIX, so that $ORIGIN-relative libraries still sit beside
    their program."""
    path = str(host.absolute())
    if any(path == m or path.startswith(m + "/") for m in GUEST_MOUNTS):
        return HIDDEN_PREFIX + path
    return path


def brought_files(path: str) -> dict[str, bytes]:
    """A program brought by the user, its ELF interpreter and libraries
    (the initramfs has no libraries of its own), by guest path."""
    if not path:
        return {}
    return {guest_path(p).lstrip("/"): p.read_bytes()
            for p in elf.closure(Path(path))}


def brought_by_hand(programs: Sequence[Path], command: Sequence[str]
                    ) -> tuple[dict[str, bytes], str]:
    """Programs brought to a `lab boot`: their files by guest path, and
    `command` as a shell line that finds them first on PATH, so that each
    runs by its name, as on the host."""
    files: dict[str, bytes] = {}
    dirs: dict[str, None] = {}
    for program in programs:
        try:
            files.update(brought_files(str(program)))
        except (elf.ElfError, OSError) as exc:
            raise LabError(f"--bring {program}: {exc}") from exc
        dirs[str(Path(guest_path(program)).parent)] = None
    line = shlex.join(command)
    return files, (f"PATH={':'.join(dirs)}:$PATH; {line}" if dirs else line)
