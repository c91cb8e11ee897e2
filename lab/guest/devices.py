"""Device models: nbdkit with the devmodel filter (lab/devmodel/) serving
the swap image to QEMU over a unix socket, one nbdkit per cell.

matrix.yaml keys (per backend; docs/devices.md explains the model):

  rotational:  model: disk | none        (default none: no model)
               seek_short_ms (0.8), seek_full_ms (8), seek_knee (0.3),
               rpm (the backend's rotation_rate, 7200),
               transfer_mb_s (150), stroke (size; default the image size)
  nvme:        model: ssd | none         (default none)
               read_us (80), write_us (20), bandwidth_mb_s (2000),
               parallel (8)
  both:        dilation: auto | off | FACTOR   (default off)
               read_error_rate, write_error_rate (0), error_seed (1):
               sticky media faults, see docs/devices.md

With `model: none` (or no `model`) the backend is what it was: a plain
file (plus the throttle filter on rotational).

    with devices.running(backend, guest, image_dir, factor) as source:
        setup = backends.prepare(backend, guest, image_dir, source)
        ... boot QEMU ...

`running` yields None when the backend has no model. nbdkit runs in the
foreground (-f) as our child with --exit-with-parent, so it cannot
outlive the lab; leaving the block stops it (SIGTERM, then SIGKILL),
reaps it and removes its socket directory.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from lab import procs
from lab.errors import LabError
from lab.guest import backends, initramfs
from lab.paths import REPO
from lab.spec.model import FAULT_RATES, MODELS, Backend, Guest

DEVMODEL_DIR = REPO / "lab" / "devmodel"
FILTER = DEVMODEL_DIR / "build" / "devmodel.so"
# the guest's device probe and dilation loops, built beside the agent
PROBE = initramfs.AGENT_DIR / "build" / "swaplab-probe"
DILATE = initramfs.AGENT_DIR / "build" / "swaplab-dilate"
NBDKIT = "nbdkit"
MIB = 1 << 20

# model -> (filter key -> (matrix key, type, default)); the defaults
# live in the filter too, they are repeated here for describe()
Keys = dict[str, type[float] | type[int]]
DISK_KEYS: Keys = {"seek_short_ms": float, "seek_full_ms": float,
                   "seek_knee": float, "rpm": float, "transfer_mb_s": float}
SSD_KEYS: Keys = {"read_us": float, "write_us": float,
                  "bandwidth_mb_s": float, "parallel": int}
DEFAULTS: dict[str, dict[str, float | int]] = {
    "disk": {"seek_short_ms": 0.8, "seek_full_ms": 8.0, "seek_knee": 0.3,
             "rpm": 7200.0, "transfer_mb_s": 150.0},
    "ssd": {"read_us": 80.0, "write_us": 20.0, "bandwidth_mb_s": 2000.0,
            "parallel": 8}}
FAULT_KEYS: Keys = dict.fromkeys(FAULT_RATES, float) | {"error_seed": int}
# what the filter logs for each fault it injects (nbdkit_error)
INJECTED_RE = re.compile(rb"devmodel: injected EIO into (pread|pwrite)")

def build_programs() -> None:
    """The filter, the probe and the dilation loops (make, a no-op when
    they are up to date)."""
    initramfs.make_in(DEVMODEL_DIR, "lab/devmodel", FILTER)
    initramfs.make_in(initramfs.AGENT_DIR,
                      "the device probe and the dilation loops", PROBE,
                      DILATE)


def model_of(backend: Backend) -> str:
    """'disk', 'ssd' or 'none' for this backend."""
    model = str(backend.params.get("model", "none"))
    allowed = MODELS.get(backend.kind, ("none",))
    if model not in allowed:
        raise LabError(f"backend {backend.name}: model {model!r} is not "
                       f"one of {', '.join(allowed)} for kind "
                       f"{backend.kind}")
    return model


def dilation_setting(backend: Backend) -> str | float:
    """'auto', 'off' or a factor (> 0)."""
    raw = str(backend.params.get("dilation", "off")).strip().lower()
    if raw in ("auto", "off"):
        return raw
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise LabError(f"backend {backend.name}: dilation must be auto, "
                       f"off or a positive factor, not {raw!r}")
    return value


def model_params(backend: Backend) -> dict[str, float | int]:
    """The filter's parameters for this backend (defaults filled in)."""
    model = model_of(backend)
    if model == "none":
        return {}
    keys = dict(DISK_KEYS if model == "disk" else SSD_KEYS, **FAULT_KEYS)
    out: dict[str, float | int] = dict(DEFAULTS[model])
    if model == "disk" and "rotation_rate" in backend.params \
            and "rpm" not in backend.params:
        out["rpm"] = float(backend.params["rotation_rate"])
    for key, typ in keys.items():
        if key in backend.params:
            try:
                out[key] = typ(backend.params[key])
            except (TypeError, ValueError):
                raise LabError(f"backend {backend.name}: {key} must be a "
                               f"number, got {backend.params[key]!r}")
            if out[key] < 0:
                raise LabError(f"backend {backend.name}: {key} < 0")
    if model == "disk" and "stroke" in backend.params:
        out["stroke_bytes"] = int(backend.params["stroke"]) * MIB
    if model == "ssd" and not 1 <= int(out["parallel"]) <= 256:
        raise LabError(f"backend {backend.name}: parallel must be 1..256")
    return out


