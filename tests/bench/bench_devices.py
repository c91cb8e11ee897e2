"""The modelled swap devices as the guest sees them, against issue 6's
bands: rotational (dilation off) random 4 KiB read 4-15 ms, sequential
2 MiB read 80-250 MB/s, 8 adjacent pages under 1.5x one page; NVMe
(dilated by the factor measured here) QD1 4 KiB read within 2x of the
model, QD32 at least 4x the IOPS of QD1.

These are figures of the host as much as of the model: the emulated I/O
path (virtio-scsi or NVMe emulation, NBD, nbdkit) adds its own time per
request, more on a slower or busier host (docs/devices.md). The guest
test (tests/integration/test_devices_guest.py) checks what the host
cannot move; this prints the bands.

    /usr/bin/python3 tests/bench/bench_devices.py [--kernel BZIMAGE]

The kernel is the matrix's `base` variant (built if the cache lacks it),
as in the guest test: a debug kernel's I/O path is slower.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench_boot import kernel  # noqa: E402
from lab import devices, dilation, runner  # noqa: E402
from lab.build import Build, Builder  # noqa: E402
from lab.cache import cache_root, locked  # noqa: E402
from lab.matrix import Backend, load_matrix  # noqa: E402
from lab.progress import Progress  # noqa: E402
# the guest test's guest and device settings, so both measure the same
from tests.integration.test_devices_guest import (  # noqa: E402
    GUEST, MODEL_US as NVME_MODEL_US, NVME_PARAMS, ROT)


def probe(build: Build, expect: str | None, backend: Backend, tests: str,
          factor: float | None, tmp: Path) -> dict[str, dict]:
    argv = ["swaplab-probe", "--tests", tests, "--runtime-ms", "600"]
    if factor:
        argv += ["--dilation", f"{factor:.4f}"]
    spec = runner.CellSpec(
        cell_id=f"bench-probe-{backend.name}", build=build, backend=backend,
        guest=GUEST, argv=argv, out_dir=tmp / backend.name, timeout_s=240,
        workloads_dir=None, expect_suffix=expect)
    res = runner.run_cell(spec, tmp)
    if not res.ok:
        raise SystemExit(f"probe on {backend.name} failed: {res.reason}: "
                         f"{res.detail} (log {res.console_log})")
    return {t["name"]: t for t in res.result["workload"]["result"]["tests"]}


def band(name: str, value: float, low: float, high: float,
         unit: str) -> bool:
    ok = low <= value <= high
    print(f"  {name:34s} {value:10.2f} {unit:5s} band {low:g}-{high:g}: "
          f"{'meets' if ok else 'MISSES'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel")
    args = ap.parse_args()
    if args.kernel:
        build, expect = kernel(args.kernel)
    else:
        matrix = load_matrix(ROOT / "matrix.yaml")
        with locked(cache_root()):
            build = Builder(matrix, cache_root()).build(
                matrix.variants["base"], Progress("base"))
        expect = None
    devices.build_programs()
    met = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        t = probe(build, expect, ROT,
                  "randread-4k-qd1,randread-32k-qd1,seqread-2m-qd1", None,
                  tmp)
        one = t["randread-4k-qd1"]["lat_us"]["mean"]
        eight = t["randread-32k-qd1"]["lat_us"]["mean"]
        print(f"rotational (model {ROT.params}, dilation off):")
        met.append(band("random 4 KiB read", one / 1e3, 4, 15, "ms"))
        met.append(band("sequential 2 MiB read",
                        t["seqread-2m-qd1"]["mb_s"], 80, 250, "MB/s"))
        met.append(band("8 adjacent pages / one page", eight / one, 0, 1.5,
                        "x"))
        cal = dilation.calibrate(build, tmp, guest=GUEST, boots=3)
        factor = cal["factor"]
        nvme = Backend("nvme-model", "nvme",
                       dict(NVME_PARAMS, dilation=f"{factor:.4f}"))
        t = probe(build, expect, nvme, "randread-4k-qd1,randread-4k-qd32",
                  factor, tmp)
        qd1, qd32 = t["randread-4k-qd1"], t["randread-4k-qd32"]
        print(f"nvme (model {NVME_PARAMS}, dilation {factor:.2f} from "
              f"{cal['factors']}):")
        met.append(band("QD1 4 KiB read, undilated",
                        qd1["undilated"]["mean_us"], NVME_MODEL_US / 2,
                        NVME_MODEL_US * 2, "us"))
        met.append(band("QD32 / QD1 IOPS", qd32["iops"] / qd1["iops"], 4,
                        float("inf"), "x"))
    print(f"device bands: {sum(met)} of {len(met)} met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