def nominal(params: dict[str, Any], model: str) -> dict[str, float]:
    """The model's headline figures (undilated): average random 4 KiB
    access (disk: seek over a uniformly random distance + half a turn),
    sequential rate, per-request latency."""
    if model == "disk":
        s, f, k = (params["seek_short_ms"], params["seek_full_ms"],
                   params["seek_knee"])
        tk = (s * (1 - k) + 2 * k * f) / (1 + k)
        # E[seek] for |U1-U2|, density 2(1-x), by a fine midpoint sum
        n, acc = 4000, 0.0
        for i in range(n):
            x = (i + 0.5) / n
            t = s + (tk - s) * (x / k) ** 0.5 if x < k else \
                tk + (f - tk) * (x - k) / (1 - k)
            acc += t * 2 * (1 - x) / n
        rot = 30000.0 / params["rpm"] if params["rpm"] else 0.0
        xfer = 4096 / (params["transfer_mb_s"] * 1e3)
        return {"avg_seek_ms": round(acc, 3), "rot_latency_ms": round(rot, 3),
                "random_4k_ms": round(acc + rot + xfer, 3),
                "seq_mb_s": params["transfer_mb_s"]}
    if model == "ssd":
        return {"read_4k_us": params["read_us"] + 4096 / params[
                    "bandwidth_mb_s"],
                "write_4k_us": params["write_us"] + 4096 / params[
                    "bandwidth_mb_s"],
                "bandwidth_mb_s": params["bandwidth_mb_s"],
                "parallel": params["parallel"]}
    return {}


@dataclass
class ModelSource:
    """A sparse image served by nbdkit through the devmodel filter; a
    BlockSource (lab.guest.backends). prepare() starts nbdkit, close() stops it.
    """
    path: Path
    size_mib: int
    model: str                                   # disk | ssd | none
    params: dict[str, float | int] = field(default_factory=dict)
    scale: float = 1.0
    dilation: dict[str, Any] = field(default_factory=dict)
    log: Path | None = None                      # nbdkit's stderr
    proc: subprocess.Popen | None = None
    sockdir: Path | None = None

    @property
    def socket(self) -> Path:
        if self.sockdir is None:
            raise LabError("nbdkit is not running")
        return self.sockdir / "nbd.sock"

    @property
    def pidfile(self) -> Path:
        """Written by nbdkit once it accepts connections (the socket file
        appears earlier, at bind(), when a connect is still refused)."""
        return self.socket.with_name("nbdkit.pid")

    def command(self) -> list[str]:
        argv = [NBDKIT, "-f", "--exit-with-parent", "-U", str(self.socket),
                "-P", str(self.pidfile), "--filter", str(FILTER)]
        if self.log is not None:
            # the setup in detail, but not a line per request (megabytes
            # a minute); injected faults are logged as errors anyway
            argv += ["-v", "-D", "nbdkit.backend.datapath=0"]
        argv += ["file", f"file={self.path}", f"model={self.model}",
                 f"scale={self.scale:.6g}"]
        argv += [f"{k}={v}" for k, v in self.params.items()]
        return argv

    def prepare(self) -> None:
        self.close()
        if not FILTER.is_file():
            build_programs()
        if shutil.which(NBDKIT) is None:
            raise LabError("nbdkit not found: install the Debian package "
                           "nbdkit")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        with open(self.path, "wb") as f:
            f.truncate(self.size_mib * MIB)
        self.sockdir = Path(tempfile.mkdtemp(prefix="swaplab-nbd-"))
        err = open(self.log, "wb") if self.log else None
        try:
            self.proc = proc = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL,
                stdout=err or subprocess.DEVNULL,
                stderr=err or subprocess.DEVNULL)
        finally:
            if err:
                err.close()
        deadline = time.monotonic() + 10
        while not self.pidfile.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                rc = proc.poll()
                self.close()
                raise LabError(f"nbdkit did not start (exit {rc}); "
                               f"command: {' '.join(self.command())}")
            time.sleep(0.01)

    def blockdev(self) -> dict[str, Any]:
        return {"driver": "raw",
                "file": {"driver": "nbd",
                         "server": {"type": "unix",
                                    "path": str(self.socket)}}}

    def describe(self) -> dict[str, Any]:
        return {"type": "nbdkit-devmodel", "path": str(self.path),
                "size_mib": self.size_mib, "model": self.model,
                "params": dict(self.params), "scale": self.scale,
                "nominal": nominal(self.params, self.model),
                "dilation": dict(self.dilation)}

    def close(self) -> None:
        """Stop nbdkit (reaped) and remove the socket directory."""
        proc, self.proc = self.proc, None
        if proc is not None:
            procs.stop(proc, 5)
        if self.sockdir is not None:
            shutil.rmtree(self.sockdir, ignore_errors=True)
            self.sockdir = None

    def __enter__(self) -> "ModelSource":
        self.prepare()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def injected_faults(log: Path | None) -> dict[str, int] | None:
    """Faults the model injected, from nbdkit's log: failed requests by
    kind (the guest's driver retries, so one lost page may count
    several); None when there is no log."""
    if log is None or not log.is_file():
        return None
    counts = {"pread": 0, "pwrite": 0}
    with open(log, "rb") as f:
        for line in f:
            m = INJECTED_RE.search(line)
            if m:
                counts[m.group(1).decode()] += 1
    return {"read_errors": counts["pread"], "write_errors": counts["pwrite"]}


def scale_for(backend: Backend, factor: float | None) -> tuple[float,
                                                               dict]:
    """The delay scale and what to record: `factor` is the measured
    dilation (lab.calibrate.dilation) and is needed only for `dilation: auto`."""
    setting = dilation_setting(backend)
    if setting == "off":
        return 1.0, {"setting": "off", "factor": factor, "scale": 1.0}
    if setting == "auto":
        if factor is None or not factor > 0:
            raise LabError(f"backend {backend.name}: dilation auto needs "
                           "a measured factor (lab.calibrate.dilation)")
        return float(factor), {"setting": "auto", "factor": factor,
                               "scale": float(factor)}
    return float(setting), {"setting": "fixed", "factor": factor,
                            "scale": float(setting)}


def source_for(backend: Backend, guest: Guest, image_dir: Path,
               factor: float | None = None,
               log: Path | None = None) -> ModelSource | None:
    """The model source for this backend, not started; None: no model."""
    model = model_of(backend)
    if model == "none":
        return None
    scale, record = scale_for(backend, factor)
    return ModelSource(image_dir / "swap.img",
                       backends.disk_mib(backend, guest), model,
                       model_params(backend), scale, record, log)


@contextmanager
def running(backend: Backend, guest: Guest, image_dir: Path,
            factor: float | None = None,
            log: Path | None = None) -> Iterator[ModelSource | None]:
    """The backend's model source (not yet started: backends.prepare()
    starts it through BlockSource.prepare()), stopped on leaving."""
    src = source_for(backend, guest, image_dir, factor, log)
    try:
        yield src
    finally:
        if src is not None:
            src.close()


def injects_faults(backend: Backend) -> bool:
    return any(float(backend.params.get(k, 0) or 0) > 0
               for k in FAULT_RATES)


def needs_factor(backend: Backend) -> bool:
    return model_of(backend) != "none" and \
        dilation_setting(backend) == "auto"


def stray_nbdkit() -> list[int]:
    """PIDs of nbdkit processes serving a swaplab socket (for tests)."""
    return procs.pids_matching(b"nbdkit\0", b"swaplab-nbd-")
